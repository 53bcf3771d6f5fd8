// headlab/lab/recall_keys.hpp: where each head of a recall model looks among the keys a query
// names (docs/studies/recall-averaging.md; the task: headlab/train/recall_task.hpp).
//
// A recall sequence is <s> (k_1 v_1) .. (k_n v_n) q_1 .. q_n; the query at position q names r keys
// (a, b, ... in its order), held by the pairs at positions pos(a), pos(b), ... in 1..n. For one
// head with weights A (B, h, L, S) and each query q of each sequence:
//   p_j   = A[q, pos(key j)]                    its weight on the j-th named key
//   mass_j = mean over queries of p_j            (j = 0 is key a, 1 key b, ...)
//   named  = mean over queries of sum_j p_j      (all its weight on the named keys)
//   focus  = mean over queries of max_j p_j      (its weight on whichever named key it prefers)
//   share  = p_a / (p_a + p_b) per query (r >= 2; queries with p_a + p_b = 0 skipped), as a
//            histogram of equal bins over [0, 1]: one head that averages the two keys puts its
//            queries near 0.5, a head that reads one key near 0 or 1.
// A head "reads key a" when mass_a >= 0.8 (key b likewise): heads that split the keys between them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "headlab/core/tensor.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/train/recall_task.hpp"

namespace headlab {

struct RecallKeyMass {
  std::string site;        // "layers.0.self_attn"
  std::size_t layer = 0, head = 0;
  std::vector<double> mass;                  // (r): mass_j
  double named = 0, focus = 0;
  std::vector<std::size_t> share_histogram;  // (bins): queries per bin of p_a / (p_a + p_b); empty when r = 1
  std::size_t queries = 0;                   // the queries averaged over
};

// The scores of every head of one pattern. weights (B, h, L, S) of a causal self-attention over
// `batch.sequences` (B, 2n+1); ShapeError naming the shapes when they do not match, ValueError when a
// query's key is not among the sequence's pairs (not a recall sequence of `layout`).
template <typename T>
std::vector<RecallKeyMass> recall_key_mass(const Array<T>& weights, const RecallBatch& batch,
                                           const RecallLayout& layout, std::size_t bins = 10);

// Every attention module of a recall checkpoint on `batch` (eval mode, no graph), in site order.
// ValueError unless the model is a recall model.
std::vector<RecallKeyMass> recall_key_mass(LoadedModel& model, const RecallBatch& batch, std::size_t bins = 10);

}  // namespace headlab
