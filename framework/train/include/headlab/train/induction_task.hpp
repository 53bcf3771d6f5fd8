// headlab/train/induction_task.hpp: the induction task on a decoder-only model (Olsson et al. 2022).
//
// A decoder-only model reads [<s>] r_1..r_k r_1..r_k x_1..x_{2(T-k)}, all tokens uniform over the ids
// [2, vocab), with the block length k drawn per sequence from [ceil(T/2), T], and predicts every next
// token. Random tokens cannot be predicted (loss ~ ln(vocab - 2)); from r_2 of the second copy on, a
// model that finds the earlier copy of the current token and reads the token after it (an induction
// head) predicts perfectly. Varying k matters: with a fixed k a single layer solves the task by
// attending a fixed distance back.
//
// One step:  logits = model(seq[:, :-1])                 (B, 2T, V), causal
//            loss = cross_entropy(logits, seq[:, 1:])     over all 2T targets
#pragma once

#include <ostream>
#include <vector>

#include "headlab/core/random.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

struct TrainResult;

// sequences (B, 2 T + 1): column 0 is <s> (id 1), then k_b ids uniform in [2, vocab), the same k_b ids
// again, then 2 (T - k_b) more uniform ids; blocks[b] = k_b, uniform in [ceil(T/2), T] (T when
// fixed_block). T = max_block.
struct InductionBatch {
  IndexArray sequences;
  std::vector<std::size_t> blocks;
};
InductionBatch induction_batch(Generator& gen, std::size_t batch, std::size_t max_block, std::size_t vocab,
                               bool fixed_block = false);
struct InductionScore {
  double loss = 0;               // mean next-token loss over all 2T targets
  double first_half_loss = 0;    // targets r_1..r_k of the first copy
  double repeated_loss = 0;      // targets r_2..r_k of the second copy (the predictable ones)
  double repeated_accuracy = 0;  // argmax = target over those
};
// The scores of a decoder-only model on induction sequences (eval mode, no graph).
InductionScore induction_eval(DecoderOnlyLM<float>& model, const InductionBatch& batch);
// The held-out induction sequences of a run (a generator of their own).
InductionBatch held_out_induction_sequences(const TrainOptions& options, std::size_t count);
TrainResult train_induction(const TrainOptions& options, std::ostream& log);

}  // namespace headlab
