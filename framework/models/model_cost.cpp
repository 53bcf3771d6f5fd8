// model_cost.cpp: forward FLOPs per target token of the encoder-decoder and the decoder-only model.
//
// Per layer, with T tokens, D = d_model, F = ff_dim (multiply + add = 2):
//   self-attention        attention_cost(attention, T).forward_flops
//   cross-attention       2 T D (h d) [q] + 4 S D (h_kv d) [k, v] + 4 T S h d [scores, sum] + 2 T (h d) D [out]
//   feed-forward          4 T D F
//   generator             2 T D V
#include "headlab/models/transformer.hpp"

namespace headlab {

namespace {
AttentionConfig sized(const TransformerConfig& c) {
  AttentionConfig a = c.attention;
  a.d_model = c.d_model;
  return a;
}
double feed_forward_flops(const TransformerConfig& c, double tokens) {
  return c.attention_only ? 0.0 : 4 * tokens * double(c.d_model) * double(c.ff_dim);
}
}  // namespace

double transformer_flops_per_token(const TransformerConfig& c, std::size_t src_len, std::size_t tgt_len) {
  const AttentionConfig a = sized(c);
  const double S = double(src_len), T = double(tgt_len), D = double(c.d_model);
  const double hd = double(a.num_heads * a.dim_head()), hkvd = double(a.kv_heads() * a.dim_head());
  const double encoder = double(c.encoder_layers) * (attention_cost(a, src_len).forward_flops + feed_forward_flops(c, S));
  const double cross = 2 * T * D * hd + 4 * S * D * hkvd + 4 * T * S * hd + 2 * T * hd * D;
  const double decoder =
      double(c.decoder_layers) * (attention_cost(a, tgt_len).forward_flops + cross + feed_forward_flops(c, T));
  const double generator = 2 * T * D * double(c.tgt_vocab);
  return tgt_len ? (encoder + decoder + generator) / T : 0.0;
}

double decoder_only_flops_per_token(const TransformerConfig& c, std::size_t len) {
  const AttentionConfig a = sized(c);
  const double T = double(len), D = double(c.d_model);
  const double layers = double(c.decoder_layers) * (attention_cost(a, len).forward_flops + feed_forward_flops(c, T));
  return len ? (layers + 2 * T * D * double(c.tgt_vocab)) / T : 0.0;
}

}  // namespace headlab
