// heads.cpp: head importance and pruning (headlab/lab/heads.hpp); the role scores are in head_roles.cpp.
#include "headlab/lab/heads.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

#include "headlab/data/batching.hpp"
#include "headlab/data/bleu.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "headlab/data/text.hpp"
#include "headlab/core/task_marker.hpp"
#include "headlab/core/user_input.hpp"

namespace headlab {

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
HeadLabTask::HeadLabTask(LoadedModel& model, std::size_t sequences, const std::string& data_file, std::uint64_t draw)
    : model_(model), sites_(attention_sites(model)) {
  TrainOptions o = model.options;  // its seed moved for another draw of held-out sequences
  o.seed += draw * kHeldOutDrawStride;
  const std::size_t batch = 64;
  if (o.task == Task::translate && draw > 0)
    throw ValueError("HeadLabTask: another draw of held-out sequences is for copy, induction and recall models; a "
                     "translate model is scored on a TSV file");
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
  const std::string file = run_evaluation_file(model, data_file);
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
std::vector<PruneStep> prune_heads(HeadLabTask& task, bool by_importance, double step_fraction, std::uint64_t seed,
                                   HeadLabTask* importance_task) {
  HeadLabTask& estimate = importance_task ? *importance_task : task;
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
      const HeadImportance imp =
          head_importance(sites, mask, estimate.batches(), [&](std::size_t i) { return estimate.batch_loss(i); });
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

std::vector<SingleHeadScore> zero_each_head(HeadLabTask& task) {
  std::vector<AttentionSite>& sites = task.sites();
  std::vector<SingleHeadScore> out;
  for (std::size_t s = 0; s < sites.size(); ++s) {
    for (std::size_t h = 0; h < sites[s].heads(); ++h) {
      HeadMask mask = full_head_mask(sites);
      mask[s][h] = 0.0f;
      apply_head_mask(sites, mask);
      out.push_back({s, h, task.evaluate()});
    }
  }
  clear_head_mask(sites);
  return out;
}

}  // namespace headlab
