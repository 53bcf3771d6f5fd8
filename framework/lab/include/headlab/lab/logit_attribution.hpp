// headlab/lab/logit_attribution.hpp: direct logit attribution and the logit lens, on the clean rows
// of a CircuitProbe (headlab/lab/circuit_probe.hpp), read at its position p and its clean answer a.
//
// Direct logit attribution (pre-LN models). The stream the final norm reads at p is a sum of what
// each component wrote (hook_result gives each head's part; names in docs/circuits.md):
//   decoder-only     x = embed + sum_l [ sum_i head_{l,i} + b_O,l + mlp_l ]
//   encoder-decoder  x = embed + sum_l [ sum_i self_{l,i} + b_O + sum_i cross_{l,i} + b_O' + mlp_l ]
//                    (the decoder's stream; the encoder reaches it only through cross-attention)
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

#include "headlab/lab/circuit_probe.hpp"

namespace headlab {

struct LogitComponent {
  std::string name;     // "embed", "{module}.head{i}", "{module}.bias", "{layer}.mlp" (module: attention_modules())
  int layer = -1;       // -1 for the embedding
  int module = -1;      // index into attention_modules(model) for a head or an output bias, else -1
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

// ValueError for a post-LN model.
LogitAttribution direct_logit_attribution(LoadedModel& model, const CircuitProbe& probe);

struct LensLayer {
  std::string point;               // the embedding's or a layer's hook_resid_post
  double mean_rank = 0;            // the answer's rank, 1 = top, mean over rows
  double top1 = 0;                 // share of rows where the answer ranks first
  std::vector<std::int64_t> top_tokens;  // row 0's five most likely tokens, best first
};

std::vector<LensLayer> logit_lens(LoadedModel& model, const CircuitProbe& probe);

}  // namespace headlab
