// headlab/models/transformer.hpp: transformer models built from attention and layers, named as in PyTorch.
//
// Parameter names match torch.nn so that a state dict lines up key for key:
//   TransformerEncoderLayer: self_attn.*, linear1.*, linear2.*, norm1.*, norm2.*
//   TransformerDecoderLayer: self_attn.*, multihead_attn.*, linear1.*, linear2.*, norm1..3.*
//   Encoder / Decoder: layers.<i>.*, norm.*  (the final LayerNorm of nn.Transformer)
// Shapes are batch first: (B, T, D).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headlab/attention/attention.hpp"
#include "headlab/nn/layers.hpp"

namespace headlab {

enum class Activation { relu, gelu };

struct TransformerConfig {
  std::size_t d_model = 64;
  std::size_t ff_dim = 256;
  std::size_t encoder_layers = 2;
  std::size_t decoder_layers = 2;
  double dropout = 0.1;
  Activation activation = Activation::relu;
  bool norm_first = false;          // false: post-LN (Vaswani et al.); true: pre-LN
  double layer_norm_eps = 1e-5;
  AttentionConfig attention;        // heads, kv heads, head_dim, gate, window, ... (d_model is filled in)
  std::size_t src_vocab = 0, tgt_vocab = 0;
  std::size_t max_len = 512;
  bool tie_embeddings = false;      // one matrix for src_embed, tgt_embed and generator.weight (needs src_vocab == tgt_vocab)
  bool attention_only = false;      // DecoderOnlyLM: layers without the feed-forward block (x + attn(x) only),
                                    // the attention-only models of induction-head studies
  void validate() const;            // throws ValueError naming the field
};

struct Masks {
  std::optional<MaskArray> src_key_padding;  // (B, S) true = pad
  std::optional<MaskArray> tgt_key_padding;  // (B, T) true = pad
};

template <typename T>
class TransformerEncoderLayer : public Module<T> {
 public:
  TransformerEncoderLayer(const TransformerConfig& c, Generator& gen);
  // cache: for causal use one token (or chunk) at a time (decoder-only models).
  Tensor<T> forward(const Tensor<T>& x, const AttentionCall<T>& call, Generator* dropout_gen,
                    KVCache<T>* cache = nullptr);
  MultiHeadAttention<T> self_attn;
  // Taps for analysis: when on, each forward keeps its output (B, T, D), the residual stream after the layer.
  void set_taps(bool on) { taps_on_ = on; }
  const Tensor<T>& last_output() const { return output_tap_; }
  // Named activation points under `prefix` (e.g. "blocks.0."), all (B, T, D): hook_resid_pre,
  // hook_attn_out, hook_resid_mid (not in attention-only layers), hook_mlp_out, hook_resid_post;
  // the attention's under prefix + "attn." (MultiHeadAttention::set_hooks). nullptr turns them off.
  void set_hooks(HookPoints<T>* hooks, const std::string& prefix);

 private:
  Tensor<T> block(const Tensor<T>& x, const AttentionCall<T>& call, Generator* g, KVCache<T>* cache);
  Tensor<T> feed_forward(const Tensor<T>& x, Generator* g);
  Tensor<T> point(const char* name, const Tensor<T>& x) const { return hooks_ ? hooks_->at(hook_prefix_ + name, x) : x; }
  HookPoints<T>* hooks_ = nullptr;
  std::string hook_prefix_;
  bool taps_on_ = false;
  Tensor<T> output_tap_;
  const TransformerConfig cfg_;
  Linear<T> linear1, linear2;
  LayerNorm<T> norm1, norm2;
};

template <typename T>
class TransformerDecoderLayer : public Module<T> {
 public:
  TransformerDecoderLayer(const TransformerConfig& c, Generator& gen);
  // self_call carries the causal flag and target padding; cross_call the memory padding.
  Tensor<T> forward(const Tensor<T>& x, const Tensor<T>& memory, const AttentionCall<T>& self_call,
                    const AttentionCall<T>& cross_call, Generator* dropout_gen, KVCache<T>* cache = nullptr);
  MultiHeadAttention<T> self_attn, multihead_attn;
  // Taps for analysis: when on, each forward keeps its output (B, T, D), the residual stream after the layer.
  void set_taps(bool on) { taps_on_ = on; }
  const Tensor<T>& last_output() const { return output_tap_; }
  // Named activation points under `prefix` (e.g. "decoder.0."), all (B, T, D): hook_resid_pre,
  // hook_attn_out, hook_resid_mid, hook_cross_attn_out, hook_resid_mid_cross, hook_mlp_out,
  // hook_resid_post; self-attention's under prefix + "attn.", cross-attention's under
  // prefix + "cross_attn.". nullptr turns them off.
  void set_hooks(HookPoints<T>* hooks, const std::string& prefix);

 private:
  Tensor<T> block(const Tensor<T>& x, const Tensor<T>& memory, const AttentionCall<T>& self_call,
                  const AttentionCall<T>& cross_call, Generator* g, KVCache<T>* cache);
  Tensor<T> feed_forward(const Tensor<T>& x, Generator* g);
  Tensor<T> point(const char* name, const Tensor<T>& x) const { return hooks_ ? hooks_->at(hook_prefix_ + name, x) : x; }
  HookPoints<T>* hooks_ = nullptr;
  std::string hook_prefix_;
  bool taps_on_ = false;
  Tensor<T> output_tap_;
  const TransformerConfig cfg_;
  Linear<T> linear1, linear2;
  LayerNorm<T> norm1, norm2, norm3;
};

// The encoder-decoder of Vaswani et al.: embeddings scaled by sqrt(D) plus
// sinusoidal positions, N encoder and N decoder layers (each stack ending in a
// LayerNorm, as nn.Transformer does), and a generator Linear(D, V_tgt).
// Names: src_embed.weight, tgt_embed.weight, encoder.layers.<i>.*, encoder.norm.*,
// decoder.layers.<i>.*, decoder.norm.*, generator.weight, generator.bias.
template <typename T>
class Transformer : public Module<T> {
 public:
  Transformer(const TransformerConfig& c, Generator& gen);
  const TransformerConfig& config() const { return cfg_; }
  // src (B, S), tgt (B, T) ids -> logits (B, T, V_tgt); the decoder is causal.
  Tensor<T> forward(const IndexArray& src, const IndexArray& tgt, const Masks& masks, Generator* dropout_gen);
  Tensor<T> encode(const IndexArray& src, const Masks& masks, Generator* dropout_gen);
  // Decoder states (B, T, D) for tgt given the encoder memory. With caches (one
  // per decoder layer), tgt holds only the new tokens, placed after the cached ones.
  Tensor<T> decode(const Tensor<T>& memory, const IndexArray& tgt, const Masks& masks, Generator* dropout_gen,
                   std::vector<KVCache<T>>* caches = nullptr);
  Tensor<T> project(const Tensor<T>& states) const { return generator.forward(states); }  // -> logits
  std::size_t decoder_layers() const { return dec_layers_.size(); }
  std::size_t encoder_layers() const { return enc_layers_.size(); }
  TransformerEncoderLayer<T>& encoder_layer(std::size_t i) { return *enc_layers_.at(i); }
  TransformerDecoderLayer<T>& decoder_layer(std::size_t i) { return *dec_layers_.at(i); }
  // Named activation points (docs/circuits.md): encoder.hook_embed, encoder.{l}.*,
  // encoder.ln_final.hook_normalized, decoder.hook_embed, decoder.{l}.*, decoder.ln_final.hook_normalized
  // (all (B, T, D); layer and attention points as their set_hooks say). nullptr turns them off.
  void set_hooks(HookPoints<T>* hooks);
  // The decoder's final norm and the generator, for analysis that reads the decoder's stream.
  const LayerNorm<T>& final_norm() const { return dec_norm_; }
  const Linear<T>& unembed() const { return generator; }

 private:
  Tensor<T> embed(const Embedding<T>& table, const IndexArray& ids, Generator* g, std::size_t offset = 0);
  Tensor<T> point(const std::string& name, const Tensor<T>& x) const { return hooks_ ? hooks_->at(name, x) : x; }
  HookPoints<T>* hooks_ = nullptr;
  const TransformerConfig cfg_;
  Embedding<T> src_embed, tgt_embed;
  std::vector<std::unique_ptr<TransformerEncoderLayer<T>>> enc_layers_;
  std::vector<std::unique_ptr<TransformerDecoderLayer<T>>> dec_layers_;
  LayerNorm<T> enc_norm_, dec_norm_;
  Linear<T> generator;
  struct Stack : Module<T> {
    using Module<T>::register_module;
  } encoder_, decoder_, enc_list_, dec_list_;
};

// Greedy decoding with a KV cache: starts every row with `start`, appends the
// most likely next token until `max_len` tokens (start included). src (B, S)
// -> (B, max_len). Runs without recording a graph.
template <typename T>
IndexArray greedy_decode(Transformer<T>& model, const IndexArray& src, std::size_t max_len, std::int64_t start,
                         const std::optional<MaskArray>& src_key_padding = std::nullopt);

// A decoder-only language model: embed.weight, layers.<i>.* (causal
// self-attention blocks named like TransformerEncoderLayer), norm.*, lm_head.*.
// Positions are sinusoidal unless the attention uses rope.
template <typename T>
class DecoderOnlyLM : public Module<T> {
 public:
  // Uses d_model, ff_dim, decoder_layers, dropout, activation, norm_first,
  // attention and tgt_vocab (the vocabulary) of the config.
  DecoderOnlyLM(const TransformerConfig& c, Generator& gen);
  // ids (B, T) -> logits (B, T, V). With caches (one per layer), ids are the new tokens only.
  Tensor<T> forward(const IndexArray& ids, Generator* dropout_gen, std::vector<KVCache<T>>* caches = nullptr);
  std::size_t layers() const { return layers_.size(); }
  TransformerEncoderLayer<T>& layer(std::size_t i) { return *layers_.at(i); }
  const TransformerConfig& config() const { return cfg_; }
  // Named activation points, TransformerLens's names (docs/circuits.md): hook_embed (B, T, D), the
  // token embedding times sqrt(D) plus positions; blocks.{l}.* (TransformerEncoderLayer::set_hooks);
  // ln_final.hook_normalized (B, T, D), what lm_head reads. nullptr turns them off.
  void set_hooks(HookPoints<T>* hooks);
  // The final norm and the unembedding, for analysis that reads the residual stream (logit lens).
  const LayerNorm<T>& final_norm() const { return norm_; }
  const Linear<T>& unembed() const { return lm_head_; }

 private:
  Tensor<T> point(const char* name, const Tensor<T>& x) const { return hooks_ ? hooks_->at(name, x) : x; }
  HookPoints<T>* hooks_ = nullptr;
  const TransformerConfig cfg_;
  Embedding<T> embed_;
  std::vector<std::unique_ptr<TransformerEncoderLayer<T>>> layers_;
  LayerNorm<T> norm_;
  Linear<T> lm_head_;
  struct Stack : Module<T> {
    using Module<T>::register_module;
  } list_;
};

// ---- Cost (models/model_cost.cpp) ---------------------------------------------------
// Forward FLOPs (multiply + add = 2) of one example divided by its target tokens:
// the encoder over src_len tokens, the decoder over tgt_len (self-attention,
// cross-attention to src_len keys, feed-forward) and the generator. Unmasked
// score matrices are counted in full. The decoder-only form has no encoder or
// cross-attention (and no feed-forward when attention_only).
double transformer_flops_per_token(const TransformerConfig& c, std::size_t src_len, std::size_t tgt_len);
double decoder_only_flops_per_token(const TransformerConfig& c, std::size_t len);

}  // namespace headlab
