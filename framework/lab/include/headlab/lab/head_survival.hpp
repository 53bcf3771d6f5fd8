// headlab/lab/head_survival.hpp: what a pruning curve says about single heads.
//
// A pruning order (prune_heads) is a list of steps s = 0..n, step 0 the full model, step s with
// steps[s].pruned heads masked. With a tolerance t on the metric (1 BLEU point, 1% accuracy):
//   steps_within(steps, t) = the length of the unbroken run of steps from step 0 whose metric is
//                            >= steps[0].metric - t   (always >= 1: step 0 is within);
//   heads_prunable         = steps[steps_within - 1].pruned: the heads that go before the metric
//                            first falls by more than t.
// A head "survives" an order when it is still unmasked at the last step within the tolerance.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "headlab/lab/heads.hpp"

namespace headlab {

std::size_t steps_within(const std::vector<PruneStep>& steps, double tolerance);
std::size_t heads_prunable(const std::vector<PruneStep>& steps, double tolerance);

// One head of the model under one order: when it went, whether it survives, and what it does.
struct HeadFate {
  std::string site;              // AttentionSite::name
  std::size_t head = 0;
  std::size_t removal_rank = 0;  // 1 = the first head the order removed, ..., all heads = the last
  std::size_t removed_at = 0;    // heads pruned once its step is done (PruneStep::pruned of that step)
  bool survives = false;
  double importance = 0;         // normalised importance at the full model (HeadImportance::normalised)
  HeadRoles roles;               // its scores on the repeated-tokens probe (head_roles)
};
// One fate per head, in site order and heads within (the order of `roles` and of `importance`).
// `order` must remove every head exactly once, each named "site#head"; a ValueError otherwise.
std::vector<HeadFate> head_fates(const std::vector<AttentionSite>& sites, const std::vector<PruneStep>& order,
                                 double tolerance, const HeadImportance& importance, const std::vector<HeadRoles>& roles);

}  // namespace headlab
