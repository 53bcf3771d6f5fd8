// translate_trainer.cpp: the translation task: data, training loop, evaluation.
//
// One step:  batch = batches[order_e[s mod n]]   (epoch e = s / n, order_e a seeded shuffle)
//            logits = model(source, target[:, :-1], padding masks)      (B, T-1, V_tgt)
//            loss = cross_entropy(logits, target[:, 1:], ignore <pad>, smoothing)
//            backward; clip; lr = Noam(step); Adam step.
// The batch of step s depends only on (seed, s), and the dropout generator is
// saved with the checkpoint, so a resumed run repeats the uninterrupted one.
// Every eval_every steps (clock paused): validation loss (mean token NLL, no
// smoothing) and greedy BLEU; the best-BLEU weights go to best.safetensors.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "headlab/core/anomaly.hpp"
#include "headlab/data/batching.hpp"
#include "headlab/data/bleu.hpp"
#include "headlab/train/decoding.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/core/random.hpp"
#include "headlab/report/report.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/trainer.hpp"
#include "train_common.hpp"

namespace headlab {

namespace {

struct TranslationData {
  Vocabulary src_vocab, tgt_vocab;
  std::vector<EncodedPair> train, valid;
  std::vector<ParallelPair> valid_text, test_text;
  std::size_t skipped_long = 0;
};

bool fits(const EncodedPair& e, std::size_t max_len) { return e.source.size() <= max_len && e.target.size() <= max_len; }

TranslationData load_data(const TrainOptions& o, std::ostream& log) {
  TranslationData d;
  const std::vector<ParallelPair> train_text = read_parallel_tsv(o.train_file);
  d.valid_text = read_parallel_tsv(o.valid_file);
  if (!o.test_file.empty()) d.test_text = read_parallel_tsv(o.test_file);
  std::vector<std::vector<std::string>> src_sentences, tgt_sentences;
  for (const auto& p : train_text) {
    src_sentences.push_back(tokenize(p.source));
    tgt_sentences.push_back(tokenize(p.target));
  }
  d.src_vocab = Vocabulary::build(src_sentences, o.min_freq);
  d.tgt_vocab = Vocabulary::build(tgt_sentences, o.min_freq);
  for (const auto& p : train_text) {
    EncodedPair e = encode_pair(d.src_vocab, d.tgt_vocab, p);
    if (fits(e, o.max_len)) d.train.push_back(std::move(e));
    else ++d.skipped_long;
  }
  if (d.train.empty())
    throw ValueError("translate: no training pair of " + o.train_file + " fits --max-len " + std::to_string(o.max_len));
  for (const auto& p : d.valid_text) {
    EncodedPair e = encode_pair(d.src_vocab, d.tgt_vocab, p);
    if (!fits(e, o.max_len))
      throw ValueError("translate: " + o.valid_file + ":" + std::to_string(p.line) + ": the pair is longer than --max-len " +
                       std::to_string(o.max_len) + " (source " + std::to_string(e.source.size()) + ", target " +
                       std::to_string(e.target.size()) + " ids)");
    d.valid.push_back(std::move(e));
  }
  log << "data: " << d.train.size() << " training pairs (" << d.skipped_long << " longer than " << o.max_len
      << " ids skipped), " << d.valid.size() << " validation, " << d.test_text.size() << " test; vocabularies "
      << d.src_vocab.size() << " source / " << d.tgt_vocab.size() << " target (min frequency " << o.min_freq << ")\n";
  return d;
}

// Fisher-Yates shuffle of 0..n-1 from a generator seeded by (seed, epoch).
std::vector<std::size_t> epoch_order(std::uint64_t seed, std::size_t epoch, std::size_t n) {
  Generator gen(seed * 1000003ULL + 7919ULL * (epoch + 1));
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[gen.below(i)]);
  return order;
}

struct BleuResult {
  BleuScore score;
  std::vector<std::vector<std::string>> hypotheses;
};

BleuResult bleu_of(Transformer<float>& model, const TranslationData& d, const std::vector<ParallelPair>& pairs,
                   std::size_t count, const DecodeOptions& options) {
  std::vector<std::string> sources;
  std::vector<std::vector<std::string>> references;
  for (std::size_t i = 0; i < pairs.size() && (count == 0 || i < count); ++i) {
    sources.push_back(pairs[i].source);
    references.push_back(tokenize(pairs[i].target));
  }
  BleuResult r;
  r.hypotheses = translate_sentences(model, d.src_vocab, d.tgt_vocab, sources, options);
  r.score = corpus_bleu(references, r.hypotheses);
  return r;
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

EncodedPair encode_pair(const Vocabulary& sv, const Vocabulary& tv, const ParallelPair& p) {
  EncodedPair e;
  e.source = sv.encode(tokenize(p.source));
  e.source.push_back(Vocabulary::eos);
  e.target.push_back(Vocabulary::bos);
  for (std::int64_t id : tv.encode(tokenize(p.target))) e.target.push_back(id);
  e.target.push_back(Vocabulary::eos);
  return e;
}

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

std::vector<std::vector<std::string>> translate_sentences(Transformer<float>& model, const Vocabulary& src_vocab,
                                                          const Vocabulary& tgt_vocab,
                                                          const std::vector<std::string>& sentences,
                                                          const DecodeOptions& options, std::size_t chunk) {
  const std::size_t max_len = model.config().max_len;
  std::vector<std::vector<std::int64_t>> encoded;
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    std::vector<std::int64_t> ids = src_vocab.encode(tokenize(sentences[i]));
    ids.push_back(Vocabulary::eos);
    if (ids.size() > max_len)
      throw ValueError("translate: sentence " + std::to_string(i + 1) + " has " + std::to_string(ids.size()) +
                       " ids with </s>; the model allows at most " + std::to_string(max_len));
    encoded.push_back(std::move(ids));
  }
  // Length-sorted chunks: little padding, outputs put back in input order.
  std::vector<std::size_t> order(encoded.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return encoded[a].size() < encoded[b].size(); });
  std::vector<std::vector<std::string>> out(sentences.size());
  for (std::size_t start = 0; start < order.size(); start += std::max<std::size_t>(chunk, 1)) {
    const std::size_t end = std::min(order.size(), start + std::max<std::size_t>(chunk, 1));
    std::vector<std::vector<std::int64_t>> sources;
    for (std::size_t i = start; i < end; ++i) sources.push_back(encoded[order[i]]);
    const SourceBatch batch = make_source_batch(sources);
    const std::vector<Hypothesis> hyps =
        options.beam > 1 ? beam_search(model, batch, options) : greedy_translate(model, batch, options);
    for (std::size_t i = start; i < end; ++i) out[order[i]] = tgt_vocab.decode(hyps[i - start].tokens);
  }
  return out;
}

TrainResult train_translation(const TrainOptions& o, std::ostream& log) {
  using namespace detail;
  namespace fs = std::filesystem;
  using clock = std::chrono::steady_clock;
  o.validate();
  const AnomalyScope anomaly(o.detect_anomaly);
  const auto t0 = clock::now();
  const TranslationData data = load_data(o, log);
  Generator init_rng(o.seed), data_rng(o.seed + 1), dropout_rng(o.seed + 2);
  Transformer<float> model(o.model_config(data.src_vocab.size(), data.tgt_vocab.size()), init_rng);
  xavier_matrices(model, init_rng);
  model.train();
  Adam<float> adam(model.parameters(), paper_adam_options());
  const NoamSchedule schedule(o.d_model, o.warmup, o.lr_factor);
  const std::vector<std::vector<std::size_t>> batch_rows = token_budget_batches(data.train, o.max_tokens);
  std::vector<Batch> batches;
  for (const auto& rows : batch_rows) batches.push_back(make_batch(data.train, rows));
  const std::map<std::string, std::string> vocab_meta = {{"src_vocab", data.src_vocab.to_text()},
                                                         {"tgt_vocab", data.tgt_vocab.to_text()}};

  const std::string ckpt = o.run_dir.empty() ? "" : (fs::path(o.run_dir) / "checkpoint.safetensors").string();
  const std::string best_ckpt = o.run_dir.empty() ? "" : (fs::path(o.run_dir) / "best.safetensors").string();
  TrainState st = start_run(o, ckpt, model, adam, data_rng, dropout_rng, log);
  log << "translate: model d_model " << o.d_model << ", heads " << o.heads << ", ff " << o.ff_dim << ", " << o.layers
      << "+" << o.layers << " layers, " << model.parameter_count() << " parameters; " << batches.size()
      << " batches of <= " << o.max_tokens << " tokens per epoch; seed " << o.seed << "\n";

  std::unique_ptr<ProgressReporter> progress = make_progress(o, st.step);
  std::unique_ptr<MetricsWriter> metrics;
  if (!o.run_dir.empty()) metrics = std::make_unique<MetricsWriter>(o.run_dir);

  DecodeOptions greedy;
  greedy.beam = 1;
  greedy.length_penalty = o.length_penalty;
  TrainResult result;
  nlohmann::json curve = nlohmann::json::array();
  Module<float>::StateDict best_state;
  double train_seconds = 0;
  std::vector<double> step_seconds;
  std::size_t epoch = SIZE_MAX;
  std::vector<std::size_t> order;
  auto evaluate = [&]() {
    const double valid_loss = translation_loss(model, data.valid, o.max_tokens);
    const double bleu = 100.0 * bleu_of(model, data, data.valid_text, o.eval_sentences, greedy).score.bleu;
    curve.push_back({{"seconds", train_seconds}, {"step", st.step}, {"valid_loss", valid_loss}, {"valid_bleu", bleu}});
    // Best = highest BLEU; equal BLEU (early on, all 0) falls back to the lower validation loss.
    const bool better = best_state.empty() || bleu > result.valid_bleu ||
                        (bleu == result.valid_bleu && valid_loss < result.valid_loss);
    if (better) {
      result.valid_bleu = bleu;
      result.valid_loss = valid_loss;
      best_state = model.state_dict();
      if (!best_ckpt.empty())
        save_checkpoint(best_ckpt, o, model, nullptr, data_rng, dropout_rng, st, vocab_meta);
    }
    if (o.progress != "none")
      log << "step " << std::setw(6) << st.step << "  loss " << std::fixed << std::setprecision(4)
          << (st.losses.empty() ? 0.0 : st.losses.back()) << "  valid loss " << valid_loss << "  valid BLEU "
          << std::setprecision(2) << bleu << (better ? " *" : "  ") << "  (" << std::setprecision(1) << train_seconds
          << " s training)" << std::defaultfloat << "\n";
    return std::make_pair(valid_loss, bleu);
  };

  const auto budget_left = [&] { return o.time_budget <= 0 || train_seconds < o.time_budget; };
  while (st.step < o.steps && budget_left()) {
    const auto step_start = clock::now();
    const std::size_t e = st.step / batches.size();
    if (e != epoch) {
      epoch = e;
      order = epoch_order(o.seed, epoch, batches.size());
    }
    const Batch& b = batches[order[st.step % batches.size()]];
    adam.zero_grad();
    const Tensor<float> logits =
        model.forward(b.source, b.target_in, Masks{b.source_padding, b.target_padding}, &dropout_rng);  // (B, T-1, V)
    const auto V = static_cast<std::ptrdiff_t>(logits.shape().back());
    const Tensor<float> loss = cross_entropy(reshape(logits, {-1, V}), b.target_out, 0, static_cast<float>(o.label_smoothing));
    const double loss_value = optimise_step(loss, adam, model.parameters(), schedule, o, st.step + 1);
    ++st.step;
    st.losses.push_back(loss_value);
    const double secs = std::chrono::duration<double>(clock::now() - step_start).count();
    train_seconds += secs;
    step_seconds.push_back(secs);
    const double tokens_per_s = double(b.target_tokens) / secs;
    if (progress) progress->update(static_cast<std::int64_t>(st.step), loss_value, adam.lr(), tokens_per_s);
    MetricRow row;
    row.set("step", st.step).set("loss", loss_value).set("lr", adam.lr()).set("tokens_per_s", tokens_per_s);
    result.interrupted = stop_requested();
    const bool last = st.step == o.steps || !budget_left() || result.interrupted;
    if (result.interrupted) {
      clear_stop_request();
      log << "interrupted at step " << st.step << "\n";
    } else if (st.step % o.eval_every == 0 || last) {
      const auto [valid_loss, bleu] = evaluate();
      row.set("valid_loss", valid_loss).set("valid_bleu", bleu).set("train_seconds", train_seconds);
    }
    if (metrics) metrics->write(row);
    if (!ckpt.empty() && ((o.save_every && st.step % o.save_every == 0) || last))
      save_checkpoint(ckpt, o, model, &adam, data_rng, dropout_rng, st, vocab_meta);
    if (result.interrupted) break;
  }
  if (progress) progress->finish();
  if (result.interrupted) {  // stop promptly: the checkpoint is saved, no final evaluation
    result.steps_done = st.step;
    result.losses = st.losses;
    result.train_seconds = train_seconds;
    result.seconds = std::chrono::duration<double>(clock::now() - t0).count();
    return result;
  }
  if (best_state.empty()) evaluate();  // no step ran (a resumed run that was already done)
  model.load_state_dict(best_state);   // the best-BLEU weights from here on

  nlohmann::json examples = nlohmann::json::array();
  if (!data.test_text.empty()) {
    DecodeOptions beam = greedy;
    beam.beam = o.beam;
    const BleuResult g = bleu_of(model, data, data.test_text, 0, greedy);
    const BleuResult bs = bleu_of(model, data, data.test_text, 0, beam);
    result.test_bleu_greedy = 100.0 * g.score.bleu;
    result.test_bleu_beam = 100.0 * bs.score.bleu;
    log << "test BLEU (best validation weights): greedy " << std::fixed << std::setprecision(2) << result.test_bleu_greedy
        << ", beam " << o.beam << " " << result.test_bleu_beam << std::defaultfloat << "\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(3, data.test_text.size()); ++i)
      examples.push_back({{"source", data.test_text[i].source},
                          {"reference", data.test_text[i].target},
                          {"greedy", joined(g.hypotheses[i])},
                          {"beam", joined(bs.hypotheses[i])}});
    if (!o.run_dir.empty()) {
      std::ofstream ref(fs::path(o.run_dir) / "test.ref.txt"), hg(fs::path(o.run_dir) / "test.greedy.txt"),
          hb(fs::path(o.run_dir) / "test.beam.txt");
      for (std::size_t i = 0; i < data.test_text.size(); ++i) {
        ref << joined(tokenize(data.test_text[i].target)) << "\n";
        hg << joined(g.hypotheses[i]) << "\n";
        hb << joined(bs.hypotheses[i]) << "\n";
      }
    }
  }
  result.steps_done = st.step;
  result.losses = st.losses;
  result.train_seconds = train_seconds;
  result.seconds = std::chrono::duration<double>(clock::now() - t0).count();
  if (!o.run_dir.empty()) {
    const std::vector<double> after_warmup(step_seconds.begin() + std::min<std::ptrdiff_t>(20, std::ptrdiff_t(step_seconds.size())),
                                           step_seconds.end());
    double src_tokens = 0, tgt_tokens = 0;  // mean lengths of the validation pairs, for FLOPs per token
    for (const auto& e : data.valid) {
      src_tokens += double(e.source.size());
      tgt_tokens += double(e.target.size() - 1);
    }
    const double n_valid = double(std::max<std::size_t>(data.valid.size(), 1));
    nlohmann::json summary = {{"side", "headlab"},
                              {"task", "translate"},
                              {"interrupted", result.interrupted},
                              {"seconds", result.seconds},
                              {"flops_per_token", transformer_flops_per_token(
                                                      model.config(), std::size_t(src_tokens / n_valid + 0.5),
                                                      std::max<std::size_t>(1, std::size_t(tgt_tokens / n_valid + 0.5)))},
                              {"steps", st.step},
                              {"train_seconds", train_seconds},
                              {"ms_per_step", 1000.0 * median(after_warmup.empty() ? step_seconds : after_warmup)},
                              {"valid_loss", result.valid_loss},
                              {"valid_bleu", result.valid_bleu},
                              {"test_bleu_greedy", result.test_bleu_greedy},
                              {"test_bleu_beam", result.test_bleu_beam},
                              {"peak_rss_mb", peak_rss_mb()},
                              {"parameters", model.parameter_count()},
                              {"curve", curve},
                              {"examples", examples}};
    std::ofstream(fs::path(o.run_dir) / "summary.json") << summary.dump(2) << "\n";
    std::vector<double> steps(st.losses.size());
    for (std::size_t i = 0; i < steps.size(); ++i) steps[i] = double(i + 1);
    std::ofstream(fs::path(o.run_dir) / "loss.svg") << svg_loss_curve(steps, st.losses, "translation: training loss");
  }
  return result;
}

}  // namespace headlab
