// models/transformer.cpp: encoder and decoder layers and the encoder-decoder model.
//
// Post-LN (Vaswani et al., nn.Transformer's default), per sub-layer:
//   x = LayerNorm(x + Dropout(Sublayer(x)))
// Pre-LN (norm_first):
//   x = x + Dropout(Sublayer(LayerNorm(x)))
// Feed-forward: linear2(dropout(activation(linear1(x))))   (B, T, D) -> (B, T, F) -> (B, T, D)
#include <cmath>

#include "headlab/models/transformer.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

void TransformerConfig::validate() const {
  auto bad = [](const std::string& why) { throw ValueError("transformer config: " + why); };
  if (d_model == 0) bad("d_model must be > 0");
  if (ff_dim == 0) bad("ff_dim must be > 0");
  if (!(dropout >= 0.0 && dropout < 1.0)) bad("dropout must be in [0, 1), got " + std::to_string(dropout));
  if (src_vocab == 0 || tgt_vocab == 0) bad("src_vocab and tgt_vocab must be > 0");
  if (tie_embeddings && src_vocab != tgt_vocab) {
    bad("tie_embeddings needs one vocabulary (src_vocab " + std::to_string(src_vocab) + ", tgt_vocab " +
        std::to_string(tgt_vocab) + ")");
  }
  AttentionConfig a = attention;
  a.d_model = d_model;
  a.validate();
}

namespace {

AttentionConfig layer_attention(const TransformerConfig& c, bool cross) {
  AttentionConfig a = c.attention;
  a.d_model = c.d_model;
  a.dropout = c.dropout;
  if (cross) {  // positions and windows are self-attention ideas
    a.rope = false;
    a.window = 0;
    a.sinks = 0;
    if (a.is_latent()) a.rope_dim = 0;
  }
  return a;
}

template <typename T>
Tensor<T> maybe_dropout(const Tensor<T>& x, double p, bool training, Generator* g) {
  if (!training || p == 0.0) return x;
  if (!g) throw ValueError("transformer: dropout in training needs a generator");
  return dropout(x, static_cast<T>(p), *g, true);
}

// linear2(dropout(activation(linear1(x))))   (B, T, D) -> (B, T, F) -> (B, T, D)
template <typename T>
Tensor<T> position_wise_ff(const Linear<T>& linear1, const Linear<T>& linear2, const TransformerConfig& c,
                           bool training, const Tensor<T>& x, Generator* g) {
  const Tensor<T> hidden = linear1.forward(x);
  const Tensor<T> act = c.activation == Activation::relu ? relu(hidden) : gelu(hidden);
  return linear2.forward(maybe_dropout(act, c.dropout, training, g));
}

template <typename T>
AttentionCall<T> with_generator(AttentionCall<T> call, Generator* g) {
  call.generator = g;
  return call;
}

}  // namespace

// ---- Encoder layer ------------------------------------------------------------
template <typename T>
TransformerEncoderLayer<T>::TransformerEncoderLayer(const TransformerConfig& c, Generator& gen)
    : self_attn(layer_attention(c, false), gen),
      cfg_(c),
      linear1(c.d_model, c.ff_dim, true, gen),
      linear2(c.ff_dim, c.d_model, true, gen),
      norm1(c.d_model, c.layer_norm_eps),
      norm2(c.d_model, c.layer_norm_eps) {
  this->register_module("self_attn", self_attn);
  if (!c.attention_only) {
    this->register_module("linear1", linear1);
    this->register_module("linear2", linear2);
  }
  this->register_module("norm1", norm1);
  if (!c.attention_only) this->register_module("norm2", norm2);
}

template <typename T>
Tensor<T> TransformerEncoderLayer<T>::feed_forward(const Tensor<T>& x, Generator* g) {
  return position_wise_ff(linear1, linear2, cfg_, this->is_training(), x, g);
}

template <typename T>
Tensor<T> TransformerEncoderLayer<T>::forward(const Tensor<T>& x, const AttentionCall<T>& call, Generator* g,
                                              KVCache<T>* cache) {
  Tensor<T> out = block(x, call, g, cache);
  if (taps_on_) output_tap_ = out.detach();
  return out;
}

template <typename T>
void TransformerEncoderLayer<T>::set_hooks(HookPoints<T>* hooks, const std::string& prefix) {
  hooks_ = hooks;
  hook_prefix_ = prefix;
  self_attn.set_hooks(hooks, prefix + "attn.");
}

// The hook points (point(): nothing without hooks) where TransformerLens has them.
template <typename T>
Tensor<T> TransformerEncoderLayer<T>::block(const Tensor<T>& x_in, const AttentionCall<T>& call, Generator* g,
                                            KVCache<T>* cache) {
  const bool tr = this->is_training();
  const AttentionCall<T> c = with_generator(call, g);
  const double p = cfg_.dropout;
  const Tensor<T> x = point("hook_resid_pre", x_in);
  if (cfg_.norm_first) {
    const Tensor<T> attn = point("hook_attn_out", self_attn.forward(norm1.forward(x), c, cache).output);
    if (cfg_.attention_only) return point("hook_resid_post", x + maybe_dropout(attn, p, tr, g));
    const Tensor<T> y = point("hook_resid_mid", x + maybe_dropout(attn, p, tr, g));
    const Tensor<T> mlp = point("hook_mlp_out", feed_forward(norm2.forward(y), g));
    return point("hook_resid_post", y + maybe_dropout(mlp, p, tr, g));
  }
  const Tensor<T> attn = point("hook_attn_out", self_attn.forward(x, c, cache).output);
  if (cfg_.attention_only) return point("hook_resid_post", norm1.forward(x + maybe_dropout(attn, p, tr, g)));
  const Tensor<T> y = point("hook_resid_mid", norm1.forward(x + maybe_dropout(attn, p, tr, g)));
  const Tensor<T> mlp = point("hook_mlp_out", feed_forward(y, g));
  return point("hook_resid_post", norm2.forward(y + maybe_dropout(mlp, p, tr, g)));
}

// ---- Decoder layer ------------------------------------------------------------
template <typename T>
TransformerDecoderLayer<T>::TransformerDecoderLayer(const TransformerConfig& c, Generator& gen)
    : self_attn(layer_attention(c, false), gen),
      multihead_attn(layer_attention(c, true), gen),
      cfg_(c),
      linear1(c.d_model, c.ff_dim, true, gen),
      linear2(c.ff_dim, c.d_model, true, gen),
      norm1(c.d_model, c.layer_norm_eps),
      norm2(c.d_model, c.layer_norm_eps),
      norm3(c.d_model, c.layer_norm_eps) {
  this->register_module("self_attn", self_attn);
  this->register_module("multihead_attn", multihead_attn);
  this->register_module("linear1", linear1);
  this->register_module("linear2", linear2);
  this->register_module("norm1", norm1);
  this->register_module("norm2", norm2);
  this->register_module("norm3", norm3);
}

template <typename T>
Tensor<T> TransformerDecoderLayer<T>::feed_forward(const Tensor<T>& x, Generator* g) {
  return position_wise_ff(linear1, linear2, cfg_, this->is_training(), x, g);
}

template <typename T>
Tensor<T> TransformerDecoderLayer<T>::forward(const Tensor<T>& x, const Tensor<T>& memory,
                                              const AttentionCall<T>& self_call, const AttentionCall<T>& cross_call,
                                              Generator* g, KVCache<T>* cache) {
  Tensor<T> out = block(x, memory, self_call, cross_call, g, cache);
  if (taps_on_) output_tap_ = out.detach();
  return out;
}

template <typename T>
Tensor<T> TransformerDecoderLayer<T>::block(const Tensor<T>& x_in, const Tensor<T>& memory,
                                            const AttentionCall<T>& self_call, const AttentionCall<T>& cross_call,
                                            Generator* g, KVCache<T>* cache) {
  const bool tr = this->is_training();
  const AttentionCall<T> sc = with_generator(self_call, g), cc = with_generator(cross_call, g);
  const double p = cfg_.dropout;
  const Tensor<T> x = point("hook_resid_pre", x_in);
  if (cfg_.norm_first) {
    const Tensor<T> attn = point("hook_attn_out", self_attn.forward(norm1.forward(x), sc, cache).output);
    const Tensor<T> y = point("hook_resid_mid", x + maybe_dropout(attn, p, tr, g));
    const Tensor<T> cross = point("hook_cross_attn_out", multihead_attn.forward(norm2.forward(y), memory, cc).output);
    const Tensor<T> z = point("hook_resid_mid_cross", y + maybe_dropout(cross, p, tr, g));
    const Tensor<T> mlp = point("hook_mlp_out", feed_forward(norm3.forward(z), g));
    return point("hook_resid_post", z + maybe_dropout(mlp, p, tr, g));
  }
  const Tensor<T> attn = point("hook_attn_out", self_attn.forward(x, sc, cache).output);
  const Tensor<T> y = point("hook_resid_mid", norm1.forward(x + maybe_dropout(attn, p, tr, g)));
  const Tensor<T> cross = point("hook_cross_attn_out", multihead_attn.forward(y, memory, cc).output);
  const Tensor<T> z = point("hook_resid_mid_cross", norm2.forward(y + maybe_dropout(cross, p, tr, g)));
  const Tensor<T> mlp = point("hook_mlp_out", feed_forward(z, g));
  return point("hook_resid_post", norm3.forward(z + maybe_dropout(mlp, p, tr, g)));
}

template <typename T>
void TransformerDecoderLayer<T>::set_hooks(HookPoints<T>* hooks, const std::string& prefix) {
  hooks_ = hooks;
  hook_prefix_ = prefix;
  self_attn.set_hooks(hooks, prefix + "attn.");
  multihead_attn.set_hooks(hooks, prefix + "cross_attn.");
}

// ---- Encoder-decoder ----------------------------------------------------------
template <typename T>
Transformer<T>::Transformer(const TransformerConfig& c, Generator& gen)
    : cfg_((c.validate(), c)),
      src_embed(c.src_vocab, c.d_model, gen),
      tgt_embed(c.tgt_vocab, c.d_model, gen),
      enc_norm_(c.d_model, c.layer_norm_eps),
      dec_norm_(c.d_model, c.layer_norm_eps),
      generator(c.d_model, c.tgt_vocab, true, gen) {
  for (std::size_t i = 0; i < c.encoder_layers; ++i) {
    enc_layers_.push_back(std::make_unique<TransformerEncoderLayer<T>>(c, gen));
    enc_list_.register_module(std::to_string(i), *enc_layers_.back());
  }
  for (std::size_t i = 0; i < c.decoder_layers; ++i) {
    dec_layers_.push_back(std::make_unique<TransformerDecoderLayer<T>>(c, gen));
    dec_list_.register_module(std::to_string(i), *dec_layers_.back());
  }
  encoder_.register_module("layers", enc_list_);
  encoder_.register_module("norm", enc_norm_);
  decoder_.register_module("layers", dec_list_);
  decoder_.register_module("norm", dec_norm_);
  if (c.tie_embeddings) {
    // Press & Wolf 2017, Vaswani et al. 3.4: one (V, D) matrix embeds both sides and projects to logits.
    tgt_embed.tie_parameter("weight", src_embed.parameter("weight"));
    generator.tie_parameter("weight", src_embed.parameter("weight"));
  }
  this->register_module("src_embed", src_embed);
  this->register_module("tgt_embed", tgt_embed);
  this->register_module("encoder", encoder_);
  this->register_module("decoder", decoder_);
  this->register_module("generator", generator);
}

namespace {
// table[ids] * sqrt(D) + PE[offset : offset + T] (unless rope), then dropout     (B, T) -> (B, T, D)
template <typename T>
Tensor<T> embed_tokens(const Embedding<T>& table, const IndexArray& ids, const TransformerConfig& c, bool training,
                       Generator* g, std::size_t offset, bool positions) {
  const Shape s = detail::shape_of(ids);
  if (s.size() != 2) throw ShapeError("embedding: token ids must be (B, T), got " + shape_str(s));
  if (offset + s[1] > c.max_len) {
    throw ShapeError("embedding: position " + std::to_string(offset + s[1] - 1) + " exceeds max_len " +
                     std::to_string(c.max_len) + " (ids " + shape_str(s) + ")");
  }
  Tensor<T> x = table.forward(ids) * static_cast<T>(std::sqrt(static_cast<double>(c.d_model)));
  if (positions) {
    const Array<T> pe = sinusoidal_positions<T>(offset + s[1], c.d_model);
    x = x + narrow(Tensor<T>(pe), 0, offset, s[1]);  // (T, D), broadcast over B
  }
  return maybe_dropout(x, c.dropout, training, g);
}
}  // namespace

template <typename T>
Tensor<T> Transformer<T>::embed(const Embedding<T>& table, const IndexArray& ids, Generator* g, std::size_t offset) {
  return embed_tokens(table, ids, cfg_, this->is_training(), g, offset, !cfg_.attention.rope);
}

template <typename T>
Tensor<T> Transformer<T>::encode(const IndexArray& src, const Masks& masks, Generator* g) {
  AttentionCall<T> call;
  call.key_padding_mask = masks.src_key_padding;
  Tensor<T> x = point("encoder.hook_embed", embed(src_embed, src, g));
  for (auto& layer : enc_layers_) x = layer->forward(x, call, g);
  return point("encoder.ln_final.hook_normalized", enc_norm_.forward(x));
}

template <typename T>
Tensor<T> Transformer<T>::decode(const Tensor<T>& memory, const IndexArray& tgt, const Masks& masks, Generator* g,
                                 std::vector<KVCache<T>>* caches) {
  if (caches && caches->size() != dec_layers_.size()) {
    throw ValueError("Transformer::decode: " + std::to_string(caches->size()) + " caches for " +
                     std::to_string(dec_layers_.size()) + " decoder layers");
  }
  AttentionCall<T> self_call, cross_call;
  self_call.causal = true;
  self_call.key_padding_mask = masks.tgt_key_padding;
  cross_call.key_padding_mask = masks.src_key_padding;
  const std::size_t offset = caches ? (*caches)[0].length() : 0;
  Tensor<T> y = point("decoder.hook_embed", embed(tgt_embed, tgt, g, offset));
  for (std::size_t i = 0; i < dec_layers_.size(); ++i)
    y = dec_layers_[i]->forward(y, memory, self_call, cross_call, g, caches ? &(*caches)[i] : nullptr);
  return point("decoder.ln_final.hook_normalized", dec_norm_.forward(y));
}

template <typename T>
void Transformer<T>::set_hooks(HookPoints<T>* hooks) {
  hooks_ = hooks;
  for (std::size_t i = 0; i < enc_layers_.size(); ++i) enc_layers_[i]->set_hooks(hooks, "encoder." + std::to_string(i) + ".");
  for (std::size_t i = 0; i < dec_layers_.size(); ++i) dec_layers_[i]->set_hooks(hooks, "decoder." + std::to_string(i) + ".");
}

template <typename T>
Tensor<T> Transformer<T>::forward(const IndexArray& src, const IndexArray& tgt, const Masks& masks, Generator* g) {
  return generator.forward(decode(encode(src, masks, g), tgt, masks, g));  // (B, T, V_tgt)
}

template <typename T>
IndexArray greedy_decode(Transformer<T>& model, const IndexArray& src, std::size_t max_len, std::int64_t start,
                         const std::optional<MaskArray>& src_key_padding) {
  NoGradGuard no_grad;
  const std::size_t B = src.shape()[0];
  Masks masks;
  masks.src_key_padding = src_key_padding;
  const Tensor<T> memory = model.encode(src, masks, nullptr);
  std::vector<KVCache<T>> caches(model.decoder_layers());
  IndexArray out = IndexArray::from_shape({B, max_len});
  out.fill(start);
  IndexArray next = IndexArray::from_shape({B, 1});
  next.fill(start);
  Masks step_masks;
  step_masks.src_key_padding = src_key_padding;
  for (std::size_t t = 1; t < max_len; ++t) {
    // One new token per row: its logits (B, 1, V) pick the next token.
    const Tensor<T> logits = model.project(model.decode(memory, next, step_masks, nullptr, &caches));
    const Array<T>& lv = logits.value();
    const std::size_t V = lv.shape()[2];
    for (std::size_t b = 0; b < B; ++b) {
      const T* row = lv.data() + b * V;
      std::size_t best = 0;
      for (std::size_t v = 1; v < V; ++v)
        if (row[v] > row[best]) best = v;  // first maximum on ties
      out(b, t) = static_cast<std::int64_t>(best);
      next(b, 0) = static_cast<std::int64_t>(best);
    }
  }
  return out;
}

template <typename T>
DecoderOnlyLM<T>::DecoderOnlyLM(const TransformerConfig& c, Generator& gen)
    : cfg_(c),
      embed_(c.tgt_vocab, c.d_model, gen),
      norm_(c.d_model, c.layer_norm_eps),
      lm_head_(c.d_model, c.tgt_vocab, true, gen) {
  TransformerConfig check = c;
  check.src_vocab = check.src_vocab ? check.src_vocab : 1;
  check.validate();
  for (std::size_t i = 0; i < c.decoder_layers; ++i) {
    layers_.push_back(std::make_unique<TransformerEncoderLayer<T>>(c, gen));
    list_.register_module(std::to_string(i), *layers_.back());
  }
  this->register_module("embed", embed_);
  this->register_module("layers", list_);
  this->register_module("norm", norm_);
  this->register_module("lm_head", lm_head_);
}

template <typename T>
Tensor<T> DecoderOnlyLM<T>::forward(const IndexArray& ids, Generator* g, std::vector<KVCache<T>>* caches) {
  if (caches && caches->size() != layers_.size()) {
    throw ValueError("DecoderOnlyLM: " + std::to_string(caches->size()) + " caches for " +
                     std::to_string(layers_.size()) + " layers");
  }
  const std::size_t offset = caches ? (*caches)[0].length() : 0;
  Tensor<T> x = point("hook_embed", embed_tokens(embed_, ids, cfg_, this->is_training(), g, offset, !cfg_.attention.rope));
  AttentionCall<T> call;
  call.causal = true;
  for (std::size_t i = 0; i < layers_.size(); ++i) x = layers_[i]->forward(x, call, g, caches ? &(*caches)[i] : nullptr);
  return lm_head_.forward(point("ln_final.hook_normalized", norm_.forward(x)));  // (B, T, V)
}

template <typename T>
void DecoderOnlyLM<T>::set_hooks(HookPoints<T>* hooks) {
  hooks_ = hooks;
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->set_hooks(hooks, "blocks." + std::to_string(i) + ".");
}

template IndexArray greedy_decode<float>(Transformer<float>&, const IndexArray&, std::size_t, std::int64_t,
                                         const std::optional<MaskArray>&);
template IndexArray greedy_decode<double>(Transformer<double>&, const IndexArray&, std::size_t, std::int64_t,
                                          const std::optional<MaskArray>&);
template class DecoderOnlyLM<float>;
template class DecoderOnlyLM<double>;
template class TransformerEncoderLayer<float>;
template class TransformerEncoderLayer<double>;
template class TransformerDecoderLayer<float>;
template class TransformerDecoderLayer<double>;
template class Transformer<float>;
template class Transformer<double>;

}  // namespace headlab
