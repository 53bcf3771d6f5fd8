// heads.cpp: head-role scores, head importance and pruning (headlab/lab/heads.hpp).
#include "headlab/lab/heads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "headlab/data/batching.hpp"
#include "headlab/data/bleu.hpp"
#include "headlab/data/char_vocabulary.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "headlab/data/text.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/core/task_marker.hpp"

namespace headlab {

namespace {

template <typename T>
void check_weights(const Array<T>& w, const char* what) {
  if (w.dimension() != 4) {
    throw ShapeError(std::string(what) + ": weights " + shape_str(Shape(w.shape().begin(), w.shape().end())) +
                     " should be (B, h, L, S)");
  }
}

// Mean over the batch and the queries i in [first, last) that have key key_of(i) in range of
// A[b, h, i, key_of(i)], per head.
template <typename T, typename KeyOf>
std::vector<double> stripe_mean(const Array<T>& w, std::size_t first, std::size_t last, KeyOf key_of) {
  const std::size_t B = w.shape()[0], H = w.shape()[1], L = w.shape()[2], S = w.shape()[3];
  std::vector<double> out(H, 0.0);
  for (std::size_t h = 0; h < H; ++h) {
    double sum = 0;
    std::size_t n = 0;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = first; i < std::min(last, L); ++i) {
        const std::ptrdiff_t j = key_of(i);
        if (j < 0 || std::size_t(j) >= S) continue;
        sum += double(w(b, h, i, std::size_t(j)));
        ++n;
      }
    out[h] = n ? sum / double(n) : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

}  // namespace

template <typename T>
std::vector<double> attention_entropy(const Array<T>& w) {
  check_weights(w, "attention_entropy");
  const std::size_t B = w.shape()[0], H = w.shape()[1], L = w.shape()[2], S = w.shape()[3];
  std::vector<double> out(H, 0.0);
  for (std::size_t h = 0; h < H; ++h) {
    double sum = 0;
    std::size_t rows = 0;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < L; ++i) {
        double row_sum = 0, entropy = 0;  // -sum_j a ln a, with 0 ln 0 = 0
        for (std::size_t j = 0; j < S; ++j) {
          const double a = double(w(b, h, i, j));
          row_sum += a;
          if (a > 0) entropy -= a * std::log(a);
        }
        if (row_sum == 0) continue;  // a fully masked row
        sum += entropy;
        ++rows;
      }
    out[h] = rows ? sum / double(rows) : std::numeric_limits<double>::quiet_NaN();
  }
  return out;
}

template <typename T>
std::vector<double> sink_mass(const Array<T>& w) {
  check_weights(w, "sink_mass");
  return stripe_mean(w, 1, w.shape()[2], [](std::size_t) { return std::ptrdiff_t(0); });
}

double uniform_sink_mass(std::size_t L, std::size_t S, bool causal, std::size_t window, std::size_t sinks) {
  if (L < 2 || S == 0) return std::numeric_limits<double>::quiet_NaN();  // no query i >= 1, or no key
  std::vector<std::int64_t> queries(L), keys(S);
  std::iota(queries.begin(), queries.end(), 0);
  std::iota(keys.begin(), keys.end(), 0);
  const MaskArray hidden = position_mask(queries, keys, causal || window > 0, window, sinks);  // (L, S), true = hidden
  double sum = 0;
  for (std::size_t i = 1; i < L; ++i) {
    std::size_t visible = 0;
    for (std::size_t j = 0; j < S; ++j) visible += hidden(i, j) ? 0 : 1;
    if (visible && !hidden(i, 0)) sum += 1.0 / double(visible);
  }
  return sum / double(L - 1);
}

template <typename T>
std::vector<double> previous_token_score(const Array<T>& w) {
  check_weights(w, "previous_token_score");
  return stripe_mean(w, 1, w.shape()[2], [](std::size_t i) { return std::ptrdiff_t(i) - 1; });
}

template <typename T>
std::vector<double> induction_score(const Array<T>& w, std::size_t block) {
  check_weights(w, "induction_score");
  if (block < 2 || w.shape()[2] < 2 * block + 1) {
    throw ShapeError("induction_score: block " + std::to_string(block) + " needs >= 2 and 2 block + 1 <= L = " +
                     std::to_string(w.shape()[2]) + " queries");
  }
  // Query i = T + k holds r_k again; its earlier copy is at k, the token after it at k + 1 = i - (T - 1).
  return stripe_mean(w, block + 1, 2 * block + 1,
                     [block](std::size_t i) { return std::ptrdiff_t(i) - std::ptrdiff_t(block) + 1; });
}

#define HEADLAB_SCORES(T)                                                             \
  template std::vector<double> attention_entropy<T>(const Array<T>&);                 \
  template std::vector<double> sink_mass<T>(const Array<T>&);                         \
  template std::vector<double> previous_token_score<T>(const Array<T>&);              \
  template std::vector<double> induction_score<T>(const Array<T>&, std::size_t);
HEADLAB_SCORES(float)
HEADLAB_SCORES(double)
#undef HEADLAB_SCORES

// ---- Sites ---------------------------------------------------------------------------
std::vector<AttentionSite> attention_sites(Transformer<float>& model) {
  std::vector<AttentionSite> sites;
  for (std::size_t i = 0; i < model.encoder_layers(); ++i)
    sites.push_back({"encoder.layers." + std::to_string(i) + ".self_attn", "encoder self", i,
                     &model.encoder_layer(i).self_attn});
  for (std::size_t i = 0; i < model.decoder_layers(); ++i) {
    sites.push_back({"decoder.layers." + std::to_string(i) + ".self_attn", "decoder self", i,
                     &model.decoder_layer(i).self_attn});
    sites.push_back({"decoder.layers." + std::to_string(i) + ".multihead_attn", "cross", i,
                     &model.decoder_layer(i).multihead_attn});
  }
  return sites;
}

std::vector<AttentionSite> attention_sites(DecoderOnlyLM<float>& model) {
  std::vector<AttentionSite> sites;
  for (std::size_t i = 0; i < model.layers(); ++i)
    sites.push_back({"layers." + std::to_string(i) + ".self_attn", "self", i, &model.layer(i).self_attn});
  return sites;
}

std::vector<AttentionSite> attention_sites(LoadedModel& m) {
  if (m.lm) return attention_sites(*m.lm);
  if (m.model) return attention_sites(*m.model);
  throw ValueError("attention_sites: the loaded model holds no network");
}

// ---- Probe and roles --------------------------------------------------------------------
Probe repeated_tokens_probe(const LoadedModel& m, std::size_t count, std::size_t block, std::uint64_t seed) {
  std::size_t first = 2, end = m.options.vocab;  // symbols [first, end)
  std::size_t max_len = m.options.task == Task::induction || m.options.task == Task::recall ? 2 * m.options.length + 1
                        : m.options.task == Task::copy    ? m.options.length
                                                      : m.options.max_len;
  if (m.options.task == Task::translate) {
    first = 4;
    end = std::min(m.src_vocab.size(), m.tgt_vocab.size());
  }
  if (m.options.task == Task::recall) end = 2 + m.options.keys * m.options.values;  // the key-value pair tokens
  if (m.options.task == Task::lm) {  // characters or words, past the four specials; the window the model reads
    first = LmVocabulary::num_specials;
    end = m.lm->config().tgt_vocab;
    max_len = m.lm->config().max_len;
  }
  if (block == 0) block = m.options.task == Task::induction ? m.options.length : std::min<std::size_t>(16, (max_len - 1) / 2);
  if (block < 2 || 2 * block + 1 > max_len) {
    throw ValueError("repeated_tokens_probe: block " + std::to_string(block) + " gives sequences of " +
                     std::to_string(2 * block + 1) + " ids; the model takes at most " + std::to_string(max_len) +
                     " and the block needs >= 2");
  }
  if (end < first + 2) throw ValueError("repeated_tokens_probe: the vocabulary has fewer than 2 ordinary symbols");
  if (count == 0) throw ValueError("repeated_tokens_probe: count must be > 0");
  Generator gen(seed);
  Probe p;
  p.block = block;
  p.sequences = IndexArray::from_shape({count, 2 * block + 1});
  for (std::size_t b = 0; b < count; ++b) {
    p.sequences(b, 0) = Vocabulary::bos;
    for (std::size_t t = 1; t <= block; ++t) {
      p.sequences(b, t) = std::int64_t(first + gen.below(end - first));
      p.sequences(b, t + block) = p.sequences(b, t);
    }
  }
  return p;
}

namespace {
// One forward of the model with taps on every site (eval mode, no graph).
void forward_with_taps(LoadedModel& m, std::vector<AttentionSite>& sites, const IndexArray& source,
                       const IndexArray& target) {
  NoGradGuard no_grad;
  for (auto& s : sites) s.module->set_taps(true);
  if (m.lm) {
    m.lm->eval();
    (void)m.lm->forward(target, nullptr);
  } else {
    m.model->eval();
    (void)m.model->forward(source, target, Masks{}, nullptr);
  }
  for (auto& s : sites) s.module->set_taps(false);
}
}  // namespace

std::vector<HeadRoles> head_roles(LoadedModel& m, const Probe& probe) {
  std::vector<AttentionSite> sites = attention_sites(m);
  forward_with_taps(m, sites, probe.sequences, probe.sequences);
  std::vector<HeadRoles> rows;
  for (auto& s : sites) {
    const AttentionOutput<float>& taps = s.module->last_taps();
    const Array<float>& w = taps.weights.value();  // (B, h, L, S)
    const std::vector<double> entropy = attention_entropy(w), sink = sink_mass(w), prev = previous_token_score(w),
                              induction = induction_score(w, probe.block);
    const double max_abs = double(xt::amax(xt::abs(taps.output.value()))());
    const AttentionConfig& c = s.module->config();
    const bool causal = s.kind == "decoder self" || s.kind == "self";
    const double uniform = uniform_sink_mass(w.shape()[2], w.shape()[3], causal, c.window, c.sinks);
    for (std::size_t h = 0; h < s.heads(); ++h) {
      HeadRoles r;
      r.site = s.name;
      r.kind = s.kind;
      r.layer = s.layer;
      r.head = h;
      r.entropy = entropy[h];
      r.sink_mass = sink[h];
      r.sink_uniform = uniform;
      r.previous_token = prev[h];
      r.induction = induction[h];
      r.gate_mean = std::numeric_limits<double>::quiet_NaN();
      if (taps.gate.defined()) r.gate_mean = double(xt::mean(xt::view(taps.gate.value(), xt::all(), h))());
      r.max_abs_output = max_abs;
      rows.push_back(r);
    }
  }
  return rows;
}

std::vector<Array<float>> attention_maps(LoadedModel& m, const IndexArray& source, const IndexArray& target) {
  std::vector<AttentionSite> sites = attention_sites(m);
  forward_with_taps(m, sites, source, target);
  std::vector<Array<float>> maps;
  for (auto& s : sites) maps.push_back(xt::view(s.module->last_taps().weights.value(), 0));  // (h, L, S)
  return maps;
}

// ---- Masks and importance ------------------------------------------------------------------
HeadMask full_head_mask(const std::vector<AttentionSite>& sites) {
  HeadMask mask;
  for (const auto& s : sites) mask.emplace_back(s.heads(), 1.0f);
  return mask;
}

void apply_head_mask(std::vector<AttentionSite>& sites, const HeadMask& mask) {
  if (mask.size() != sites.size())
    throw ValueError("apply_head_mask: " + std::to_string(mask.size()) + " masks for " + std::to_string(sites.size()) + " sites");
  for (std::size_t s = 0; s < sites.size(); ++s) {
    Array<float> xi = xt::adapt(mask[s], {mask[s].size()});
    sites[s].module->set_head_mask(Tensor<float>(xi));  // set_head_mask checks the size
  }
}

void clear_head_mask(std::vector<AttentionSite>& sites) {
  for (auto& s : sites) s.module->set_head_mask(Tensor<float>());
}

HeadImportance head_importance(std::vector<AttentionSite>& sites, const HeadMask& mask, std::size_t batches,
                               const std::function<Tensor<float>(std::size_t)>& batch_loss) {
  if (batches == 0) throw ValueError("head_importance: no evaluation batches");
  // Michel et al. (2019): the importance of head h of a site is I_h = mean over the batches of
  // |dL/dxi_h|, at the mask `mask`, where xi_h multiplies the head's output (Y_h *= xi_h). Put
  // each site's mask on its module as a leaf that requires grad (set_head_mask), run each batch's
  // loss backward, read xi's gradient; then put the plain masks back (apply_head_mask). normalised
  // divides each site's scores by their L2 norm (a site whose scores are all 0 stays 0).
  // BEGIN TASK 6.2: head importance
  HEADLAB_TASK("6.2");
  // xi as leaves that require grad: dL/dxi_h = sum over the head's outputs of dL/dY_h * Y_h.
  std::vector<Tensor<float>> xi;
  for (std::size_t s = 0; s < sites.size(); ++s) {
    Array<float> values = xt::adapt(mask.at(s), {mask.at(s).size()});
    xi.emplace_back(values, /*requires_grad=*/true);
    sites[s].module->set_head_mask(xi.back());
  }
  HeadImportance imp;
  imp.raw.assign(sites.size(), {});
  for (std::size_t s = 0; s < sites.size(); ++s) imp.raw[s].assign(sites[s].heads(), 0.0);
  for (std::size_t b = 0; b < batches; ++b) {
    for (auto& t : xi) t.zero_grad();
    batch_loss(b).backward();
    for (std::size_t s = 0; s < sites.size(); ++s) {
      if (!xi[s].has_grad()) continue;  // a site this loss does not reach: dL/dxi = 0
      const Array<float>& g = xi[s].grad();
      for (std::size_t h = 0; h < imp.raw[s].size(); ++h) imp.raw[s][h] += std::abs(double(g(h))) / double(batches);
    }
  }
  apply_head_mask(sites, mask);  // plain (constant) masks again
  imp.normalised = imp.raw;
  for (auto& site : imp.normalised) {
    double norm = 0;
    for (double v : site) norm += v * v;
    norm = std::sqrt(norm);
    if (norm > 0)
      for (double& v : site) v /= norm;
  }
  return imp;
  // END TASK 6.2
}

// ---- The task behind pruning -----------------------------------------------------------------
HeadLabTask::HeadLabTask(LoadedModel& model, std::size_t sequences, const std::string& data_file)
    : model_(model), sites_(attention_sites(model)) {
  const TrainOptions& o = model.options;
  const std::size_t batch = 64;
  if (o.task != Task::translate) {  // copy, induction, recall: held-out sequences of the run's own seed
    if (sequences == 0) throw ValueError("HeadLabTask: sequences must be > 0");
    IndexArray all;                   // (sequences, L)
    std::vector<std::size_t> blocks;  // induction: each row's block
    IndexArray targets;               // recall: (sequences, L) answers at the queries
    if (o.task == Task::copy) {
      metric_name_ = "exact match";
      all = held_out_sequences(o, sequences);
    } else if (o.task == Task::induction) {
      metric_name_ = "repeated-half accuracy";
      InductionBatch b = held_out_induction_sequences(o, sequences);
      all = std::move(b.sequences);
      blocks = std::move(b.blocks);
    } else if (o.task == Task::recall) {
      metric_name_ = "answer accuracy";
      RecallBatch r = held_out_recall_sequences(o, sequences);
      all = std::move(r.sequences);
      targets = std::move(r.targets);
    } else {
      throw ValueError("pruning measures a copy, translate, induction or recall model; the " + task_name(o.task) +
                       " task has no pruning metric yet (headlab heads gives its head roles)");
    }
    for (const RowRange r : row_ranges(sequences, batch)) {
      batches_.push_back(rows_of(all, r));
      if (!blocks.empty()) blocks_.emplace_back(blocks.begin() + std::ptrdiff_t(r.first), blocks.begin() + std::ptrdiff_t(r.last));
      if (o.task == Task::recall) recall_targets_.push_back(rows_of(targets, r));
    }
    return;
  }
  metric_name_ = "BLEU";
  const std::string file = data_file.empty() ? o.valid_file : data_file;
  std::vector<ParallelPair> pairs = read_parallel_tsv(file);
  if (sequences && pairs.size() > sequences) pairs.resize(sequences);
  for (const auto& p : pairs) {
    EncodedPair e = encode_pair(model.src_vocab, model.tgt_vocab, p);
    if (e.source.size() > o.max_len || e.target.size() > o.max_len) {
      throw ValueError(file + ":" + std::to_string(p.line) + ": the pair is longer than the model's --max-len " +
                       std::to_string(o.max_len));
    }
    pairs_.push_back(std::move(e));
    sources_.push_back(p.source);
    references_.push_back(tokenize(p.target));
  }
  pair_batches_ = token_budget_batches(pairs_, o.max_tokens);
}

Tensor<float> HeadLabTask::batch_loss(std::size_t i) {
  const TrainOptions& o = model_.options;
  if (o.task == Task::translate) {
    const Batch b = make_batch(pairs_, pair_batches_.at(i));
    model_.model->eval();
    const Tensor<float> logits =
        model_.model->forward(b.source, b.target_in, Masks{b.source_padding, b.target_padding}, nullptr);
    const auto V = std::ptrdiff_t(logits.shape().back());
    return cross_entropy(reshape(logits, {-1, V}), b.target_out, 0);
  }
  const IndexArray& seq = batches_.at(i);
  if (o.task == Task::recall) {  // the answers at the query positions, the sequence itself the input
    model_.lm->eval();
    const Tensor<float> logits = model_.lm->forward(seq, nullptr);  // (B, 2n+1, V)
    IndexArray targets = recall_targets_.at(i);
    targets.reshape({targets.size()});
    return cross_entropy(reshape(logits, {-1, std::ptrdiff_t(logits.shape().back())}), targets);
  }
  const auto L = std::ptrdiff_t(seq.shape()[1]);
  const IndexArray inputs = xt::view(seq, xt::all(), xt::range(0, L - 1));
  IndexArray targets = xt::view(seq, xt::all(), xt::range(1, L));
  targets.reshape({targets.size()});
  Tensor<float> logits;
  if (model_.lm) {
    model_.lm->eval();
    logits = model_.lm->forward(inputs, nullptr);
  } else {
    model_.model->eval();
    logits = model_.model->forward(seq, inputs, Masks{}, nullptr);
  }
  const auto V = std::ptrdiff_t(logits.shape().back());
  return cross_entropy(reshape(logits, {-1, V}), targets, 0);
}

HeadLabTask::Score HeadLabTask::evaluate() {
  const TrainOptions& o = model_.options;
  Score score;
  if (o.task == Task::translate) {
    score.loss = translation_loss(*model_.model, pairs_, o.max_tokens);
    DecodeOptions d;
    d.beam = 1;
    const auto hyps = translate_sentences(*model_.model, model_.src_vocab, model_.tgt_vocab, sources_, d);
    score.metric = corpus_bleu(references_, hyps).bleu * 100.0;
    return score;
  }
  double loss_sum = 0, rows = 0, metric_sum = 0;
  for (std::size_t i = 0; i < batches_.size(); ++i) {
    const double n = double(batches_[i].shape()[0]);
    if (o.task == Task::induction) {
      const InductionScore s = induction_eval(*model_.lm, InductionBatch{batches_[i], blocks_[i]});
      loss_sum += s.loss * n;
      metric_sum += s.repeated_accuracy * n;
    } else if (o.task == Task::recall) {
      const RecallScore s = recall_eval(*model_.lm, recall_layout(o), RecallBatch{batches_[i], recall_targets_[i]});
      loss_sum += s.loss * n;
      metric_sum += s.answer_accuracy * n;
    } else {
      {
        NoGradGuard no_grad;
        loss_sum += batch_loss(i).item() * n;
      }
      metric_sum += copy_exact_match(*model_.model, batches_[i]) * n;
    }
    rows += n;
  }
  score.loss = loss_sum / rows;
  score.metric = metric_sum / rows;
  return score;
}

// ---- Pruning ------------------------------------------------------------------------------------
std::vector<PruneStep> prune_heads(HeadLabTask& task, bool by_importance, double step_fraction, std::uint64_t seed) {
  if (!(step_fraction > 0 && step_fraction <= 1))
    throw ValueError("prune_heads: step fraction " + std::to_string(step_fraction) + " should be in (0, 1]");
  std::vector<AttentionSite>& sites = task.sites();
  HeadMask mask = full_head_mask(sites);
  std::vector<std::pair<std::size_t, std::size_t>> alive;  // (site, head)
  for (std::size_t s = 0; s < sites.size(); ++s)
    for (std::size_t h = 0; h < sites[s].heads(); ++h) alive.emplace_back(s, h);
  const std::size_t total = alive.size();
  if (!by_importance) {  // one random order, fixed up front (Fisher-Yates)
    Generator gen(seed);
    for (std::size_t i = alive.size(); i > 1; --i) std::swap(alive[i - 1], alive[gen.below(i)]);
    std::reverse(alive.begin(), alive.end());  // pruned from the back
  }
  std::vector<PruneStep> steps;
  auto record = [&](std::vector<std::string> removed) {
    apply_head_mask(sites, mask);
    const HeadLabTask::Score sc = task.evaluate();
    PruneStep p;
    p.pruned = total - alive.size();
    p.fraction = double(p.pruned) / double(total);
    p.loss = sc.loss;
    p.metric = sc.metric;
    p.removed = std::move(removed);
    steps.push_back(std::move(p));
  };
  record({});
  while (!alive.empty()) {
    const auto k = std::size_t(std::ceil(step_fraction * double(alive.size()) - 1e-9));
    if (by_importance) {  // least important last, so that they are popped first
      const HeadImportance imp = head_importance(sites, mask, task.batches(), [&](std::size_t i) { return task.batch_loss(i); });
      std::stable_sort(alive.begin(), alive.end(), [&](const auto& a, const auto& b) {
        return imp.normalised[a.first][a.second] > imp.normalised[b.first][b.second];
      });
    }
    std::vector<std::string> removed;
    for (std::size_t i = 0; i < std::max<std::size_t>(k, 1) && !alive.empty(); ++i) {
      const auto [s, h] = alive.back();
      alive.pop_back();
      mask[s][h] = 0.0f;
      removed.push_back(sites[s].name + "#" + std::to_string(h));
    }
    record(std::move(removed));
  }
  clear_head_mask(sites);
  return steps;
}

}  // namespace headlab
