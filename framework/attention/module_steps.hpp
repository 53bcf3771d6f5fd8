// module_steps.hpp (internal): the intermediate values of MultiHeadAttention's forward, shared by
// the files that define its steps (attention/module.cpp, module_latent.cpp, module_hooks.cpp).
#pragma once

#include "headlab/attention/attention.hpp"

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

}  // namespace headlab
