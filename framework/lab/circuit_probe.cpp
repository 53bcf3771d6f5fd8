// lab/circuit_probe.cpp: clean and corrupted inputs by rule (headlab/lab/circuit_probe.hpp).
#include "headlab/lab/circuit_probe.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

#include <xtensor/xview.hpp>

#include "headlab/core/random.hpp"
#include "headlab/data/text.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/lab/alignment.hpp"
#include "headlab/train/copy_task.hpp"
#include "headlab/train/translate_task.hpp"
#include "headlab/train/induction_task.hpp"
#include "headlab/train/recall_task.hpp"

namespace headlab {

namespace {

// Induction, block T (columns 0..2T-1 of <s> r_1..r_T r_1..r_T): the first half redrawn except
// column T-1, with r_{T-1} nowhere else in it and a new token at column T.
CircuitProbe induction_probe(const TrainOptions& o, const CircuitProbeOptions& p) {
  const std::size_t T = o.length, L = 2 * T;
  if (o.vocab < 5) throw ValueError("circuit probe: the induction model's vocab " + std::to_string(o.vocab) + " is below 5");
  Generator gen(p.seed);
  const InductionBatch batch = induction_batch(gen, p.count, T, o.vocab, true);
  CircuitProbe out;
  out.clean = xt::view(batch.sequences, xt::all(), xt::range(0, std::ptrdiff_t(L)));
  out.corrupted = out.clean;
  out.position = L - 1;
  auto token = [&] { return 2 + static_cast<std::int64_t>(gen.below(o.vocab - 2)); };
  for (std::size_t b = 0; b < p.count; ++b) {
    const std::int64_t kept = out.clean(b, T - 1);  // r_{T-1}, the token at p
    // Clean too: r_{T-1} nowhere else in the first half (r_T included), so that one key matches.
    for (std::size_t t = 1; t <= T; ++t) {
      if (t == T - 1) continue;
      while (out.clean(b, t) == kept) out.clean(b, t) = out.corrupted(b, t) = token();
      if (t + T < L) out.clean(b, t + T) = out.corrupted(b, t + T) = out.clean(b, t);
    }
    const std::int64_t answer = out.clean(b, T);  // r_T
    for (std::size_t t = 1; t <= T; ++t) {
      if (t == T - 1) continue;
      std::int64_t x = token();
      while (x == kept || (t == T && x == answer)) x = token();
      out.corrupted(b, t) = x;
    }
    out.clean_answer.push_back(answer);
    out.corrupted_answer.push_back(out.corrupted(b, T));
  }
  out.rule = "induction, block " + std::to_string(T) + ": the first half redrawn except the earlier copy of the last token";
  return out;
}

// Recall: the value of key `slot` of the last query changed.
CircuitProbe recall_probe(const TrainOptions& o, const CircuitProbeOptions& p) {
  const RecallLayout layout = recall_layout(o);
  if (p.slot >= layout.relations) {
    throw ValueError("circuit probe: slot " + std::to_string(p.slot) + " is not below the " +
                     std::to_string(layout.relations) + " keys a recall query names");
  }
  Generator gen(p.seed);
  const std::size_t n = o.length, L = 2 * n + 1;
  const RecallBatch batch = recall_batch(gen, layout, p.count, n);
  CircuitProbe out;
  out.clean = batch.sequences;
  out.corrupted = out.clean;
  out.position = L - 1;
  const std::int64_t first_query = std::int64_t(2 + layout.keys * layout.values);
  for (std::size_t b = 0; b < p.count; ++b) {
    // The keys the last query names: its index in base K, most significant first.
    std::size_t index = std::size_t(out.clean(b, L - 1) - first_query);
    std::vector<std::size_t> named(layout.relations);
    for (std::size_t i = layout.relations; i-- > 0;) {
      named[i] = index % layout.keys;
      index /= layout.keys;
    }
    std::vector<std::size_t> answer = layout.answer_values(batch.targets(b, L - 1));
    out.clean_answer.push_back(batch.targets(b, L - 1));
    for (std::size_t i = 1; i <= n; ++i) {
      const std::size_t pair = std::size_t(out.clean(b, i) - 2);
      if (pair / layout.values != named[p.slot]) continue;
      const std::size_t value = (pair % layout.values + 1 + gen.below(layout.values - 1)) % layout.values;
      out.corrupted(b, i) = layout.pair_token(named[p.slot], value);
      answer[p.slot] = value;
    }
    out.corrupted_answer.push_back(layout.answer_token(answer));
  }
  out.rule = "recall: the value of key " + std::to_string(p.slot + 1) + " of the last query changed";
  return out;
}

// Copy: the last source token changed; the decoder reads <s> x_1 .. x_{n-2}.
CircuitProbe copy_probe(const TrainOptions& o, const CircuitProbeOptions& p) {
  const std::size_t n = o.length;
  if (n < 3 || o.vocab < 3) throw ValueError("circuit probe: the copy model's length (>= 3) or vocab (>= 3) is too small");
  Generator gen(p.seed);
  CircuitProbe out;
  out.clean_source = copy_task_batch(gen, p.count, n, o.vocab);
  out.corrupted_source = out.clean_source;
  out.clean = xt::view(out.clean_source, xt::all(), xt::range(0, std::ptrdiff_t(n - 1)));
  out.corrupted = out.clean;
  out.position = n - 2;
  for (std::size_t b = 0; b < p.count; ++b) {
    const std::int64_t answer = out.clean_source(b, n - 1);
    std::int64_t x = 1 + static_cast<std::int64_t>(gen.below(o.vocab - 1));
    while (x == answer) x = 1 + static_cast<std::int64_t>(gen.below(o.vocab - 1));
    out.corrupted_source(b, n - 1) = x;
    out.clean_answer.push_back(answer);
    out.corrupted_answer.push_back(x);
  }
  out.rule = "copy: the last source token changed";
  return out;
}

// The pieces of word w in a side's word_of_pieces: [first, first + count).
struct PieceSpan {
  std::size_t first = 0, count = 0;
};
PieceSpan pieces_of(const std::vector<std::size_t>& word_of, std::size_t w) {
  PieceSpan span{word_of.size(), 0};
  for (std::size_t k = 0; k < word_of.size(); ++k)
    if (word_of[k] == w) span.first = std::min(span.first, k), ++span.count;
  return span;
}

// One translate row, in model ids: source (pieces + </s>), the same with one word replaced, the
// decoder's input (<s> and the target pieces before the read word) and the two answers.
struct TranslateRow {
  std::vector<std::int64_t> source, replaced, decoder;
  std::int64_t clean = 0, corrupted = 0;
};

// The row of one pair, or nothing when it has no two exchangeable words (see the header).
std::optional<TranslateRow> translate_row(const LoadedModel& m, const ParallelPair& pair, const std::string& file) {
  if (pair.alignment.empty()) return std::nullopt;
  std::vector<EncodedPair> encoded;
  try {
    encoded = encode_evaluation_pairs(m.src_vocab, m.tgt_vocab, {pair}, m.options.max_len, file);
  } catch (const ValueError&) {
    return std::nullopt;  // longer than the model takes
  }
  const EncodedPair& e = encoded[0];
  const std::vector<std::string> src_words = tokenize(pair.source), tgt_words = tokenize(pair.target);
  const std::vector<std::size_t> src_of = word_of_pieces(m.src_vocab.pieces(src_words));
  const std::vector<std::size_t> tgt_of = word_of_pieces(m.tgt_vocab.pieces(tgt_words));
  // Links per word; linked[i]: a target word of source word i (its only one where src_links[i] == 1);
  // source_of[j]: a source word of target word j (its only one where tgt_links[j] == 1).
  std::vector<std::size_t> src_links(src_words.size()), tgt_links(tgt_words.size()), linked(src_words.size()),
      source_of(tgt_words.size());
  for (const auto& [i, j] : pair.alignment) {
    if (i >= src_words.size() || j >= tgt_words.size()) return std::nullopt;
    ++src_links[i];
    ++tgt_links[j];
    linked[i] = j;
    source_of[j] = i;
  }
  // A word, not punctuation (the corpus links "." to "."): a letter or digit, or a byte of a UTF-8 letter.
  auto is_word = [](const std::string& w) {
    return std::any_of(w.begin(), w.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || (ch & 0x80); });
  };
  auto single = [&](std::size_t i) {
    return src_links[i] == 1 && pieces_of(src_of, i).count == 1 && is_word(src_words[i]) && is_word(tgt_words[linked[i]]);
  };
  for (std::size_t j = tgt_words.size(); j-- > 0;) {
    if (tgt_links[j] != 1) continue;
    const std::size_t i = source_of[j];
    if (!single(i)) continue;  // i linked to j and to more target words: not a one-to-one pair
    std::optional<std::size_t> partner;
    for (std::size_t k = 0; k < src_words.size(); ++k) {
      if (k == i || !single(k) || src_words[k] == src_words[i] || tgt_words[linked[k]] == tgt_words[j]) continue;
      const auto distance = [&](std::size_t x) { return x > i ? x - i : i - x; };
      if (!partner || distance(k) < distance(*partner)) partner = k;
    }
    if (!partner) continue;
    TranslateRow row;
    row.source = e.source;
    row.replaced = e.source;
    row.replaced[pieces_of(src_of, i).first] = row.replaced[pieces_of(src_of, *partner).first];
    const std::size_t read = 1 + pieces_of(tgt_of, j).first;  // the decoder step that predicts j's first piece
    row.decoder.assign(e.target.begin(), e.target.begin() + std::ptrdiff_t(read));
    row.clean = e.target[read];
    row.corrupted = e.target[1 + pieces_of(tgt_of, linked[*partner]).first];
    if (row.clean == row.corrupted) continue;
    return row;
  }
  return std::nullopt;
}

CircuitProbe translate_probe(const LoadedModel& m, const CircuitProbeOptions& p) {
  if (p.data.empty() && m.options.valid_file.empty())
    throw ValueError("circuit probe: the run names no --valid file: give pairs with gold alignments (--data)");
  const std::string file = run_evaluation_file(m, p.data);
  std::vector<TranslateRow> rows;
  for (const ParallelPair& pair : read_parallel_tsv(file)) {
    if (rows.size() == p.count) break;
    if (std::optional<TranslateRow> row = translate_row(m, pair, file)) rows.push_back(std::move(*row));
  }
  if (rows.empty()) {
    throw ValueError("circuit probe: no pair of " + file + " has two aligned source words to exchange (a gold alignment "
                     "in its third column, one link each)");
  }
  std::size_t S = 0, L = 0;
  for (const TranslateRow& r : rows) S = std::max(S, r.source.size()), L = std::max(L, r.decoder.size());
  CircuitProbe out;
  const std::size_t B = rows.size();
  out.clean_source = IndexArray::from_shape({B, S});
  out.clean_source.fill(Vocabulary::pad);
  out.corrupted_source = out.clean_source;
  out.clean = IndexArray::from_shape({B, L});
  out.clean.fill(Vocabulary::pad);  // after each row's read position: causal, never seen there
  MaskArray padding = MaskArray::from_shape({B, S});
  padding.fill(true);
  for (std::size_t b = 0; b < B; ++b) {
    const TranslateRow& r = rows[b];
    for (std::size_t k = 0; k < r.source.size(); ++k) {
      out.clean_source(b, k) = r.source[k];
      out.corrupted_source(b, k) = r.replaced[k];
      padding(b, k) = false;
    }
    for (std::size_t k = 0; k < r.decoder.size(); ++k) out.clean(b, k) = r.decoder[k];
    out.row_positions.push_back(r.decoder.size() - 1);
    out.clean_answer.push_back(r.clean);
    out.corrupted_answer.push_back(r.corrupted);
  }
  out.corrupted = out.clean;
  out.source_padding = std::move(padding);
  out.position = out.row_positions[0];
  out.rule = "translate: a source word replaced by another of the sentence (the last target word with one link: its "
             "source word, by the nearest other), read where the decoder predicts that word; " + std::to_string(B) + " pairs of " +
             std::filesystem::path(file).filename().string();
  return out;
}

}  // namespace

CircuitProbe make_circuit_probe(const LoadedModel& model, const CircuitProbeOptions& probe) {
  if (model.options.task != Task::translate) return make_circuit_probe(model.options, probe);
  if (probe.count == 0) throw ValueError("circuit probe: the number of rows must be > 0");
  if (probe.slot != 0) throw ValueError("circuit probe: a slot (" + std::to_string(probe.slot) + ") is for recall models, this one is translate");
  return translate_probe(model, probe);
}

CircuitProbe make_circuit_probe(const TrainOptions& options, const CircuitProbeOptions& probe) {
  if (probe.count == 0) throw ValueError("circuit probe: the number of rows must be > 0");
  if (!probe.data.empty() && options.task != Task::translate) {
    throw ValueError("circuit probe: a data file is for translation models, this one is " + task_name(options.task));
  }
  if (options.task == Task::translate) {
    throw ValueError("circuit probe: the translate rule needs the model's vocabularies (make_circuit_probe(model))");
  }
  if (probe.slot != 0 && options.task != Task::recall) {
    throw ValueError("circuit probe: a slot (" + std::to_string(probe.slot) + ") is for recall models, this one is " +
                     task_name(options.task));
  }
  if (options.task == Task::induction) return induction_probe(options, probe);
  if (options.task == Task::recall) return recall_probe(options, probe);
  if (options.task == Task::copy) return copy_probe(options, probe);
  throw ValueError("circuit probe: the " + task_name(options.task) +
                   " task has no corruption rule yet (induction, recall, copy and translate have one)");
}

std::vector<double> logit_differences(const Array<float>& logits, const CircuitProbe& probe) {
  const std::size_t B = probe.clean_answer.size();
  if (logits.dimension() != 3 || logits.shape()[0] != B) {
    throw ShapeError("logit_differences: logits should be (" + std::to_string(B) + ", L, V)");
  }
  std::vector<double> out(B);
  for (std::size_t b = 0; b < B; ++b) {
    const std::size_t p = probe.position_of(b);
    if (p >= logits.shape()[1]) throw ShapeError("logit_differences: row " + std::to_string(b) + " is read past its logits");
    out[b] = double(logits(b, p, std::size_t(probe.clean_answer[b]))) -
             double(logits(b, p, std::size_t(probe.corrupted_answer[b])));
  }
  return out;
}

double mean_logit_difference(const Array<float>& logits, const CircuitProbe& probe) {
  const std::vector<double> d = logit_differences(logits, probe);
  double s = 0;
  for (double x : d) s += x;
  return s / double(d.size());
}

Array<float> probe_logits(LoadedModel& model, const CircuitProbe& probe, bool clean, HookPoints<float>* hooks) {
  NoGradGuard no_grad;
  const IndexArray& inputs = clean ? probe.clean : probe.corrupted;
  Module<float>& module = model.lm ? static_cast<Module<float>&>(*model.lm) : *model.model;
  // The model keeps no pointer to these hooks afterwards and its train/eval mode, even when the forward throws.
  struct Attached {
    LoadedModel& m;
    Module<float>& module;
    bool was_training;
    ~Attached() {
      m.lm ? m.lm->set_hooks(nullptr) : m.model->set_hooks(nullptr);
      module.train(was_training);
    }
  } attached{model, module, module.is_training()};
  model.lm ? model.lm->set_hooks(hooks) : model.model->set_hooks(hooks);
  module.eval();
  Array<float> logits;
  if (model.lm) {
    logits = model.lm->forward(inputs, nullptr).value();
  } else {
    if (probe.clean_source.size() == 0) throw ValueError("circuit probe: an encoder-decoder model needs source rows");
    Masks masks;
    masks.src_key_padding = probe.source_padding;
    logits = model.model->forward(clean ? probe.clean_source : probe.corrupted_source, inputs, masks, nullptr).value();
  }
  return logits;
}

std::vector<std::string> attention_modules(const LoadedModel& model) {
  std::vector<std::string> out;
  if (model.lm) {
    for (std::size_t l = 0; l < model.lm->layers(); ++l) out.push_back("blocks." + std::to_string(l) + ".attn");
    return out;
  }
  for (std::size_t l = 0; l < model.model->encoder_layers(); ++l) out.push_back("encoder." + std::to_string(l) + ".attn");
  for (std::size_t l = 0; l < model.model->decoder_layers(); ++l) {
    out.push_back("decoder." + std::to_string(l) + ".attn");
    out.push_back("decoder." + std::to_string(l) + ".cross_attn");
  }
  return out;
}

std::vector<std::string> stream_points(const LoadedModel& model) {
  std::vector<std::string> out;
  if (model.lm) {
    for (std::size_t l = 0; l < model.lm->layers(); ++l) out.push_back("blocks." + std::to_string(l) + ".hook_resid_pre");
  } else {
    for (std::size_t l = 0; l < model.model->encoder_layers(); ++l)
      out.push_back("encoder." + std::to_string(l) + ".hook_resid_pre");
    for (std::size_t l = 0; l < model.model->decoder_layers(); ++l)
      out.push_back("decoder." + std::to_string(l) + ".hook_resid_pre");
  }
  out.push_back(final_stream_point(model));
  return out;
}

std::string final_stream_point(const LoadedModel& model) {
  return model.lm ? "blocks." + std::to_string(model.lm->layers() - 1) + ".hook_resid_post"
                  : "decoder." + std::to_string(model.model->decoder_layers() - 1) + ".hook_resid_post";
}

}  // namespace headlab
