// translate_task.cpp: the translation task (headlab/train/translate_task.hpp): steps and
// evaluation, on the data of translate_data.cpp.
//
// One step:  batch = batches[order_e[s mod n]]   (epoch e = s / n, order_e a seeded shuffle)
//            logits = model(source, target[:, :-1], padding masks)      (B, T-1, V_tgt)
//            loss = cross_entropy(logits, target[:, 1:], ignore <pad>, smoothing)
// The batch of step s depends only on (seed, s), and the dropout generator is
// saved with the checkpoint, so a resumed run repeats the uninterrupted one.
// Every eval_every steps (clock paused): validation loss (mean token NLL, no
// smoothing) and greedy BLEU; the best weights by --select (valid_loss, or bleu: highest BLEU,
// then lowest loss) go to best.safetensors.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "headlab/core/file_writer.hpp"
#include "headlab/core/machine.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/data/batching.hpp"
#include "headlab/data/bleu.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/train/translate_task.hpp"
#include "training_loop.hpp"
#include "translate_data.hpp"

namespace headlab {

namespace {

// Fisher-Yates shuffle of 0..n-1 from a generator seeded by (seed, epoch).
std::vector<std::size_t> epoch_order(std::uint64_t seed, std::size_t epoch, std::size_t n) {
  Generator gen(seed * 1000003ULL + 7919ULL * (epoch + 1));
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[gen.below(i)]);
  return order;
}

std::string joined(const std::vector<std::string>& tokens) {
  std::string s;
  for (std::size_t i = 0; i < tokens.size(); ++i) s += (i ? " " : "") + tokens[i];
  return s;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;  // Linux reports kilobytes
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

double translation_loss(Transformer<float>& model, const std::vector<EncodedPair>& pairs, std::size_t max_tokens) {
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  double total = 0;
  std::size_t tokens = 0;
  for (const auto& rows : token_budget_batches(pairs, max_tokens)) {
    const Batch b = make_batch(pairs, rows);
    const Tensor<float> logits = model.forward(b.source, b.target_in, Masks{b.source_padding, b.target_padding}, nullptr);
    const auto V = static_cast<std::ptrdiff_t>(logits.shape().back());
    total += cross_entropy(reshape(logits, {-1, V}), b.target_out, 0).item() * double(b.target_tokens);
    tokens += b.target_tokens;
  }
  model.train(was_training);
  return tokens ? total / double(tokens) : 0.0;
}

TranslationBleu translation_bleu(Transformer<float>& model, const Vocabulary& src_vocab, const Vocabulary& tgt_vocab,
                                 const std::vector<ParallelPair>& pairs, std::size_t count,
                                 const DecodeOptions& options) {
  std::vector<std::string> sources;
  std::vector<std::vector<std::string>> references;
  for (std::size_t i = 0; i < pairs.size() && (count == 0 || i < count); ++i) {
    sources.push_back(pairs[i].source);
    references.push_back(tokenize(pairs[i].target));
  }
  TranslationBleu r;
  r.hypotheses = translate_sentences(model, src_vocab, tgt_vocab, sources, options);
  r.score = corpus_bleu(references, r.hypotheses);
  r.chrf = corpus_chrf(references, r.hypotheses);
  return r;
}

std::vector<std::vector<std::string>> translate_sentences(Transformer<float>& model, const Vocabulary& src_vocab,
                                                          const Vocabulary& tgt_vocab,
                                                          const std::vector<std::string>& sentences,
                                                          const DecodeOptions& options, std::size_t chunk) {
  const std::size_t max_len = model.config().max_len;
  std::vector<std::vector<std::int64_t>> encoded;
  std::vector<std::size_t> order;  // the sentences to decode: those with a token
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    const std::vector<std::string> tokens = tokenize(sentences[i]);
    if (!tokens.empty()) order.push_back(i);
    if (const std::string why = cannot_fit(src_vocab, tokens, 1, max_len); !why.empty())
      throw ValueError("translate: sentence " + std::to_string(i + 1) + " has " + why);
    std::vector<std::int64_t> ids = src_vocab.encode(tokens);
    ids.push_back(Vocabulary::eos);
    if (ids.size() > max_len)
      throw ValueError("translate: sentence " + std::to_string(i + 1) + " has " + std::to_string(ids.size()) +
                       " ids with </s>; the model allows at most " + std::to_string(max_len));
    encoded.push_back(std::move(ids));
  }
  // Length-sorted chunks: little padding, outputs put back in input order. An empty sentence
  // translates to an empty one (a model given only </s> would still say something).
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return encoded[a].size() < encoded[b].size(); });
  std::vector<std::vector<std::string>> out(sentences.size());
  for (const RowRange r : row_ranges(order.size(), std::max<std::size_t>(chunk, 1))) {
    std::vector<std::vector<std::int64_t>> sources;
    for (std::size_t i = r.first; i < r.last; ++i) sources.push_back(encoded[order[i]]);
    const SourceBatch batch = make_source_batch(sources);
    const std::vector<Hypothesis> hyps =
        options.beam > 1 ? beam_search(model, batch, options) : greedy_translate(model, batch, options);
    for (std::size_t i = r.first; i < r.last; ++i) out[order[i]] = tgt_vocab.decode(hyps[i - r.first].tokens);
  }
  return out;
}

namespace {

class TranslateTask : public detail::TrainingTask {
 public:
  TranslateTask(const TrainOptions& o, Generator& init_rng, std::ostream& log)
      : o_(o),
        data_(detail::load_translation_data(o, log)),
        model_(o.model_config(data_.src_vocab.size(), data_.tgt_vocab.size()), init_rng),
        checkpoint_extras_(detail::translation_metadata(data_)) {
    detail::xavier_matrices(model_, init_rng);
    for (const auto& rows : token_budget_batches(data_.train, o.max_tokens)) batches_.push_back(make_batch(data_.train, rows));
    greedy_.beam = 1;
    greedy_.length_penalty = o.length_penalty;
    log << "translate: model d_model " << o.d_model << ", heads " << o.heads << ", ff " << o.ff_dim << ", " << o.layers
        << "+" << o.layers << " layers, " << model_.parameter_count() << " parameters; " << batches_.size()
        << " batches of <= " << o.max_tokens << " tokens per epoch; seed " << o.seed << "\n";
  }

  Module<float>& model() override { return model_; }
  std::map<std::string, std::string> checkpoint_extras() const override { return checkpoint_extras_; }
  // With subwords: bpe.{source,target}.txt and vocab.{source,target}.txt, the merges and tokens
  // (bench/translate_twin.py --tokenizer-from RUN_DIR reads them).
  std::map<std::string, std::string> starting_files() const override {
    if (!data_.src_vocab.has_subwords()) return {};
    return {{"bpe.source.txt", data_.src_vocab.subwords().to_text()},
            {"bpe.target.txt", data_.tgt_vocab.subwords().to_text()},
            {"vocab.source.txt", data_.src_vocab.to_text()},
            {"vocab.target.txt", data_.tgt_vocab.to_text()}};
  }

  // Batch number n (from 1) depends only on (seed, n): a shuffle per epoch.
  std::size_t draw_batch(std::size_t batch, Generator&) override {
    const std::size_t e = (batch - 1) / batches_.size();
    if (e != epoch_) {
      epoch_ = e;
      order_ = epoch_order(o_.seed, epoch_, batches_.size());
    }
    current_ = &batches_[order_[(batch - 1) % batches_.size()]];
    return current_->source.shape()[0];
  }

  detail::StepLoss rows_loss(std::size_t begin, std::size_t end, Generator* dropout_rng) override {
    const Batch& b = *current_;
    if (begin == 0 && end == b.source.shape()[0]) {  // the whole batch: no copies
      const Tensor<float> logits =
          model_.forward(b.source, b.target_in, Masks{b.source_padding, b.target_padding}, dropout_rng);  // (B, T-1, V)
      const auto V = static_cast<std::ptrdiff_t>(logits.shape().back());
      return {cross_entropy(reshape(logits, {-1, V}), b.target_out, 0, static_cast<float>(o_.label_smoothing)),
              b.target_tokens};
    }
    const std::size_t W = b.target_in.shape()[1];  // T - 1 labels per row
    IndexArray labels = IndexArray::from_shape({(end - begin) * W});  // target_out's rows begin .. end
    std::copy(b.target_out.data() + begin * W, b.target_out.data() + end * W, labels.data());
    std::size_t tokens = 0;
    for (const std::int64_t id : labels) tokens += id != 0;  // not pad (the loss ignores pad, id 0)
    const Tensor<float> logits =
        model_.forward(detail::batch_rows(b.source, begin, end), detail::batch_rows(b.target_in, begin, end),
                       Masks{detail::batch_rows(b.source_padding, begin, end), detail::batch_rows(b.target_padding, begin, end)},
                       dropout_rng);  // (b, T-1, V)
    const auto V = static_cast<std::ptrdiff_t>(logits.shape().back());
    return {cross_entropy(reshape(logits, {-1, V}), labels, 0, static_cast<float>(o_.label_smoothing)), tokens};
  }

  // Validation loss and greedy BLEU; the loop keeps the best weights by --select (" *" marks them).
  void evaluate(const detail::LoopState& state, TrainResult&, MetricRow& row, std::ostream& log) override {
    const double valid_loss = translation_loss(model_, data_.valid, o_.max_tokens);
    const double bleu =
        100.0 *
        translation_bleu(model_, data_.src_vocab, data_.tgt_vocab, data_.valid_text, o_.eval_sentences, greedy_).score.bleu;
    curve_.push_back(
        {{"seconds", state.train_seconds}, {"step", state.train.step}, {"valid_loss", valid_loss}, {"valid_bleu", bleu}});
    row.set("valid_loss", valid_loss).set("valid_bleu", bleu);
    const bool better = detail::improves(state.best, detail::selection_of(o_), row);
    log << "step " << std::setw(6) << state.train.step << "  loss " << std::fixed << std::setprecision(4)
        << (state.train.losses.empty() ? 0.0 : state.train.losses.back()) << "  valid loss " << valid_loss
        << "  valid BLEU " << std::setprecision(2) << bleu << (better ? " *" : "  ") << "  (" << std::setprecision(1)
        << state.train_seconds << " s training)" << std::defaultfloat << "\n";
  }

  void keep_best(const detail::LoopState&) override { best_state_ = model_.state_dict(); }

  // The best weights from here on: in memory, or (a resumed run whose best came before it) from
  // best.safetensors; with no evaluation at all (a resumed run that was already done and has no
  // best file of this headlab), the current weights, scored now.
  void finish(const detail::LoopState& state, TrainResult& result, std::ostream& log) override {
    MetricRow best_row = state.best.row;
    if (state.best.found) {
      result.valid_loss = best_row.number("valid_loss");
      result.valid_bleu = best_row.number("valid_bleu");
    }
    if (state.interrupted) return;  // stop promptly: the checkpoint is saved, no final evaluation
    if (state.best.found && best_state_.empty())
      best_state_ = saved_model_state(load_checkpoint_file(detail::run_file(o_, "best.safetensors")));
    if (!state.best.found) {
      TrainResult unused;
      evaluate(state, unused, best_row, log);
      result.valid_loss = best_row.number("valid_loss");
      result.valid_bleu = best_row.number("valid_bleu");
      result.best_step = state.train.step;
      result.best_value = best_row.number(detail::selection_of(o_).key);
      best_state_ = model_.state_dict();
    }
    model_.load_state_dict(best_state_);  // the best weights from here on
    nlohmann::json examples = test_bleu(result, log);
    const nlohmann::json showcase = translate_showcase(log);
    if (!o_.run_dir.empty()) write_summary(state, result, examples, showcase);
  }

 private:
  // Test BLEU of the best weights, greedy and beam; the hypotheses go to test.{ref,greedy,beam}.txt.
  nlohmann::json test_bleu(TrainResult& result, std::ostream& log) {
    nlohmann::json examples = nlohmann::json::array();
    if (data_.test_text.empty()) return examples;
    DecodeOptions beam = greedy_;
    beam.beam = o_.beam;
    const TranslationBleu g = translation_bleu(model_, data_.src_vocab, data_.tgt_vocab, data_.test_text, 0, greedy_);
    const TranslationBleu bs = translation_bleu(model_, data_.src_vocab, data_.tgt_vocab, data_.test_text, 0, beam);
    result.test_bleu_greedy = 100.0 * g.score.bleu;
    result.test_bleu_beam = 100.0 * bs.score.bleu;
    result.test_chrf_greedy = 100.0 * g.chrf.chrf;
    result.test_chrf_beam = 100.0 * bs.chrf.chrf;
    log << "test BLEU (best validation weights): greedy " << std::fixed << std::setprecision(2) << result.test_bleu_greedy
        << ", beam " << o_.beam << " " << result.test_bleu_beam << "; chrF greedy " << result.test_chrf_greedy
        << ", beam " << o_.beam << " " << result.test_chrf_beam << std::defaultfloat << "\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(3, data_.test_text.size()); ++i)
      examples.push_back({{"source", data_.test_text[i].source},
                          {"reference", data_.test_text[i].target},
                          {"greedy", joined(g.hypotheses[i])},
                          {"beam", joined(bs.hypotheses[i])}});
    if (!o_.run_dir.empty()) {
      std::string ref, hg, hb;
      for (std::size_t i = 0; i < data_.test_text.size(); ++i) {
        ref += joined(tokenize(data_.test_text[i].target)) + "\n";
        hg += joined(g.hypotheses[i]) + "\n";
        hb += joined(bs.hypotheses[i]) + "\n";
      }
      write_file_atomic(detail::run_file(o_, "test.ref.txt"), ref, "train");
      write_file_atomic(detail::run_file(o_, "test.greedy.txt"), hg, "train");
      write_file_atomic(detail::run_file(o_, "test.beam.txt"), hb, "train");
    }
    return examples;
  }

  // The showcase pairs, greedy and beam, into RUN_DIR/showcase.txt (source, reference, output, a
  // blank line) and the summary's "showcase" list.
  nlohmann::json translate_showcase(std::ostream& log) {
    nlohmann::json out = nlohmann::json::array();
    if (data_.showcase.empty()) return out;
    DecodeOptions beam = greedy_;
    beam.beam = o_.beam;
    std::vector<std::string> sources;
    for (const auto& p : data_.showcase) sources.push_back(p.source);
    const auto g = translate_sentences(model_, data_.src_vocab, data_.tgt_vocab, sources, greedy_);
    const auto b = translate_sentences(model_, data_.src_vocab, data_.tgt_vocab, sources, beam);
    std::string text;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      out.push_back({{"source", sources[i]},
                     {"reference", data_.showcase[i].target},
                     {"greedy", joined(g[i])},
                     {"beam", joined(b[i])}});
      text += sources[i] + "\n  reference: " + data_.showcase[i].target + "\n  beam " + std::to_string(o_.beam) +
              ":    " + joined(b[i]) + "\n  greedy:    " + joined(g[i]) + "\n\n";
    }
    if (!o_.run_dir.empty()) write_file_atomic(detail::run_file(o_, "showcase.txt"), text, "train");
    log << "showcase: " << sources.size() << " sentences of " << data_.showcase_file << " translated"
        << (o_.run_dir.empty() ? "" : " into " + detail::run_file(o_, "showcase.txt")) << "\n";
    return out;
  }

  void write_summary(const detail::LoopState& state, TrainResult& result, const nlohmann::json& examples,
                     const nlohmann::json& showcase) const {
    const std::vector<double>& step_seconds = state.step_seconds;
    const std::vector<double> after_warmup(
        step_seconds.begin() + std::min<std::ptrdiff_t>(20, std::ptrdiff_t(step_seconds.size())), step_seconds.end());
    double src_tokens = 0, tgt_tokens = 0;  // mean lengths of the validation pairs, for FLOPs per token
    for (const auto& e : data_.valid) {
      src_tokens += double(e.source.size());
      tgt_tokens += double(e.target.size() - 1);
    }
    const double n_valid = double(std::max<std::size_t>(data_.valid.size(), 1));
    result.seconds = state.seconds();
    nlohmann::json summary = {{"side", "headlab"},
                              {"task", "translate"},
                              {"interrupted", result.interrupted},
                              {"seconds", result.seconds},
                              {"threads", threads()},
                              {"cpu", cpu_model()},
                              {"arithmetic", run_arithmetic(state.train)},
                              {"seed", o_.seed},
                              {"tokenizer", o_.tokenizer},
                              {"vocab_source", data_.src_vocab.size()},
                              {"vocab_target", data_.tgt_vocab.size()},
                              {"flops_per_token", transformer_flops_per_token(
                                                      model_.config(), std::size_t(src_tokens / n_valid + 0.5),
                                                      std::max<std::size_t>(1, std::size_t(tgt_tokens / n_valid + 0.5)))},
                              {"steps", state.train.step},
                              {"train_seconds", state.train_seconds},
                              {"ms_per_step", 1000.0 * median(after_warmup.empty() ? step_seconds : after_warmup)},
                              {"valid_loss", result.valid_loss},
                              {"valid_bleu", result.valid_bleu},
                              {"select", o_.select},
                              {"best_step", result.best_step},
                              {"best_value", result.best_value},
                              {"test_bleu_greedy", result.test_bleu_greedy},
                              {"test_bleu_beam", result.test_bleu_beam},
                              {"test_chrf_greedy", result.test_chrf_greedy},
                              {"test_chrf_beam", result.test_chrf_beam},
                              {"peak_rss_mb", peak_rss_mb()},
                              {"parameters", model_.parameter_count()},
                              {"curve", curve_},
                              {"examples", examples},
                              {"showcase", showcase}};
    write_file_atomic(detail::run_file(o_, "summary.json"), summary.dump(2) + "\n", "train");
  }

  const TrainOptions& o_;
  const detail::TranslationData data_;
  Transformer<float> model_;
  const std::map<std::string, std::string> checkpoint_extras_;
  std::vector<Batch> batches_;
  DecodeOptions greedy_;
  std::size_t epoch_ = SIZE_MAX;
  std::vector<std::size_t> order_;
  const Batch* current_ = nullptr;  // the step's batch, from draw_batch
  nlohmann::json curve_ = nlohmann::json::array();
  Module<float>::StateDict best_state_;  // the weights of state.best (empty until keep_best)
};

}  // namespace

TrainResult train_translation(const TrainOptions& o, std::ostream& log) { return detail::train_task<TranslateTask>(o, log); }

}  // namespace headlab
