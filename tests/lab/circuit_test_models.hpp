// circuit_test_models.hpp: helpers of the planted-circuit tests (test_circuits.cpp,
// test_circuits_recall.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <string>

#include <xtensor/xview.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/random.hpp"
#include "headlab/lab/circuit_probe.hpp"
#include "headlab/models/transformer.hpp"

namespace headlab::testing {

// Both planted circuits have 3 heads of 16 per layer.
inline constexpr std::size_t kHeads = 3, kHeadDim = 16;

// An attention-only pre-LN decoder of 3 heads of 16 with RoPE, every weight 0 and every norm's scale 1:
// the blank the planted circuits are written into.
inline std::unique_ptr<DecoderOnlyLM<float>> blank_planted_model(std::size_t d_model, std::size_t layers,
                                                                 double rope_base, std::size_t vocab, Generator& gen) {
  TransformerConfig c;
  c.d_model = d_model;
  c.ff_dim = 8;
  c.decoder_layers = layers;
  c.attention_only = true;
  c.norm_first = true;
  c.dropout = 0.0;
  c.attention.num_heads = kHeads;
  c.attention.head_dim = kHeadDim;
  c.attention.rope = true;
  c.attention.rope_base = rope_base;
  c.src_vocab = c.tgt_vocab = vocab;
  c.max_len = 64;
  auto m = std::make_unique<DecoderOnlyLM<float>>(c, gen);
  m->eval();
  for (auto& [name, p] : m->named_parameters()) {
    const bool norm = name.find("norm") != std::string::npos && name.find("weight") != std::string::npos;
    p.mutable_value().fill(norm ? 1.0f : 0.0f);
  }
  return m;
}

// The parameter of `m` named `name` (a handle: setting its values sets the model's).
inline Tensor<float> param(DecoderOnlyLM<float>& m, const std::string& name) {
  for (const auto& [n, t] : m.named_parameters())
    if (n == name) return t;
  throw ValueError("no parameter " + name);
}

// The share of the probe's clean sequences whose answer is the model's argmax at probe.position.
inline double clean_accuracy(DecoderOnlyLM<float>& m, const CircuitProbe& probe) {
  NoGradGuard no_grad;
  const Array<float> logits = m.forward(probe.clean, nullptr).value();
  double right = 0;
  for (std::size_t b = 0; b < probe.clean_answer.size(); ++b) {
    const auto row = xt::view(logits, b, probe.position, xt::all());
    right += std::size_t(std::distance(row.begin(), std::max_element(row.begin(), row.end()))) ==
             std::size_t(probe.clean_answer[b]);
  }
  return right / double(probe.clean_answer.size());
}

}  // namespace headlab::testing
