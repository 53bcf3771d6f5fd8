// headlab/lab/logit_attribution.hpp: direct logit attribution and the logit lens, on a decoder-only
// model read at one position p of every row (docs/circuits.md).
//
// Direct logit attribution (pre-LN models). The stream the final norm reads at p is a sum of what
// each component wrote:
//   x = embed + sum_l [ sum_i result_{l,i} + b_O,l + mlp_out_l ]          (hook_result per head)
// The final LayerNorm is ln(x) = gamma * (x - mean(x)) / sigma + beta, sigma = sqrt(var(x) + eps).
// With sigma frozen at its value for the whole x (as TransformerLens does), ln is linear in x, so the
// answer a's logit splits exactly:
//   logit_a = sum_c u . (c - mean(c))  +  (W_U[a] . beta + b_U[a]),     u = W_U[a] * gamma / sigma
// one term per component c and a constant. The only approximation is the frozen sigma: a component's
// term is what it adds at the model's actual scale, not what it would add alone. Post-LN models
// have a norm inside every layer and no such sum: refused.
//
// The logit lens (nostalgebraist 2020): the stream after each layer (and the embedding) read through
// the final norm (its own statistics) and the unembedding: the answer's rank among the tokens and the
// most likely tokens. The last layer's reading is the model's own prediction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headlab/models/transformer.hpp"

namespace headlab {

struct LogitComponent {
  std::string name;     // "embed", "blocks.{l}.attn.head{i}", "blocks.{l}.attn.bias", "blocks.{l}.mlp"
  int layer = -1;       // -1 for the embedding
  int head = -1;        // -1 unless a head
  std::vector<double> per_row;  // its term of the answer's logit, per row
  double mean = 0;
};

struct LogitAttribution {
  std::vector<LogitComponent> components;
  std::vector<double> constant;    // per row: W_U[a] . beta + b_U[a]
  std::vector<double> logit;       // per row: the model's logit of the answer
  double max_sum_error = 0;        // max over rows of |sum of terms + constant - logit|
};

// inputs (B, T), answers (B): the token whose logit at `position` is split.
// ValueError for a post-LN model, ShapeError for answers that do not match the rows.
LogitAttribution direct_logit_attribution(DecoderOnlyLM<float>& model, const IndexArray& inputs, std::size_t position,
                                          const std::vector<std::int64_t>& answers);

struct LensLayer {
  std::string point;               // "hook_embed" or "blocks.{l}.hook_resid_post"
  double mean_rank = 0;            // the answer's rank, 1 = top, mean over rows
  double top1 = 0;                 // share of rows where the answer ranks first
  std::vector<std::int64_t> top_tokens;  // row 0's five most likely tokens, best first
};

std::vector<LensLayer> logit_lens(DecoderOnlyLM<float>& model, const IndexArray& inputs, std::size_t position,
                                  const std::vector<std::int64_t>& answers);

}  // namespace headlab
