// small_models.hpp: the small models several test files build.
#pragma once

#include <cstdint>
#include <memory>

#include "headlab/core/random.hpp"
#include "headlab/models/transformer.hpp"

namespace headlab::testing {

// An encoder-decoder of d_model 16, 2 heads, ff 32, 2 + 2 layers, dropout 0, over `vocab` tokens,
// with weights drawn N(0, 0.5^2): larger than the default init, so next-token distributions are
// sharp and the orderings decoders compare matter.
template <typename T>
std::unique_ptr<Transformer<T>> small_transformer(std::size_t vocab, std::uint64_t seed) {
  TransformerConfig c;
  c.d_model = 16;
  c.ff_dim = 32;
  c.encoder_layers = c.decoder_layers = 2;
  c.dropout = 0.0;
  c.attention.num_heads = 2;
  c.src_vocab = c.tgt_vocab = vocab;
  c.max_len = 32;
  Generator gen(seed);
  auto model = std::make_unique<Transformer<T>>(c, gen);
  for (auto& [name, p] : model->named_parameters())
    for (auto& v : p.mutable_value()) v = static_cast<T>(0.5 * gen.normal());
  return model;
}

}  // namespace headlab::testing
