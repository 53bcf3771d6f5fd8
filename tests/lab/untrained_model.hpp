// untrained_model.hpp: a freshly initialised model of some options, as load_trained_model would
// give it (eval mode), for the head-lab tests that need a model but no training.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/core/random.hpp"
#include "headlab/train/checkpoint.hpp"

namespace headlab::testing {

// Induction: a decoder-only model; copy and translate: an encoder-decoder.
inline LoadedModel untrained_model(const TrainOptions& o, std::uint64_t seed) {
  LoadedModel m;
  m.options = o;
  Generator gen(seed);
  if (o.task == Task::induction) {
    TransformerConfig c = o.model_config();
    m.lm = std::make_unique<DecoderOnlyLM<float>>(c, gen);
    m.lm->eval();
  } else {
    m.model = std::make_unique<Transformer<float>>(o.model_config(), gen);
    m.model->eval();
  }
  return m;
}

// A decoder-only model's parameter by its state-dict name ("layers.0.self_attn.in_proj_weight"),
// sharing storage with the model: set weights by hand through mutable_value().
inline Tensor<float> lm_parameter(LoadedModel& m, const std::string& name) {
  for (const auto& [n, t] : m.lm->named_parameters())
    if (n == name) return t;
  throw ValueError("lm_parameter: no parameter " + name);
}

}  // namespace headlab::testing
