// untrained_model.hpp: a freshly initialised model of some options, as load_trained_model would
// give it (eval mode), for the head-lab tests that need a model but no training.
#pragma once

#include <cstdint>
#include <memory>

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

}  // namespace headlab::testing
