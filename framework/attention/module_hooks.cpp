// module_hooks.cpp: MultiHeadAttention's hook points (set_hooks: hook_q, hook_k, hook_v,
// hook_pattern, hook_z, hook_result) and taps (last_taps()), the steps of attend() in
// attention/module.cpp that exist for analysis. Shapes as at the top of module.cpp.
#include <optional>
#include <string>
#include <vector>

#include "attention/module_steps.hpp"
#include "headlab/attention/attention.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/ops/ops.hpp"

namespace headlab {

// ---- Hook points (set_hooks) ----------------------------------------------
// hook_q, hook_k, hook_v: the heads as SDPA will read them.
template <typename T>
void MultiHeadAttention<T>::hook_heads(Heads& heads) const {
  heads.q = hook("hook_q", heads.q);
  heads.k = hook("hook_k", heads.k);
  heads.v = hook("hook_v", heads.v);
}

// hook_pattern: the weights P (B, h, L, S) when they were computed (attend_heads computes them when
// the point is wanted). Returns Y (B, h, L, d): SDPA's, or, when an edit replaced P, P v recomputed
// with query heads grouped over their kv head as in SDPA: P viewed (B, h_kv, g L, S) @ v (B, h_kv, S, d).
template <typename T>
Tensor<T> MultiHeadAttention<T>::hook_pattern(const Heads& heads, SdpaResult<T>& attn) const {
  if (!attn.weights.defined()) return attn.output;
  attn.weights = hook("hook_pattern", attn.weights);
  if (!hooks_->has_edit(hook_prefix_ + "hook_pattern")) return attn.output;
  if (this->is_training() && config_.dropout > 0) {  // P v below would skip the dropout SDPA applied
    throw ValueError("hooks: an edit of " + hook_prefix_ + "hook_pattern in training with attention dropout (use eval mode)");
  }
  const Shape ps = attn.weights.shape(), vs = heads.v.shape();
  const auto B = static_cast<std::ptrdiff_t>(ps[0]), h = static_cast<std::ptrdiff_t>(ps[1]),
             L = static_cast<std::ptrdiff_t>(ps[2]), S = static_cast<std::ptrdiff_t>(ps[3]);
  const auto hkv = static_cast<std::ptrdiff_t>(vs[1]), d = static_cast<std::ptrdiff_t>(vs[3]);
  const Tensor<T> grouped = reshape(attn.weights, {B, hkv, (h / hkv) * L, S});
  return reshape(matmul(grouped, heads.v), {B, h, L, d});
}

// hook_z on y (B, h, L, d), then the output projection; when hook_result is wanted, per head:
//   result[:, :, i, :] = y_i W_O[:, i d : (i + 1) d]^T    (B, L, h, D)
//   out = sum_i result[:, :, i, :] + b_O                   (B, L, D)
// (the same sum as merge_heads(y) W_O^T + b_O, in another order of additions).
template <typename T>
Tensor<T> MultiHeadAttention<T>::hooked_output(const Tensor<T>& y_in) const {
  const Tensor<T> y = hook("hook_z", y_in);
  if (!hook_wanted("hook_result")) return project_output(y);
  const std::size_t h = config_.num_heads, d = y.size(3);
  const Tensor<T> merged = merge_heads(y);  // (B, L, h d)
  const Tensor<T> w_o = this->parameter("out_proj.weight");  // (D, h d)
  std::vector<Tensor<T>> per_head;
  for (std::size_t i = 0; i < h; ++i) per_head.push_back(linear(narrow(merged, -1, i * d, d), narrow(w_o, 1, i * d, d)));
  const Tensor<T> result = hook("hook_result", stack(per_head, 2));  // (B, L, h, D)
  Tensor<T> out = sum(result, {2});
  if (config_.bias) out = out + this->parameter("out_proj.bias");
  return out;
}

// Taps: detached copies of this forward's weights, gate and output, and each head's largest logit
// q_i . k_j / sqrt(d) over the keys its queries may see (positions and key padding, as attend_heads
// masks them; a call's attn_mask and attn_bias are not counted), for analysis (last_taps()).
template <typename T>
void MultiHeadAttention<T>::keep_taps(const AttentionOutput<T>& result, const Heads& heads,
                                      const std::vector<std::int64_t>& qpos, const std::vector<std::int64_t>& kpos,
                                      bool cross, const AttentionCall<T>& call) {
  taps_.weights = result.weights.defined() ? result.weights.detach() : Tensor<T>();
  taps_.gate = result.gate.defined() ? result.gate.detach() : Tensor<T>();
  taps_.output = result.output.detach();
  std::optional<MaskArray> hidden;  // (L, S), true = not visible
  if (!cross && (config_.window > 0 || call.causal)) hidden = position_mask(qpos, kpos, true, config_.window, config_.sinks);
  const MaskArray* padding = call.key_padding_mask ? &*call.key_padding_mask : nullptr;
  taps_.max_logit = Tensor<T>(max_attention_logit(heads.q.value(), heads.k.value(), hidden ? &*hidden : nullptr, padding));
}

#define INSTANTIATE(T)                                                                                          \
  template void MultiHeadAttention<T>::hook_heads(Heads&) const;                                              \
  template Tensor<T> MultiHeadAttention<T>::hook_pattern(const Heads&, SdpaResult<T>&) const;                 \
  template Tensor<T> MultiHeadAttention<T>::hooked_output(const Tensor<T>&) const;                            \
  template void MultiHeadAttention<T>::keep_taps(const AttentionOutput<T>&, const Heads&,                     \
                                                 const std::vector<std::int64_t>&, const std::vector<std::int64_t>&, \
                                                 bool, const AttentionCall<T>&);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
