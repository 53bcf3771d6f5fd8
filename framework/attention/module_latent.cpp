// module_latent.cpp: Multi-head Latent Attention's steps of MultiHeadAttention's forward (DeepSeek-V2;
// config.latent_dim > 0): the latent projection, which is what MLA's KV cache keeps, and the
// up-projections from the latent to heads. attend() in attention/module.cpp calls them in place of
// project_heads. Shapes as at the top of module.cpp.
#include <vector>

#include "attention/module_steps.hpp"
#include "headlab/attention/attention.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/ops/ops.hpp"

namespace headlab {

// MLA's latent projection (DeepSeek-V2): queries as usual, keys and values through a shared latent:
//   q = split_heads(x W_q^T + b_q)          (B, h, L, d)
//   c = src W_DKV^T + b_DKV                 (B, S, d_c)
//   k_R = rope(src W_KR^T + b_KR) at qpos   (B, S, d_R), with rope only (one rotary key for all heads)
template <typename T>
typename MultiHeadAttention<T>::Latent MultiHeadAttention<T>::project_latent(
    const Tensor<T>& x, const Tensor<T>& src, const std::vector<std::int64_t>& qpos) const {
  const AttentionConfig& c = config_;
  Latent latent;
  latent.q = split_heads(project("q_proj", x, c.bias), c.num_heads);
  latent.c = project("kv_down_proj", src, c.bias);
  if (c.rope) {
    const Tensor<T> k_r = project("k_rope_proj", src, c.bias);
    const auto s0 = static_cast<std::ptrdiff_t>(k_r.size(0)), s1 = static_cast<std::ptrdiff_t>(k_r.size(1)),
               s2 = static_cast<std::ptrdiff_t>(c.rope_dim);
    latent.k_rot = reshape(rope(reshape(k_r, {s0, 1, s1, s2}), qpos, c.rope_base), {s0, s1, s2});
  }
  return latent;
}

// MLA's up-projections, from the latent (cached entries included) to heads:
//   k = split_heads(c W_UK^T + b_UK), v = split_heads(c W_UV^T + b_UV)    (B, h, S, d)
// with rope, each head's query and key get a rotary part (scores then run over d + d_R):
//   q = [q, rope(split_heads(x W_QR^T + b_QR)) at qpos]    (B, h, L, d + d_R)
//   k = [k, k_R for every head]                            (B, h, S, d + d_R)
template <typename T>
typename MultiHeadAttention<T>::Heads MultiHeadAttention<T>::expand_latent(
    const Tensor<T>& x, const Latent& latent, const std::vector<std::int64_t>& qpos) const {
  const AttentionConfig& c = config_;
  const std::size_t h = c.num_heads;
  Heads heads;
  heads.q = latent.q;
  heads.k = split_heads(project("k_up_proj", latent.c, c.bias), h);
  heads.v = split_heads(project("v_up_proj", latent.c, c.bias), h);
  if (c.rope) {
    const Tensor<T> q_r = split_heads(project("q_rope_proj", x, c.bias), h);
    heads.q = concat<T>({heads.q, rope(q_r, qpos, c.rope_base)}, -1);
    const Shape ks = latent.k_rot.shape();
    const Tensor<T> k_r_head = reshape(latent.k_rot, {static_cast<std::ptrdiff_t>(ks[0]), 1,
                                                      static_cast<std::ptrdiff_t>(ks[1]),
                                                      static_cast<std::ptrdiff_t>(ks[2])});
    heads.k = concat<T>({heads.k, concat<T>(std::vector<Tensor<T>>(h, k_r_head), 1)}, -1);
  }
  return heads;
}

#define INSTANTIATE(T)                                                                                      \
  template typename MultiHeadAttention<T>::Latent MultiHeadAttention<T>::project_latent(                  \
      const Tensor<T>&, const Tensor<T>&, const std::vector<std::int64_t>&) const;                        \
  template typename MultiHeadAttention<T>::Heads MultiHeadAttention<T>::expand_latent(                    \
      const Tensor<T>&, const Latent&, const std::vector<std::int64_t>&) const;
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
