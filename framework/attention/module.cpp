// module.cpp: MultiHeadAttention and its variants (its configuration: config.cpp).
//
// One forward, with the shape of every intermediate (self-attention, T = L = S
// without a cache; d = head size, g = h / h_kv):
//   x                         (B, L, D)
//   proj = x W_in^T + b_in    (B, L, (h + 2 h_kv) d)    one fused projection
//   q, k, v = split(proj)     (B, L, h d), (B, L, h_kv d), (B, L, h_kv d)
//   q -> (B, L, h, d) -> (B, h, L, d);  k, v -> (B, h_kv, S, d)     head split
//   [rope on q, k at their absolute positions]
//   [cache: k, v = cached ++ new along S]
//   Y = sdpa(q, k, v)         (B, h, L, d)
//   [gate G1: Y *= sigmoid(x W_g^T + b_g) as (B, h, L, 1) or (B, h, L, d)]
//   [head mask: Y_h *= xi_h]
//   Y -> (B, L, h, d) -> (B, L, h d)                                  head merge
//   out = Y W_O^T + b_O       (B, L, D)
// MLA replaces the K/V projections: c = src W_DKV^T (B, S, d_c) is what the
// cache keeps; k = c W_UK^T, v = c W_UV^T (B, S, h d); with rope, a decoupled
// rotary key k_R = rope(src W_KR^T) (B, S, d_R) is shared by all heads and
// concatenated to each head's key, and q gets a rotary part q_R (B, h, L, d_R).
#include <cmath>

#include "attention/module_steps.hpp"
#include "headlab/attention/attention.hpp"
#include "headlab/core/task_marker.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

namespace {

template <typename T>
Tensor<T> uniform_param(const Shape& shape, double bound, Generator& gen) {
  return uniform<T>(shape, static_cast<T>(-bound), static_cast<T>(bound), gen);
}

}  // namespace

// (B, T, n d) -> (B, n, T, d): channels [i d, (i + 1) d) of each token become head i.
template <typename T>
Tensor<T> split_heads(const Tensor<T>& x, std::size_t heads) {
  const Shape s = x.shape();
  if (s.size() != 3 || heads == 0 || s[2] % heads != 0) {
    throw ShapeError("split_heads: input " + shape_str(s) + " should be (B, T, n d) with n = " +
                     std::to_string(heads) + " heads");
  }
  // BEGIN TASK 1.1: head split
  HEADLAB_TASK("1.1");
  const auto batch = static_cast<std::ptrdiff_t>(s[0]), steps = static_cast<std::ptrdiff_t>(s[1]);
  const auto n = static_cast<std::ptrdiff_t>(heads), d = static_cast<std::ptrdiff_t>(s[2] / heads);
  const Tensor<T> by_head = reshape(x, {batch, steps, n, d});  // (B, T, n, d): channel i d + j -> (i, j)
  return permute(by_head, {0, 2, 1, 3});                     // (B, n, T, d)
  // END TASK 1.1
}

// (B, n, T, d) -> (B, T, n d): the inverse of split_heads.
template <typename T>
Tensor<T> merge_heads(const Tensor<T>& x) {
  const Shape s = x.shape();
  if (s.size() != 4) throw ShapeError("merge_heads: input " + shape_str(s) + " should be (B, n, T, d)");
  // BEGIN TASK 1.2: head merge
  HEADLAB_TASK("1.2");
  const auto batch = static_cast<std::ptrdiff_t>(s[0]), steps = static_cast<std::ptrdiff_t>(s[2]);
  const auto width = static_cast<std::ptrdiff_t>(s[1] * s[3]);  // n d
  const Tensor<T> by_step = permute(x, {0, 2, 1, 3});           // (B, T, n, d)
  return reshape(by_step, {batch, steps, width});               // (B, T, n d)
  // END TASK 1.2
}

template Tensor<float> split_heads<float>(const Tensor<float>&, std::size_t);
template Tensor<double> split_heads<double>(const Tensor<double>&, std::size_t);
template Tensor<float> merge_heads<float>(const Tensor<float>&);
template Tensor<double> merge_heads<double>(const Tensor<double>&);

template <typename T>
MultiHeadAttention<T>::MultiHeadAttention(const AttentionConfig& config, Generator& gen) : config_(config) {
  config_.validate();
  const std::size_t D = config_.d_model, h = config_.num_heads, hkv = config_.kv_heads(), d = config_.dim_head();
  if (!config_.is_latent()) {
    // PyTorch: xavier_uniform over the whole fused matrix, biases zero.
    const std::size_t rows = (h + 2 * hkv) * d;
    this->register_parameter("in_proj_weight", uniform_param<T>({rows, D}, std::sqrt(6.0 / double(rows + D)), gen));
    if (config_.bias) this->register_parameter("in_proj_bias", zeros<T>({rows}));
  } else {
    // nn.Linear's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
    auto linear_param = [&](const std::string& name, std::size_t out, std::size_t in) {
      const double bound = 1.0 / std::sqrt(double(in));
      this->register_parameter(name + ".weight", uniform_param<T>({out, in}, bound, gen));
      if (config_.bias) this->register_parameter(name + ".bias", uniform_param<T>({out}, bound, gen));
    };
    linear_param("q_proj", h * d, D);
    linear_param("kv_down_proj", config_.latent_dim, D);
    linear_param("k_up_proj", h * d, config_.latent_dim);
    linear_param("v_up_proj", h * d, config_.latent_dim);
    if (config_.rope) {
      linear_param("q_rope_proj", h * config_.rope_dim, D);
      linear_param("k_rope_proj", config_.rope_dim, D);
    }
  }
  if (config_.gate != GateKind::none) {
    const std::size_t gates = config_.gate == GateKind::headwise ? h : h * d;
    const double bound = 1.0 / std::sqrt(double(D));
    this->register_parameter("gate_proj.weight", uniform_param<T>({gates, D}, bound, gen));
    if (config_.gate_bias) this->register_parameter("gate_proj.bias", uniform_param<T>({gates}, bound, gen));
  }
  // PyTorch: out_proj is a Linear (kaiming_uniform(a=sqrt 5) = U(-1/sqrt(fan_in), ..)) with its bias zeroed.
  this->register_parameter("out_proj.weight", uniform_param<T>({D, h * d}, 1.0 / std::sqrt(double(h * d)), gen));
  if (config_.bias) this->register_parameter("out_proj.bias", zeros<T>({D}));
}

template <typename T>
AttentionOutput<T> MultiHeadAttention<T>::forward(const Tensor<T>& x, const AttentionCall<T>& call, KVCache<T>* cache) {
  return attend(x, nullptr, call, cache);
}

template <typename T>
AttentionOutput<T> MultiHeadAttention<T>::forward(const Tensor<T>& x, const Tensor<T>& memory,
                                                  const AttentionCall<T>& call) {
  return attend(x, &memory, call, nullptr);
}

// ---- One forward, step by step ------------------------------------------
// attend() below is the list of steps. The steps that read the module's parameters
// or state are private member functions; the others are file-local functions of
// their arguments. Shapes as at the top of this file (S = the keys: the cached ones
// followed by the new ones, or the memory's length for cross-attention).

// The steps' intermediate values, Heads and Latent, are defined in attention/module_steps.hpp.

namespace {

// x (B, L, D) and memory (B, S, D) must match the module; ShapeError / ValueError otherwise.
template <typename T>
void check_inputs(const AttentionConfig& c, const Tensor<T>& x, const Tensor<T>* memory) {
  const std::size_t D = c.d_model;
  const Shape xs = x.shape();
  if (xs.size() != 3 || xs[2] != D) {
    throw ShapeError("MultiHeadAttention: query input " + shape_str(xs) + " should be (B, L, " + std::to_string(D) +
                     ")");
  }
  if (memory && (memory->dim() != 3 || memory->size(2) != D || memory->size(0) != xs[0])) {
    throw ShapeError("MultiHeadAttention: memory " + shape_str(memory->shape()) + " should be (" +
                     std::to_string(xs[0]) + ", S, " + std::to_string(D) + ") for query input " + shape_str(xs));
  }
  if (memory && c.rope) throw ValueError("MultiHeadAttention: rope is for self-attention only");
}

// The absolute positions (L) of L new tokens: offset, offset + 1, ..., offset + L - 1,
// where offset is the number of tokens the cache has seen (0 without a cache).
std::vector<std::int64_t> new_token_positions(std::size_t offset, std::size_t L) {
  std::vector<std::int64_t> positions(L);
  for (std::size_t i = 0; i < L; ++i) positions[i] = static_cast<std::int64_t>(offset + i);
  return positions;
}

// KV cache step (self-attention; `cache` is not null), for any pair of per-token arrays: K and V
// (B, h_kv, L, d) with time on axis 2, or MLA's latent (B, L, d_c) and rotary key (B, L, d_R) with
// time on axis 1. In: first, second = the new tokens' arrays, at positions qpos (L). Out: both
// replaced by the cached entries followed by the new ones along `axis` (S entries; the cached ones
// are constants, no graph), kpos (S) = the positions the cache holds followed by qpos; and the new
// entries are in the cache (append handles window eviction: it keeps the sinks and the newest
// `window` entries, so after eviction the positions are no longer 0..S-1).
template <typename T>
void cache_step(const AttentionConfig& c, const std::vector<std::int64_t>& qpos, KVCache<T>* cache,
                std::size_t axis, Tensor<T>& first, Tensor<T>& second, std::vector<std::int64_t>& kpos) {
  // BEGIN TASK 4.4: KV cache step
  HEADLAB_TASK("4.4");
  std::vector<std::int64_t> all = cache->positions();
  all.insert(all.end(), qpos.begin(), qpos.end());
  const Array<T> first_new = first.value(), second_new = second.value();
  if (cache->stored_tokens() > 0) {
    first = concat<T>({Tensor<T>(cache->first()), first}, static_cast<std::ptrdiff_t>(axis));
    second = concat<T>({Tensor<T>(cache->second()), second}, static_cast<std::ptrdiff_t>(axis));
  }
  kpos = all;
  cache->append(first_new, second_new, axis, c.window, c.sinks);
  // END TASK 4.4
}

// The two callers of the cache step (task 4.4): the kv heads k, v (B, h_kv, L, d), time on axis 2 ...
template <typename T>
void kv_cache_step(const AttentionConfig& c, const std::vector<std::int64_t>& qpos, KVCache<T>* cache, Tensor<T>& k,
                   Tensor<T>& v, std::vector<std::int64_t>& kpos) {
  cache_step(c, qpos, cache, 2, k, v, kpos);
}

// ... and MLA's latent (B, L, d_c) with its rotary key k_rot (B, L, d_R), time on axis 1 (without
// rope, an empty (B, L, 0) stands in for k_rot, and k_rot itself stays as it was).
template <typename T>
void latent_cache_step(const AttentionConfig& c, const std::vector<std::int64_t>& qpos, KVCache<T>* cache,
                       Tensor<T>& latent, Tensor<T>& k_rot, std::vector<std::int64_t>& kpos) {
  Tensor<T> rot = c.rope ? k_rot : Tensor<T>(Array<T>(xt::zeros<T>({latent.size(0), latent.size(1), std::size_t(0)})));
  cache_step(c, qpos, cache, 1, latent, rot, kpos);
  if (c.rope) k_rot = rot;
}

// Head mask: Y_h *= xi_h, with y (B, h, L, d) and xi (h) viewed as (1, h, 1, 1).
// An undefined xi leaves y as it is; ShapeError unless xi has shape (h).
template <typename T>
Tensor<T> apply_head_mask(const Tensor<T>& y, const Tensor<T>& xi, std::size_t h) {
  if (!xi.defined()) return y;
  if (xi.shape() != Shape{h}) {
    throw ShapeError("MultiHeadAttention: head_mask " + shape_str(xi.shape()) + " should be (" + std::to_string(h) +
                     ")");
  }
  return y * reshape(xi, {1, static_cast<std::ptrdiff_t>(h), 1, 1});
}

}  // namespace

template <typename T>
AttentionOutput<T> MultiHeadAttention<T>::attend(const Tensor<T>& x, const Tensor<T>* memory,
                                                 const AttentionCall<T>& call, KVCache<T>* cache) {
  check_inputs(config_, x, memory);
  // Positions: the new tokens come after whatever the cache has seen; in self-attention the
  // keys are at the same positions (the cache step puts the cached ones first); cross-attention
  // keys have none (no position mask).
  const std::vector<std::int64_t> qpos = new_token_positions(cache ? cache->length() : 0, x.size(1));
  std::vector<std::int64_t> kpos = memory ? std::vector<std::int64_t>() : qpos;
  if (reads_heads_in_place(x, memory, call, cache)) {  // the same numbers without the head copies
    AttentionOutput<T> plain;
    plain.output = project("out_proj", attend_in_place(x, memory, qpos, call), config_.bias);  // (B, L, D)
    return plain;
  }

  Heads heads;
  if (!config_.is_latent()) {
    heads = project_heads(x, memory, qpos);                                  // projections [and rope]
    if (hooks_) hook_heads(heads);                                           // hook_q, hook_k, hook_v
    if (cache) kv_cache_step(config_, qpos, cache, heads.k, heads.v, kpos);  // task 4.4
  } else {
    const Tensor<T>& src = memory ? *memory : x;  // where keys and values come from
    Latent latent = project_latent(x, src, qpos);  // MLA: queries, latent c, rotary key
    if (cache) latent_cache_step(config_, qpos, cache, latent.c, latent.k_rot, kpos);
    heads = expand_latent(x, latent, qpos);  // up-projections to heads
    if (hooks_) hook_heads(heads);
  }

  SdpaResult<T> attn = attend_heads(heads, qpos, kpos, memory != nullptr, call);  // SDPA or tiled
  AttentionOutput<T> result;
  Tensor<T> y = hooks_ ? hook_pattern(heads, attn) : attn.output;  // (B, h, L, d)
  if (config_.gate != GateKind::none) apply_gate(x, y, result);  // task 6.1
  y = apply_head_mask(y, call.head_mask.defined() ? call.head_mask : head_mask_, config_.num_heads);
  result.output = hooks_ ? hooked_output(y) : project_output(y);  // (B, L, D)
  result.weights = attn.weights;
  if (taps_on_) keep_taps(result, heads, qpos, kpos, memory != nullptr, call);
  return result;
}

// input W^T + b with the parameters <name>.weight (out, in) and, if `bias`, <name>.bias (out):
// input (..., in) -> (..., out).
template <typename T>
Tensor<T> MultiHeadAttention<T>::project(const std::string& name, const Tensor<T>& input, bool bias) const {
  return linear(input, this->parameter(name + ".weight"), maybe(*this, name + ".bias", bias));
}

// Cross-attention: rows [0, h d) of W_in project the queries, the rest keys and values.
//   q = x W_q^T + b_q (B, L, h d);  kv = memory W_kv^T + b_kv (B, S, 2 h_kv d)
template <typename T>
std::pair<Tensor<T>, Tensor<T>> MultiHeadAttention<T>::project_cross(const Tensor<T>& x, const Tensor<T>& memory) const {
  const AttentionConfig& c = config_;
  const std::size_t hd = c.num_heads * c.dim_head(), kvd = 2 * c.kv_heads() * c.dim_head();
  const Tensor<T> w_in = this->parameter("in_proj_weight");
  const Tensor<T> w_q = narrow(w_in, 0, 0, hd), w_kv = narrow(w_in, 0, hd, kvd);
  Tensor<T> b_q, b_kv;
  if (c.bias) {
    const Tensor<T> b_in = this->parameter("in_proj_bias");
    b_q = narrow(b_in, 0, 0, hd);
    b_kv = narrow(b_in, 0, hd, kvd);
  }
  return {linear(x, w_q, b_q), linear(memory, w_kv, b_kv)};
}

// Projections of the standard / GQA layer, from the fused W_in = [W_q; W_k; W_v] ((h + 2 h_kv) d, D):
//   self-attention:  [q, k, v] = x W_in^T + b_in    (B, L, (h + 2 h_kv) d), split along channels
//   cross-attention: q = x W_q^T + b_q (B, L, h d);  [k, v] = memory W_kv^T + b_kv (B, S, 2 h_kv d)
// then split into heads: q (B, h, L, d), k, v (B, h_kv, S, d); with rope, q and k are rotated at
// the new tokens' positions qpos.
template <typename T>
typename MultiHeadAttention<T>::Heads MultiHeadAttention<T>::project_heads(
    const Tensor<T>& x, const Tensor<T>* memory, const std::vector<std::int64_t>& qpos) const {
  const AttentionConfig& c = config_;
  const std::size_t h = c.num_heads, hkv = c.kv_heads(), d = c.dim_head();
  Heads heads;
  if (!memory) {
    const Tensor<T> proj = fused_in_projection(*this, x, c.bias);  // (B, L, (h + 2 h_kv) d)
    auto parts = split(proj, {h * d, hkv * d, hkv * d}, -1);
    heads.q = split_heads(parts[0], h);
    heads.k = split_heads(parts[1], hkv);
    heads.v = split_heads(parts[2], hkv);
  } else {
    auto [q, kv_proj] = project_cross(x, *memory);
    heads.q = split_heads(q, h);
    auto kv = split(kv_proj, {hkv * d, hkv * d}, -1);
    heads.k = split_heads(kv[0], hkv);
    heads.v = split_heads(kv[1], hkv);
  }
  if (c.rope) {
    heads.q = rope(heads.q, qpos, c.rope_base);
    heads.k = rope(heads.k, qpos, c.rope_base);
  }
  return heads;
}

// MLA's steps (project_latent, expand_latent) are in attention/module_latent.cpp.

// Attention over the heads: Y = softmax(q k^T * scale + bias, masked) v    (B, h, L, d)
// (scale = 1 / sqrt(d_qk)), with weights (B, h, L, S) when the call or the taps want them.
// Self-attention masks by the positions qpos (L) and kpos (S): causal, window and sinks;
// cross-attention only by the call's masks. The tiled kernel (flash_attention) computes the
// same Y when config.flash is set and the call needs nothing it lacks (weights, attn_mask,
// attn_bias, dropout in training); otherwise the composed scaled_dot_product_attention.
template <typename T>
SdpaResult<T> MultiHeadAttention<T>::attend_heads(const Heads& heads, const std::vector<std::int64_t>& qpos,
                                                  const std::vector<std::int64_t>& kpos, bool cross,
                                                  const AttentionCall<T>& call) const {
  const AttentionConfig& c = config_;
  SdpaOptions<T> opt;
  opt.causal = call.causal;
  if (!cross) {
    opt.window = c.window;
    opt.sinks = c.sinks;
    if (c.window > 0 || call.causal) {
      opt.query_positions = qpos;
      opt.key_positions = kpos;
    }
  }
  opt.key_padding_mask = call.key_padding_mask;
  opt.attn_mask = call.attn_mask;
  opt.attn_bias = call.attn_bias;
  opt.dropout = c.dropout;
  opt.training = this->is_training();
  opt.generator = call.generator;
  opt.need_weights = call.need_weights || taps_on_ || hook_wanted("hook_pattern");
  const bool tiled = c.flash && !opt.need_weights && !opt.attn_mask && !opt.attn_bias && !(opt.training && opt.dropout > 0);
  return tiled ? flash_attention(heads.q, heads.k, heads.v, opt)
               : scaled_dot_product_attention(heads.q, heads.k, heads.v, opt);
}

// Gate G1 (Qiu et al. 2025): gate scores from the query-side input x (B, L, D), one per head
// (headwise, W_g (h, D)) or per channel (elementwise, W_g (h d, D)):
//   gate = split_heads(sigmoid(x W_g^T + b_g))    (B, h, L, 1) or (B, h, L, d)
//   y = y * gate                                  (B, h, L, d)
// and the gate is kept in result.gate.
template <typename T>
void MultiHeadAttention<T>::apply_gate(const Tensor<T>& x, Tensor<T>& y, AttentionOutput<T>& result) const {
  // BEGIN TASK 6.1: headwise gate
  HEADLAB_TASK("6.1");
  const Tensor<T> scores =
      linear(x, this->parameter("gate_proj.weight"), maybe(*this, "gate_proj.bias", config_.gate_bias));
  const Tensor<T> gate = split_heads(sigmoid(scores), config_.num_heads);  // (B, h, L, 1) or (B, h, L, d)
  y = y * gate;
  result.gate = gate;
  // END TASK 6.1
}

// Output projection: the heads merged back, then W_O:
//   out = merge_heads(y) W_O^T + b_O    y (B, h, L, d) -> (B, L, h d) -> (B, L, D)
template <typename T>
Tensor<T> MultiHeadAttention<T>::project_output(const Tensor<T>& y) const {
  return project("out_proj", merge_heads(y), config_.bias);
}

// The hook points and taps (hook_heads, hook_pattern, hooked_output, keep_taps) are in
// attention/module_hooks.cpp.

template <typename T>
void MultiHeadAttention<T>::set_window(std::size_t window, std::size_t sinks) {
  AttentionConfig changed = config_;
  changed.window = window;
  changed.sinks = sinks;
  changed.validate();  // sinks need a window
  config_ = changed;
}

template <typename T>
void MultiHeadAttention<T>::set_head_mask(const Tensor<T>& xi) {
  if (xi.defined() && xi.shape() != Shape{config_.num_heads}) {
    throw ShapeError("MultiHeadAttention::set_head_mask: mask " + shape_str(xi.shape()) + " should be (" +
                     std::to_string(config_.num_heads) + ")");
  }
  head_mask_ = xi;
}

template class MultiHeadAttention<float>;
template class MultiHeadAttention<double>;

}  // namespace headlab
