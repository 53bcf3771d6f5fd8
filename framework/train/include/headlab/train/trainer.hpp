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
#include "headlab/core/tensor.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/decoding.hpp"

namespace headlab {

class Generator;
class TensorFile;

struct TrainOptions {
  // Task.
  std::string task = "copy";   // copy | translate | induction
  std::size_t vocab = 11;      // copy task: id 0 <pad>, 1 <s> (also a symbol), symbols 1..vocab-1
  std::size_t length = 10;     // copy task: tokens per sequence, start symbol included; induction: the block T
  // Translation task: a TSV corpus `source<TAB>target`, word vocabularies from the training side.
  std::string train_file, valid_file, test_file;  // test is optional (test BLEU at the end)
  std::size_t min_freq = 2;       // rarer training tokens become <unk>
  std::size_t max_tokens = 1024;  // batch budget: sentences x longest side <= max_tokens
  std::size_t max_len = 64;       // longest sequence (ids incl. <s>/</s>); longer training pairs are skipped
  double time_budget = 0;         // seconds before stopping (translate: training steps only; copy: wall time); 0 = none
  std::size_t beam = 4;           // beam size for the final test BLEU
  double length_penalty = 0.6;    // GNMT alpha for beam search
  std::size_t eval_sentences = 0; // validation sentences decoded for BLEU (0 = all)
  // Model (an encoder-decoder Transformer).
  std::size_t d_model = 64;
  std::size_t heads = 4;
  std::size_t kv_heads = 0;    // 0 = heads
  std::size_t head_dim = 0;    // 0 = d_model / heads
  std::string gate = "none";   // none | headwise | elementwise
  std::size_t ff_dim = 256;
  std::size_t layers = 2;      // encoder and decoder layers each
  double dropout = 0.0;
  bool norm_first = false;
  bool tie_embeddings = false; // one matrix for both embeddings and the generator
  bool attention_only = false; // induction: layers without feed-forward blocks
  bool rope = false;           // rotary positions on q and k instead of sinusoidal embeddings (relative positions only)
  bool tiled_attention = false;  // the tiled (flash) SDPA kernel wherever it applies: less memory, faster
  // Optimisation: Adam (0.9, 0.98, 1e-9) with the Noam schedule.
  std::size_t steps = 2000;   // at most: stops early at 100% held-out exact match
  std::size_t batch = 64;
  double lr_factor = 0.5;
  std::size_t warmup = 100;
  double label_smoothing = 0.0;
  double clip_norm = 1.0;      // 0 = no clipping
  std::uint64_t seed = 1;
  // Evaluation, logging and checkpoints.
  std::size_t eval_every = 100;       // greedy exact match on held-out sequences
  std::size_t eval_sequences = 1000;
  bool stop_at_perfect = true;        // stop once held-out exact match reaches 100%
  std::string run_dir;                // "" = no files; else config, metrics.jsonl, checkpoint.safetensors
  std::size_t save_every = 0;         // steps between checkpoints (0 = only at the end)
  bool resume = false;                // continue from run_dir/checkpoint.safetensors
  std::string progress = "auto";      // auto | bar | lines | none
  // Not part of the saved options (a debugging switch): check every op for NaN/inf (headlab/core/anomaly.hpp).
  bool detect_anomaly = false;

  // Per-task defaults: the translation task trains a larger model with dropout and label smoothing.
  static TrainOptions defaults_for(const std::string& task);
  TransformerConfig model_config() const;  // copy and induction tasks: vocabularies of `vocab` ids
  TransformerConfig model_config(std::size_t src_vocab, std::size_t tgt_vocab) const;
  void validate() const;               // throws ValueError naming the option and why
  std::string to_text() const;         // "key = value" lines (also what the checkpoint stores)
  static TrainOptions from_text(const std::string& text);  // inverse of to_text; throws ValueError
};

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
