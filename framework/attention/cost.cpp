// attention/cost.cpp: parameters, forward FLOPs and KV-cache size of one attention layer.
//
// Standard MHA (h_kv = h, d = D / h): parameters 4 D^2 + 4 D; forward FLOPs
// for T tokens of self-attention 8 T D^2 + 4 T^2 D (multiply and add count 2);
// cache 2 h_kv d scalars per token. The general formulas below reduce to these.
#include "headlab/attention/attention.hpp"

namespace headlab {

AttentionCost attention_cost(const AttentionConfig& c, std::size_t T) {
  c.validate();
  const double D = double(c.d_model), h = double(c.num_heads), hkv = double(c.kv_heads()), d = double(c.dim_head());
  const double t = double(T);
  const std::size_t b = c.bias ? 1 : 0;
  AttentionCost cost;
  std::size_t params = 0;
  // params += out * in + bias: a ValueError, not a wrapped count, past 2^64 - 1 (d_model near 2^31).
  auto add_params = [&](std::size_t out, std::size_t in, std::size_t bias) {
    std::size_t product = 0;
    if (__builtin_mul_overflow(out, in, &product) || __builtin_add_overflow(params, product, &params) ||
        __builtin_add_overflow(params, bias, &params))
      throw ValueError("an attention of " + c.describe() + " has more parameters than a 64-bit count holds");
  };
  double flops = 0;
  double score_dim = d;  // q . k length per head
  const std::size_t Dz = c.d_model, hz = c.num_heads, hkvz = c.kv_heads(), dz = c.dim_head();
  if (!c.is_latent()) {
    const std::size_t rows = (hz + 2 * hkvz) * dz;
    add_params(rows, Dz, b * rows);
    flops += 2 * t * D * double(rows);
    cost.kv_elements_per_token = 2 * hkvz * dz;
  } else {
    const std::size_t dc = c.latent_dim, dr = c.rope ? c.rope_dim : 0;
    auto lin = [&](std::size_t out, std::size_t in) {
      add_params(out, in, b * out);
      flops += 2 * t * double(out) * double(in);
    };
    lin(hz * dz, Dz);   // q_proj
    lin(dc, Dz);        // kv_down_proj
    lin(hz * dz, dc);   // k_up_proj
    lin(hz * dz, dc);   // v_up_proj
    if (c.rope) {
      lin(hz * dr, Dz);  // q_rope_proj
      lin(dr, Dz);       // k_rope_proj
    }
    score_dim = d + double(dr);
    cost.kv_elements_per_token = dc + dr;
  }
  if (c.gate != GateKind::none) {
    const std::size_t gates = c.gate == GateKind::headwise ? hz : hz * dz;
    add_params(gates, Dz, c.gate_bias ? gates : 0);
    flops += 2 * t * D * double(gates);
  }
  add_params(Dz, hz * dz, b * Dz);  // out_proj
  flops += 2 * t * h * d * D;
  // Scores q k^T and the weighted sum of values, over all T x T pairs (no mask savings counted).
  flops += 2 * t * t * h * score_dim + 2 * t * t * h * d;
  (void)hkv;
  cost.parameters = params;
  cost.forward_flops = flops;
  return cost;
}

}  // namespace headlab
