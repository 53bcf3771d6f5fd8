// headlab/train/trainer.hpp: the copy task and the training loop behind `headlab train`.
//
// The copy task (The Annotated Transformer): sequences of `length` tokens,
// column 0 the start symbol 1, the rest uniform in [1, vocab) (id 0 is <pad>);
// the model reads the sequence and must write it back:
//   decoder input tgt[:, :-1], targets tgt[:, 1:], greedy decoding from the start symbol.
// Exact match = the fraction of held-out sequences decoded without a single error.
//
// The translation task (train/translate_task.cpp) reads a two-column TSV
// parallel corpus (--train, --valid, optionally --test), builds word
// vocabularies from the training side (headlab/data/text.hpp), batches by a token
// budget (headlab/data/batching.hpp), reports validation loss and greedy BLEU as it
// trains, keeps the best-BLEU weights, and ends with test BLEU, greedy and beam.
//
// The induction task (train/induction_task.cpp; Olsson et al. 2022): a
// decoder-only model reads [<s>] r_1..r_k r_1..r_k x_1..x_{2(T-k)}, all tokens
// uniform over the ids [2, vocab), with the block length k drawn per sequence
// from [ceil(T/2), T], and predicts every next token. Random tokens cannot be
// predicted (loss ~ ln(vocab - 2)); from r_2 of the second copy on, a model
// that finds the earlier copy of the current token and reads the token after it
// (an induction head) predicts perfectly. Varying k matters: with a fixed k a
// single layer solves the task by attending a fixed distance back.
//
// Every run directory ends with summary.json: task, steps, train_seconds,
// valid_loss, valid_accuracy (copy: exact match; induction: repeated-half
// accuracy), valid_bleu (translate), parameters, flops_per_token, interrupted.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "headlab/models/transformer.hpp"
#include "headlab/train/options.hpp"
#include "headlab/core/tensor.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/decoding.hpp"

namespace headlab {

class Generator;
class TensorFile;


struct TrainResult {
  std::size_t steps_done = 0;
  std::vector<double> losses;  // one per step, from step 1 (resumed runs include the earlier ones)
  double exact_match = 0.0;    // copy: held-out exact match of the final weights
  // induction: held-out loss over all targets, over the predictable repeated half (r_2..r_T of the
  // second copy) and over the first half, and accuracy on the repeated half (last evaluation).
  double repeated_loss = 0.0, first_half_loss = 0.0, repeated_accuracy = 0.0;
  double seconds = 0.0;        // wall time of this call
  // translate: the best validation BLEU (x100), its validation loss, and test BLEU of those weights.
  double valid_bleu = 0.0, valid_loss = 0.0, test_bleu_greedy = 0.0, test_bleu_beam = 0.0;
  double train_seconds = 0.0;  // training time, evaluation excluded
  bool interrupted = false;    // stopped early by request_stop() (SIGINT/SIGTERM in the CLI)
};

// Stop requests. The training loops check after every step: when one is pending,
// they save the checkpoint (with a run directory) and return with interrupted =
// true, clearing the request. request_stop is async-signal-safe, so a SIGINT or
// SIGTERM handler may call it; a request made before train() stops it after one step.
void request_stop();
bool stop_requested();
void clear_stop_request();

// (B, length) sequences of the copy task drawn from gen.
IndexArray copy_task_batch(Generator& gen, std::size_t batch, std::size_t length, std::size_t vocab);
// Fraction of rows of `data` that greedy decoding reproduces exactly.
double copy_exact_match(Transformer<float>& model, const IndexArray& data);

// Trains (or resumes) as the options say, printing progress to `log`.
TrainResult train(const TrainOptions& options, std::ostream& log);

// A trained model read back from a run's checkpoint (strictly validated), with
// the options it was trained with. The model is in eval mode.
struct LoadedModel {
  TrainOptions options;
  std::unique_ptr<Transformer<float>> model;  // copy and translate
  std::unique_ptr<DecoderOnlyLM<float>> lm;   // induction
  std::size_t step = 0;
  Vocabulary src_vocab, tgt_vocab;  // translation models (the copy task has none)
};
LoadedModel load_trained_model(const std::string& checkpoint_path);
// The same on a checkpoint already in memory (parse_safetensors_bytes; a fuzzing entry point).
LoadedModel load_trained_model(const TensorFile& checkpoint);
// Held-out sequences of a run: the same ones its training evaluated on.
IndexArray held_out_sequences(const TrainOptions& options, std::size_t count);

// ---- Translation (train/translate_task.cpp) ----------------------------------
TrainResult train_translation(const TrainOptions& options, std::ostream& log);

// A pair as model ids: source + </s>, and <s> + target + </s>.
EncodedPair encode_pair(const Vocabulary& src_vocab, const Vocabulary& tgt_vocab, const ParallelPair& pair);
// Mean token negative log-likelihood (no smoothing) over `pairs`, in eval mode, without a graph.
double translation_loss(Transformer<float>& model, const std::vector<EncodedPair>& pairs, std::size_t max_tokens);

// ---- Induction (train/induction_task.cpp) ---------------------------------------
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

// Tokenizes, encodes (+ </s>), decodes (greedy, or beam when options.beam > 1)
// in length-sorted chunks of `chunk` sentences, and returns each output's tokens
// in input order. Throws ValueError naming the sentence when one is longer than
// the model allows.
std::vector<std::vector<std::string>> translate_sentences(Transformer<float>& model, const Vocabulary& src_vocab,
                                                          const Vocabulary& tgt_vocab,
                                                          const std::vector<std::string>& sentences,
                                                          const DecodeOptions& options, std::size_t chunk = 64);

}  // namespace headlab
