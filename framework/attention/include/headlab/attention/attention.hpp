// headlab/attention/attention.hpp: scaled dot-product attention, the MultiHeadAttention
// module with its variants, rotary positions and the KV cache.
//
// Shapes (batch first):  B batch, T/L query length, S key length, D d_model,
// h query heads, h_kv key/value heads, d head size, d_c latent size (MLA).
// Definitions: Vaswani et al. 2017 section 3.2; gated attention (Qiu et al.
// 2025, position G1); GQA/MQA; MLA (DeepSeek-V2); sliding window + sinks
// (Mistral, StreamingLLM). See docs/attention.md for every option.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "headlab/nn/hooks.hpp"
#include "headlab/nn/module.hpp"
#include "headlab/core/tensor.hpp"

namespace headlab {

struct ScoreMask;  // headlab/ops/ops.hpp: which keys a row of scores may not see

class Generator;

// ---- Rotary position embedding (attention/rope.cpp) -------------------
// x (..., T, d) with d even, positions (T): the "rotate-half" form (GPT-NeoX,
// Llama): with x = [x1, x2] (halves), theta_i = pos * base^(-2i/d),
//   y = [x1 cos - x2 sin, x2 cos + x1 sin];   dx = the rotation by -theta of dy.
template <typename T>
Tensor<T> rope(const Tensor<T>& x, const std::vector<std::int64_t>& positions, double base = 10000.0);

// ---- Scaled dot-product attention (attention/sdpa.cpp) ------------------
template <typename T>
struct SdpaOptions {
  std::optional<double> scale;  // default 1 / sqrt(d)
  // Which keys a query may see, by absolute position (see key_positions):
  bool causal = false;          // key position <= query position
  std::size_t window = 0;       // > 0: also key position > query position - window (W keys incl. itself);
                                //      implies causal
  std::size_t sinks = 0;        // key positions < sinks stay visible whatever the window
  std::optional<MaskArray> key_padding_mask;  // (B, S), true = ignore that key
  std::optional<MaskArray> attn_mask;         // bool, broadcasts from (L, S) or (B, h, L, S); true = not allowed
  std::optional<Array<T>> attn_bias;          // additive, broadcasts from (L, S) or (B, h, L, S)
  // Absolute positions of queries (L) and keys (S). Default: keys 0..S-1 and
  // queries S-L..S-1 (the last L positions), so causal masking is right when L != S.
  std::vector<std::int64_t> query_positions, key_positions;
  double dropout = 0.0;         // on the weights, only when training
  bool training = false;
  Generator* generator = nullptr;  // required when dropout > 0 and training
  bool need_weights = false;
};

template <typename T>
struct SdpaResult {
  Tensor<T> output;   // (B, h, L, d_v)
  Tensor<T> weights;  // (B, h, L, S) softmax weights before dropout (when need_weights)
};

// q (B, h, L, d), k (B, h_kv, S, d), v (B, h_kv, S, d_v); h_kv divides h and
// query head i uses kv head floor(i / (h / h_kv)).
//   out = softmax(q k^T * scale + bias, masked to -inf) v
// Built from autograd ops. A fully masked row gives zero weights and zero output.
template <typename T>
SdpaResult<T> scaled_dot_product_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                           const SdpaOptions<T>& options = {});

// The attention part of scaled_dot_product_attention (course task 2.1), once its checks are done
// and its masks built: `hide` names the keys each row may not see (ScoreMask, headlab/ops/ops.hpp:
// a (L, S) position mask, a (B, S) padding mask, an attn_mask; all optional). opt's masks and
// positions are not read here (they are what `hide` was built from); its scale, bias, dropout and
// need_weights are. The shapes are not checked again: call scaled_dot_product_attention.
template <typename T>
SdpaResult<T> attend_with_masks(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v, const ScoreMask& hide,
                                const SdpaOptions<T>& opt);

// The same attention as one tiled kernel (attention/kernels/flash_attention.cpp, FlashAttention-2 style):
// blocks of `block` queries against blocks of keys with an online softmax, keeping only the
// output and the row logsumexp; the backward recomputes the weights block by block. Supports
// what the module needs: causal / window / sinks with positions, key_padding_mask, GQA, scale.
// ValueError for attn_mask, attn_bias, need_weights or dropout in training (use the composed
// scaled_dot_product_attention, the readable reference, for those).
template <typename T>
SdpaResult<T> flash_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                              const SdpaOptions<T>& options = {}, std::size_t block = 64);

// The boolean "not allowed" mask of shape (L, S) for causal / window / sinks over positions.
MaskArray position_mask(const std::vector<std::int64_t>& query_positions,
                        const std::vector<std::int64_t>& key_positions, bool causal, std::size_t window,
                        std::size_t sinks);

// ---- Head split and merge (attention/module.cpp) -----------------------
// split_heads: x (B, T, n d) -> (B, n, T, d), channels [i d, (i + 1) d) of each token form head i.
// merge_heads: (B, n, T, d) -> (B, T, n d), its inverse.
template <typename T>
Tensor<T> split_heads(const Tensor<T>& x, std::size_t heads);
template <typename T>
Tensor<T> merge_heads(const Tensor<T>& x);

// ---- Configuration (attention/config.cpp) -----------------------------------
enum class GateKind { none, headwise, elementwise };
GateKind parse_gate(const std::string& name);  // "none" | "headwise" | "elementwise"
std::string gate_name(GateKind g);

struct AttentionConfig {
  std::size_t d_model = 0;
  std::size_t num_heads = 1;
  std::size_t num_kv_heads = 0;   // 0 = num_heads (MHA); 1 = multi-query; else grouped-query
  std::size_t head_dim = 0;       // 0 = d_model / num_heads
  GateKind gate = GateKind::none; // sigmoid gate after SDPA, before W_O (position G1)
  bool gate_bias = true;
  bool bias = true;               // biases of the projections
  double dropout = 0.0;           // on the attention weights, training only
  std::size_t window = 0;         // sliding window of W keys (0 = none); implies causal
  std::size_t sinks = 0;          // always-visible first tokens under the window
  bool rope = false;              // rotary positions on q and k (self-attention)
  double rope_base = 10000.0;
  std::size_t latent_dim = 0;     // MLA: shared latent c of size d_c (0 = off)
  std::size_t rope_dim = 0;       // MLA with rope: decoupled rotary key size d_R (shared by heads)
  bool flash = false;             // the tiled kernel (flash_attention) whenever the call allows it:
                                  // no attn_mask / attn_bias / weights / taps / attention dropout
  bool heads_in_place = true;     // plain multi-head attention reads its heads in place from the
                                  // projections (attention/module_in_place.cpp: the same numbers,
                                  // fewer copies); false: always the composed steps

  std::size_t kv_heads() const { return num_kv_heads ? num_kv_heads : num_heads; }
  std::size_t dim_head() const { return head_dim ? head_dim : (num_heads ? d_model / num_heads : 0); }
  bool is_latent() const { return latent_dim > 0; }
  // Throws ValueError naming the field and why (0 heads, h_kv not dividing h, ...).
  void validate() const;
  std::string describe() const;
};

template <typename T> class KVCache;

template <typename T>
struct AttentionCall {
  bool causal = false;
  std::optional<MaskArray> key_padding_mask;  // (B, S), true = ignore
  std::optional<MaskArray> attn_mask;         // bool (L, S) or (B, h, L, S), true = not allowed
  std::optional<Array<T>> attn_bias;          // additive (L, S) or (B, h, L, S)
  Tensor<T> head_mask;                        // (h) multipliers xi_h on each head's output; undefined = ones
  bool need_weights = false;
  Generator* generator = nullptr;             // for attention dropout in training
};

template <typename T>
struct AttentionOutput {
  Tensor<T> output;   // (B, L, D)
  Tensor<T> weights;  // (B, h, L, S) per head, when need_weights or taps are on
  Tensor<T> gate;     // (B, h, L, 1) headwise or (B, h, L, d) elementwise, when gated
  Tensor<T> max_logit;  // (h), taps only: the largest logit q_i . k_j * scale over the keys each query may see
};

// Batch-first multi-head attention with PyTorch's parameter names and layout:
//   standard/GQA: in_proj_weight ((h + 2 h_kv) d, D) = [W_q; W_k; W_v], in_proj_bias,
//                 out_proj.weight (D, h d), out_proj.bias (D)   (= nn.MultiheadAttention when h_kv = h, d = D/h)
//   MLA:          q_proj.*, kv_down_proj.* (d_c, D), k_up_proj.* / v_up_proj.* (h d, d_c),
//                 with rope also q_rope_proj.* (h d_R, D) and k_rope_proj.* (d_R, D)
//   gated:        gate_proj.weight (h or h d, D), gate_proj.bias
template <typename T>
class MultiHeadAttention : public Module<T> {
 public:
  MultiHeadAttention(const AttentionConfig& config, Generator& gen);
  const AttentionConfig& config() const { return config_; }

  // Self-attention: queries, keys and values from x (B, T, D).
  AttentionOutput<T> forward(const Tensor<T>& x, const AttentionCall<T>& call = {}, KVCache<T>* cache = nullptr);
  // Cross-attention: queries from x (B, L, D), keys/values from memory (B, S, D).
  AttentionOutput<T> forward(const Tensor<T>& x, const Tensor<T>& memory, const AttentionCall<T>& call = {});

  // Taps for analysis: when on, every forward keeps its per-head weights, gate values, output and
  // largest attention logit here (the forward runs the composed kernel: weights are needed).
  void set_taps(bool on) { taps_on_ = on; }
  const AttentionOutput<T>& last_taps() const { return taps_; }

  // Named activation points (headlab/nn/hooks.hpp) under `prefix` (e.g. "blocks.0.attn."):
  //   hook_q (B, h, L, d_qk), hook_k, hook_v (B, h_kv, L, d): the new tokens' heads (after rope; MLA:
  //     after the up-projections, cached entries included, so S keys), before SDPA
  //   hook_pattern (B, h, L, S): the attention weights (computed only when wanted: composed kernel)
  //   hook_z (B, h, L, d): each head's output after gate and head mask, before W_O
  //   hook_result (B, L, h, D): each head's output through its slice of W_O, before the sum over
  //     heads (computed only when wanted; the layer's output is then sum_h result + b_O)
  // An edit of hook_pattern recomputes hook_z from it (pattern v). nullptr turns them off.
  void set_hooks(HookPoints<T>* hooks, const std::string& prefix) {
    hooks_ = hooks;
    hook_prefix_ = prefix;
  }

  // A standing head mask xi (h): Y_h *= xi_h in every forward whose call passes no head_mask of its
  // own (head importance and pruning, headlab/lab/heads.hpp). An undefined tensor removes it.
  // ShapeError unless it has shape (h).
  void set_head_mask(const Tensor<T>& xi);
  const Tensor<T>& head_mask() const { return head_mask_; }

  // A sliding window of W keys with the first K positions always visible, set after construction
  // (a model trained with full attention scored with a window: StreamingLLM's experiment). Self-
  // attention only; a KV cache used afterwards keeps K + W entries. (0, 0) is full attention (causal
  // where the call is). ValueError for sinks without a window; parameters are untouched.
  void set_window(std::size_t window, std::size_t sinks);

 private:
  // One forward (self- or cross-attention, with or without a cache) and the steps it is made of;
  // attention/module.cpp gives each step's shapes and formula (MLA's in module_latent.cpp, the hook
  // points' and taps' in module_hooks.cpp, the fast path's in module_in_place.cpp).
  struct Heads;   // q, k, v split into heads
  struct Latent;  // MLA: the queries, the latent c and the rotary key, before the up-projections
  AttentionOutput<T> attend(const Tensor<T>& x, const Tensor<T>* memory, const AttentionCall<T>& call,
                            KVCache<T>* cache);
  Tensor<T> project(const std::string& name, const Tensor<T>& input, bool bias) const;
  // The fast path (attention/module_in_place.cpp): whether this call may take it, and the merged
  // heads (B, L, h d) it computes with them read in place.
  bool reads_heads_in_place(const Tensor<T>& x, const Tensor<T>* memory, const AttentionCall<T>& call,
                            const KVCache<T>* cache) const;
  Tensor<T> attend_in_place(const Tensor<T>& x, const Tensor<T>* memory, const std::vector<std::int64_t>& qpos,
                            const AttentionCall<T>& call) const;
  Heads project_heads(const Tensor<T>& x, const Tensor<T>* memory, const std::vector<std::int64_t>& qpos) const;
  // Cross-attention's two projections from the fused W_in: {x W_q^T + b_q, memory W_kv^T + b_kv}.
  std::pair<Tensor<T>, Tensor<T>> project_cross(const Tensor<T>& x, const Tensor<T>& memory) const;
  Latent project_latent(const Tensor<T>& x, const Tensor<T>& src, const std::vector<std::int64_t>& qpos) const;
  Heads expand_latent(const Tensor<T>& x, const Latent& latent, const std::vector<std::int64_t>& qpos) const;
  SdpaResult<T> attend_heads(const Heads& heads, const std::vector<std::int64_t>& qpos,
                             const std::vector<std::int64_t>& kpos, bool cross, const AttentionCall<T>& call) const;
  void apply_gate(const Tensor<T>& x, Tensor<T>& y, AttentionOutput<T>& result) const;
  Tensor<T> project_output(const Tensor<T>& y) const;
  void keep_taps(const AttentionOutput<T>& result, const Heads& heads, const std::vector<std::int64_t>& qpos,
                 const std::vector<std::int64_t>& kpos, bool cross, const AttentionCall<T>& call);

  Tensor<T> hook(const char* name, const Tensor<T>& activation) const {
    return hooks_->at(hook_prefix_ + name, activation);
  }
  bool hook_wanted(const char* name) const { return hooks_ && hooks_->wants(hook_prefix_ + name); }
  void hook_heads(Heads& heads) const;
  Tensor<T> hook_pattern(const Heads& heads, SdpaResult<T>& attn) const;
  Tensor<T> hooked_output(const Tensor<T>& y) const;

  AttentionConfig config_;
  HookPoints<T>* hooks_ = nullptr;
  std::string hook_prefix_;
  bool taps_on_ = false;
  AttentionOutput<T> taps_;
  Tensor<T> head_mask_;
};

// ---- Logit statistics (attention/logit_stats.cpp) ------------------------
// The largest attention logit of each head, max over b, i and visible j of q[b,h,i] . k[b,g(h),j] * scale
// (g(h) = h / (h / h_kv), GQA), over q (B, h, L, d), k (B, h_kv, S, d) -> (h). hidden (L, S) and
// key_padding (B, S), true = not visible, as in SdpaOptions; scale default 1 / sqrt(d). A head whose
// queries see no key gets -inf. Qiu et al. 2025's "max attention logit", for the taps.
template <typename T>
Array<T> max_attention_logit(const Array<T>& q, const Array<T>& k, const MaskArray* hidden,
                             const MaskArray* key_padding, std::optional<double> scale = std::nullopt);

// ---- KV cache (attention/cache.cpp) -----------------------------------
// One per layer. Stores keys and values of the kv heads only (or, for MLA, the
// latent c and the rotary key), with the absolute position of every entry.
// With a sliding window of W it keeps the sink entries (positions < sinks) plus
// the newest W others, evicting the oldest non-sink entry first, so its size
// stays at sinks + W however long the sequence grows.
template <typename T>
class KVCache {
 public:
  KVCache() = default;
  std::size_t length() const { return length_; }           // tokens seen so far (next position)
  std::size_t stored_tokens() const { return positions_.size(); }
  // Scalars stored per token for one sequence (2 h_kv d, or d_c + d_R for MLA).
  std::size_t elements_per_token() const;
  std::size_t stored_elements() const;  // all scalars actually held
  void clear();
  // Keeps batch rows `rows` (in that order, repeats allowed): row i of the
  // result is row rows[i] of before. Beam search reorders its beams this way.
  void select_rows(const std::vector<std::size_t>& rows);

  // Used by MultiHeadAttention: entries (B, heads, S, d) for K and V, or
  // (B, S, d_c) and (B, S, d_R) for MLA, as one "first" and one "second" array.
  // append() takes the new tokens' arrays (time on axis `time_axis`).
  const Array<T>& first() const { return first_; }
  const Array<T>& second() const { return second_; }
  const std::vector<std::int64_t>& positions() const { return positions_; }
  void append(const Array<T>& first, const Array<T>& second, std::size_t time_axis, std::size_t window,
              std::size_t sinks);

 private:
  Array<T> first_, second_;
  std::vector<std::int64_t> positions_;
  std::size_t length_ = 0;
  std::size_t per_token_ = 0;
};

// ---- Cost accounting (attention/cost.cpp) --------------------------------
struct AttentionCost {
  std::size_t parameters = 0;              // scalars in the module
  double forward_flops = 0;                // for one sequence of T tokens (self-attention), multiply+add = 2
  std::size_t kv_elements_per_token = 0;   // cached scalars per token per layer
};
// ValueError (naming the configuration) when the parameters pass a 64-bit count (d_model near 2^31).
AttentionCost attention_cost(const AttentionConfig& config, std::size_t seq_len);

}  // namespace headlab
