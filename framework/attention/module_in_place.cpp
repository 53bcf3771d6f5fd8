// module_in_place.cpp: the standard layer's fast path, with the heads read in place from the
// projections (attention/kernels/in_place_heads.hpp) instead of split, permuted and merged:
//   self-attention:  proj = x W_in^T + b_in (B, L, 3 h d); q, k, v = its column blocks
//   cross-attention: q = x W_q^T + b_q (B, L, h d);  [k, v] = memory W_kv^T + b_kv (B, S, 2 h d)
//   y = attention_in_place(...) (B, L, h d);  out = y W_O^T + b_O (B, L, D)
// The same products and softmax rows as the composed steps of module.cpp, so the same numbers.
// attend() takes it (unless config.heads_in_place is false) only for what it covers: plain
// multi-head attention (h_kv = h: no GQA, MLA or rope), no cache, gate, head mask, hooks or taps,
// a call without weights, attn_mask, attn_bias or attention dropout, and the fast kernels with no
// course task region asked for (the composed steps are tasks 1.1, 1.2, 2.1 and 2.3 and use 0.5
// and 0.6: a student's answer must be what runs).
#include <cmath>
#include <tuple>

#include "attention/kernels/in_place_heads.hpp"
#include "attention/module_steps.hpp"
#include "headlab/attention/attention.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/ops/kernel_choice.hpp"
#include "headlab/ops/ops.hpp"

namespace headlab {

template <typename T>
bool MultiHeadAttention<T>::reads_heads_in_place(const Tensor<T>& x, const Tensor<T>* memory,
                                                 const AttentionCall<T>& call, const KVCache<T>* cache) const {
  const AttentionConfig& c = config_;
  const bool plain = !c.is_latent() && !c.rope && c.kv_heads() == c.num_heads && c.gate == GateKind::none &&
                     !c.flash && c.heads_in_place;
  const bool watched = hooks_ || taps_on_ || head_mask_.defined() || call.head_mask.defined();
  const bool simple_call = !call.need_weights && !call.attn_mask && !call.attn_bias &&
                           !(this->is_training() && c.dropout > 0) && !(memory && call.causal);
  const std::size_t S = memory ? memory->size(1) : x.size(1);
  const bool sized = x.size(1) > 0 && S > 0 &&
                     (!call.key_padding_mask || detail::shape_of(*call.key_padding_mask) == Shape{x.size(0), S});
  if (!plain || watched || !simple_call || cache || !sized) return false;
  for (const char* task : {"0.5", "0.6", "1.1", "1.2", "2.1", "2.3"})
    if (detail::run_task_region(task)) return false;
  return true;
}

template <typename T>
Tensor<T> MultiHeadAttention<T>::attend_in_place(const Tensor<T>& x, const Tensor<T>* memory,
                                                 const std::vector<std::int64_t>& qpos,
                                                 const AttentionCall<T>& call) const {
  const AttentionConfig& c = config_;
  const std::size_t h = c.num_heads, d = c.dim_head(), hd = h * d;
  InPlaceHeads<T> in;
  in.heads = h;
  in.head_dim = d;
  if (!memory) {
    in.q_src = fused_in_projection(*this, x, c.bias);  // (B, L, 3 h d): [q | k | v]
    in.k_col = hd;
    in.v_col = 2 * hd;
  } else {
    std::tie(in.q_src, in.kv_src) = project_cross(x, *memory);  // (B, L, h d); (B, S, 2 h d): [k | v]
    in.v_col = hd;
  }
  // The keys hidden as sdpa hides them: by position in causal or windowed self-attention, and padding.
  ScoreMask hide;
  MaskArray positions;
  if (!memory && (call.causal || c.window > 0)) {
    positions = position_mask(qpos, qpos, true, c.window, c.sinks);
    hide.positions = &positions;
  }
  if (call.key_padding_mask) hide.padding = &*call.key_padding_mask;
  return attention_in_place(in, hide, static_cast<T>(1.0 / std::sqrt(static_cast<double>(d))));
}

#define INSTANTIATE(T)                                                                                          \
  template bool MultiHeadAttention<T>::reads_heads_in_place(const Tensor<T>&, const Tensor<T>*,                \
                                                            const AttentionCall<T>&, const KVCache<T>*) const;  \
  template Tensor<T> MultiHeadAttention<T>::attend_in_place(const Tensor<T>&, const Tensor<T>*,                 \
                                                            const std::vector<std::int64_t>&,                   \
                                                            const AttentionCall<T>&) const;
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
