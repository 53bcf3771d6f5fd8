// module_steps.hpp (internal): the intermediate values of MultiHeadAttention's forward, and its
// fused self-attention projection, shared by the files that define its steps (attention/module.cpp,
// module_latent.cpp, module_hooks.cpp, module_in_place.cpp).
#pragma once

#include "headlab/attention/attention.hpp"
#include "headlab/ops/ops.hpp"

namespace headlab {

// q, k, v split into heads: q (B, h, L, d_qk), k (B, h_kv, S, d_qk), v (B, h_kv, S, d),
// where d_qk = d, or d + d_R for MLA with rope (h_kv = h for MLA).
template <typename T>
struct MultiHeadAttention<T>::Heads {
  Tensor<T> q, k, v;
};

// MLA before its up-projections: the queries (B, h, L, d) without their rotary part, the
// latent c (B, S, d_c) and, with rope, the rotary key k_R (B, S, d_R), already rotated.
// c and k_R are what MLA's cache keeps.
template <typename T>
struct MultiHeadAttention<T>::Latent {
  Tensor<T> q, c, k_rot;
};

// The parameter `name` of m when present (a bias the config turned on), else an undefined tensor.
template <typename T>
Tensor<T> maybe(const Module<T>& m, const std::string& name, bool present) {
  return present ? m.parameter(name) : Tensor<T>();
}

// Self-attention's fused projection, W_in = [W_q; W_k; W_v] ((h + 2 h_kv) d, D) and b_in (with bias):
//   x W_in^T + b_in    x (B, L, D) -> (B, L, (h + 2 h_kv) d): [q | k | v] along the channels
template <typename T>
Tensor<T> fused_in_projection(const Module<T>& attention, const Tensor<T>& x, bool bias) {
  return linear(x, attention.parameter("in_proj_weight"), maybe(attention, "in_proj_bias", bias));
}

}  // namespace headlab
