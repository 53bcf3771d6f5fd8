// headlab/train/copy_task.hpp: the copy task (The Annotated Transformer).
//
// Sequences of `length` tokens, column 0 the start symbol 1, the rest uniform in [1, vocab) (id 0 is
// <pad>); the encoder-decoder model reads the sequence and must write it back:
//   decoder input tgt[:, :-1], targets tgt[:, 1:], greedy decoding from the start symbol.
// Exact match = the fraction of held-out sequences decoded without a single error.
//
// One step:  batch ~ data_rng;  logits = model(src, tgt[:, :-1])            (B, L-1, V)
//            loss = cross_entropy(logits, tgt[:, 1:], ignore <pad>, smoothing)
// (the rest of the step and the run is the shared loop's: headlab/train/trainer.hpp).
#pragma once

#include <ostream>

#include "headlab/core/random.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

struct TrainResult;

// (B, length) sequences of the copy task drawn from gen.
IndexArray copy_task_batch(Generator& gen, std::size_t batch, std::size_t length, std::size_t vocab);
// Fraction of rows of `data` that greedy decoding reproduces exactly.
double copy_exact_match(Transformer<float>& model, const IndexArray& data);
// Held-out sequences of a run: the same ones its training evaluated on (a generator of their own).
IndexArray held_out_sequences(const TrainOptions& options, std::size_t count);
// Trains (or resumes) the copy task; stops early at 100% held-out exact match (stop_at_perfect).
TrainResult train_copy(const TrainOptions& options, std::ostream& log);

}  // namespace headlab
