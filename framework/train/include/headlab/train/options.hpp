// headlab/train/options.hpp: what `headlab train` can be told, declared once.
//
// HEADLAB_TRAIN_OPTIONS below is the one table of the training options. Each row
//
//   X(type, field, flag, copy default, translate default, induction default, lm default, stored, tasks, help)
//
// declares a field of TrainOptions with its per-task defaults, the command-line flag that sets it
// (`--flag`, also the key in a run's config.ini), whether it is part of the run (stored: written to
// config.ini and to the checkpoint's metadata, compared on --resume), which tasks read it, and its
// help. The struct, validation messages (OptionError names the field), the CLI11 flags
// (apps/headlab/train_flags.hpp), the run's config.ini, the checkpoint metadata and the sweep's
// grid keys (headlab/lab/sweep.hpp) are all made from this table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headlab/attention/attention.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/models/transformer.hpp"

namespace headlab {

// The three training tasks (docs in headlab/train/trainer.hpp and each task's file).
enum class Task { copy, translate, induction, lm, recall };
std::string task_name(Task task);                // "copy" | "translate" | "induction" | "lm" | "recall"
const std::vector<Task>& all_tasks();            // every task, in that order
Task parse_task(const std::string& name);         // ValueError naming the known tasks
bool decoder_only_task(Task task);               // induction, lm and recall: no encoder, causal layers

// Adam's two decay rates, written "0.9,0.98" (a flag and a config value of its own).
struct AdamBetas {
  double beta1 = 0.9, beta2 = 0.98;  // Vaswani et al., section 5.3
  constexpr bool operator==(const AdamBetas& o) const { return beta1 == o.beta1 && beta2 == o.beta2; }
  constexpr bool operator!=(const AdamBetas& o) const { return !(*this == o); }
};

// nanoGPT's betas for small character models (its shakespeare_char config): the lm task's default.
inline constexpr AdamBetas kSmallLmBetas{0.9, 0.99};

// Which tasks read an option (a bit mask over Task).
enum TaskMask : unsigned { kCopy = 1u, kTranslate = 2u, kInduction = 4u, kLm = 8u, kRecall = 16u, kAllTasks = 31u };

// An option with a bad value: `field` is its TrainOptions field (the CLI shows its flag instead).
class OptionError : public ValueError {
 public:
  OptionError(std::string field, const std::string& why)
      : ValueError(field + ": " + why), field_(std::move(field)), why_(why) {}
  const std::string& field() const { return field_; }
  const std::string& why() const { return why_; }

 private:
  std::string field_, why_;
};

// clang-format off
#define HEADLAB_TRAIN_OPTIONS(X)                                                                                   \
  /* type, field, flag, copy, translate, induction, lm and recall defaults, stored, tasks; help */ \
  X(Task, task, "task", Task::copy, Task::translate, Task::induction, Task::lm, Task::recall, true, kAllTasks,                      \
    "the task: copy (The Annotated Transformer's), translate (a TSV corpus), induction (a decoder-only model), lm (a character-level language model on --text), recall (multi-query associative recall: answers that need several keys at once)")       \
  X(std::size_t, vocab, "vocab", 11, 11, 64, 64, 64, true, kCopy | kInduction,                                            \
    "vocabulary size (0 <pad>, 1 <s>)")                                                                               \
  X(std::size_t, length, "length", 10, 10, 16, 64, 8, true, kCopy | kInduction | kLm | kRecall,                                    \
    "copy: tokens per sequence, start symbol included; induction: the repeated block T; lm: the context (tokens per training window); recall: the key-value pairs of a sequence (and as many queries)")                              \
  X(std::size_t, keys, "keys", 16, 16, 16, 16, 16, true, kRecall,                                                    \
    "recall: the keys a pair's key is drawn from (each sequence uses --length of them)")                             \
  X(std::size_t, values, "values", 16, 16, 16, 16, 16, true, kRecall,                                                      \
    "recall: the values a key can hold")                                                                              \
  X(std::size_t, relations, "relations", 2, 2, 2, 2, 2, true, kRecall,                                                \
    "recall: the keys each query names; its answer is their values, in order (one token of values^relations)")       \
  X(bool, unordered_answer, "unordered-answer", false, false, false, false, false, true, kRecall,                         \
    "recall: the answer is the named keys' values sorted (ascending), not in the query's order: one averaged read of the keys suffices") \
  X(std::size_t, train_sequences, "train-sequences", 0, 0, 0, 0, 0, true, kRecall,                                      \
    "recall: a finite training set of N sequences drawn once from the seed, each batch sampled from it with replacement (0 = a fresh batch every step)") \
  X(std::string, train_file, "train", "", "", "", "", "", true, kTranslate,                                               \
    "training corpus, source<TAB>target per line")                                                                    \
  X(std::string, valid_file, "valid", "", "", "", "", "", true, kTranslate | kLm,                                         \
    "validation corpus (translate: TSV pairs, loss and BLEU as it trains; lm: a text file, instead of the end of --text)")                                                                 \
  X(std::string, text_file, "text", "", "", "", "", "", true, kLm,                                                      \
    "lm: the text to learn (UTF-8); its last --valid-fraction is held out unless --valid is given")                  \
  X(std::string, tokenizer, "tokenizer", "char", "bpe", "char", "char", "char", true, kTranslate | kLm,                     \
    "lm: char (every character a token) or word (the translation tokenizer's words and punctuation, a line ending in </s>; words rarer than --min-freq are <unk>); translate: word or bpe (byte-pair-encoded subwords of those words, learned from --train)") \
  X(std::size_t, vocab_size, "vocab-size", 0, 2000, 0, 0, 0, true, kTranslate,                                          \
    "--tokenizer bpe: learn merges until each side's vocabulary (specials included) has this many tokens")          \
  X(std::size_t, merges, "merges", 0, 0, 0, 0, 0, true, kTranslate,                                                     \
    "--tokenizer bpe: learn exactly this many merges instead of stopping at --vocab-size (0 = --vocab-size decides)") \
  X(bool, joint_bpe, "joint-bpe", false, false, false, false, false, true, kTranslate,                                      \
    "--tokenizer bpe: one set of merges and one vocabulary for both sides, learned from both (allows --tie-embeddings)") \
  X(double, valid_fraction, "valid-fraction", 0.1, 0.1, 0.1, 0.1, 0.1, true, kLm,                                          \
    "lm without --valid: the share of --text, taken from its end, held out for validation")                          \
  X(std::string, test_file, "test", "", "", "", "", "", true, kTranslate,                                                 \
    "test corpus (BLEU of the best weights at the end; optional)")                                                    \
  X(std::string, showcase_file, "showcase", "", "auto", "", "", "", true, kTranslate,                                    \
    "sentence pairs translated at the end into RUN_DIR/showcase.txt and summary.json (auto: showcase.txt beside --train or one folder up, if there is one; none: off)") \
  X(std::size_t, min_freq, "min-freq", 2, 2, 2, 2, 2, true, kTranslate | kLm,                                           \
    "rarer training tokens become <unk> (lm: with --tokenizer word); translate with --tokenizer bpe: the fewest occurrences of a pair that is merged")                                                                             \
  X(std::size_t, max_tokens, "max-tokens", 1024, 2048, 1024, 1024, 1024, true, kTranslate,                                  \
    "batch budget: sentences x longest side")                                                                         \
  X(std::size_t, max_len, "max-len", 64, 64, 64, 64, 64, true, kTranslate,                                                \
    "longest sequence in ids, <s>/</s> included (longer training pairs are skipped)")                                 \
  X(double, time_budget, "time-budget", 0.0, 0.0, 0.0, 0.0, 0.0, true, kAllTasks,                                          \
    "stop after this many seconds of training steps (evaluation excluded); 0 = no limit. Given without --steps, the budget alone stops the run") \
  X(std::size_t, beam, "beam", 4, 4, 4, 4, 4, true, kTranslate,                                                          \
    "beam size for the final test BLEU")                                                                              \
  X(double, length_penalty, "length-penalty", 0.6, 0.6, 0.6, 0.6, 0.6, true, kTranslate,                                   \
    "GNMT length penalty alpha of beam search")                                                                       \
  X(std::size_t, eval_sentences, "eval-sentences", 0, 0, 0, 0, 0, true, kTranslate,                                      \
    "validation sentences decoded for BLEU (0 = all)")                                                                \
  X(std::size_t, d_model, "d-model", 64, 128, 64, 128, 16, true, kAllTasks,                                               \
    "model width D")                                                                                                  \
  X(std::size_t, heads, "heads", 4, 8, 4, 4, 4, true, kAllTasks,                                                         \
    "attention heads h")                                                                                              \
  X(std::size_t, kv_heads, "kv-heads", 0, 0, 0, 0, 0, true, kAllTasks,                                                   \
    "key/value heads (0 = heads; 1 = multi-query; else grouped-query)")                                               \
  X(std::size_t, head_dim, "head-dim", 0, 0, 0, 0, 0, true, kAllTasks,                                                   \
    "head size d (0 = d_model / heads)")                                                                              \
  X(GateKind, gate, "gate", GateKind::none, GateKind::none, GateKind::none, GateKind::none, GateKind::none, true, kAllTasks,          \
    "sigmoid output gate after SDPA: none, headwise or elementwise")                                                  \
  X(std::size_t, ff_dim, "ff", 256, 512, 256, 512, 256, true, kAllTasks,                                                   \
    "feed-forward width")                                                                                             \
  X(std::size_t, layers, "layers", 2, 2, 2, 2, 1, true, kAllTasks,                                                       \
    "encoder and decoder layers each; induction, lm and recall: decoder layers")                                                     \
  X(double, dropout, "dropout", 0.0, 0.0, 0.0, 0.0, 0.0, true, kAllTasks,                                                  \
    "dropout probability")                                                                                            \
  X(bool, norm_first, "pre-ln", false, true, true, true, true, true, kAllTasks,                                            \
    "pre-LN layers instead of post-LN (--pre-ln=false: post-LN)")                                                     \
  X(bool, tie_embeddings, "tie-embeddings", false, false, false, false, false, true, kAllTasks,                              \
    "one matrix for both embeddings and the generator")                                                               \
  X(bool, attention_only, "attention-only", false, false, true, false, true, true, kInduction | kLm | kRecall,                        \
    "layers without feed-forward blocks (decoder-only models)")                                                       \
  X(bool, rope, "rope", false, false, true, false, false, true, kAllTasks,                                                   \
    "rotary positions on q and k instead of sinusoidal embeddings (relative positions only)")                         \
  X(bool, tiled_attention, "tiled-attention", false, false, false, false, false, true, kAllTasks,                            \
    "the tiled (FlashAttention-2 style) kernel wherever it applies: same results to float rounding, less memory")     \
  X(bool, heads_in_place, "heads-in-place", true, true, true, true, true, true, kAllTasks,                                  \
    "plain multi-head attention reads its heads in place from the fused projection (since 2026-12-06; docs/attention.md): " \
    "the same formula, on some CPUs summed in another order; =false: the composed steps, as runs made before")          \
  X(std::size_t, window, "window", 0, 0, 0, 0, 0, true, kInduction | kLm | kRecall,                                             \
    "sliding-window attention: a query sees its last W positions, itself included (0 = the whole causal prefix)")     \
  X(std::size_t, sinks, "sinks", 0, 0, 0, 0, 0, true, kInduction | kLm | kRecall,                                                \
    "with --window: the first positions every query still sees (attention sinks, StreamingLLM)")                      \
  X(bool, bos_windows, "bos-windows", false, false, false, false, false, true, kLm,                                         \
    "lm: every window starts with <s> (the model reads <s> x_1..x_{T-1} and predicts x_1..x_T): a fixed first token, "  \
    "where attention sinks form (StreamingLLM; Gu et al. 2024)")                                                      \
  X(std::size_t, latent_dim, "latent-dim", 0, 0, 0, 0, 0, true, kInduction | kLm | kRecall,                                      \
    "latent K/V (MLA, DeepSeek-V2): keys and values up-projected from one latent of this size per token (0 = off)")   \
  X(std::size_t, rope_dim, "rope-dim", 0, 0, 0, 0, 0, true, kInduction | kLm | kRecall,                                          \
    "MLA with --rope: the size of the decoupled rotary key shared by the heads (even)")                               \
  X(std::size_t, steps, "steps", 2000, 3000, 1500, 3000, 3000, true, kAllTasks,                                             \
    "training steps (at most); 0 = no step cap, the --time-budget stops the run (what a budget without --steps means)") \
  X(std::size_t, batch, "batch", 64, 64, 32, 32, 64, true, kCopy | kInduction | kLm | kRecall,                                      \
    "sequences per step")                                                                                             \
  X(std::string, optimizer, "optimizer", "adam", "adam", "adam", "adamw", "adam", true, kAllTasks,                            \
    "sgd, adam or adamw (adam and adamw: --betas, --eps; sgd: --momentum)")                                           \
  X(std::string, schedule, "schedule", "noam", "noam", "noam", "constant", "noam", true, kAllTasks,                           \
    "learning-rate schedule: noam (peak from --lr-factor), or cosine, linear (down to --min-lr at --steps) or constant, each from --lr after a linear warm-up") \
  X(double, lr, "lr", 0.0, 0.0, 0.0, 1e-3, 0.0, true, kAllTasks,                                                           \
    "peak learning rate of --schedule cosine, linear and constant (0: not set; noam takes --lr-factor instead)")      \
  X(double, min_lr, "min-lr", 0.0, 0.0, 0.0, 0.0, 0.0, true, kAllTasks,                                                    \
    "the learning rate --schedule cosine and linear reach at --steps")                                                \
  X(double, lr_factor, "lr-factor", 0.5, 2.0, 1.0, 1.0, 1.0, true, kAllTasks,                                              \
    "Noam schedule factor: lr = factor * D^-0.5 * min(step^-0.5, step * warmup^-1.5)")                                \
  X(std::size_t, warmup, "warmup", 100, 400, 200, 100, 200, true, kAllTasks,                                               \
    "warm-up steps of the schedule (noam: to its peak; the others: linear from 0 to --lr)")                           \
  X(AdamBetas, betas, "betas", AdamBetas{}, AdamBetas{}, AdamBetas{}, kSmallLmBetas, AdamBetas{}, true, kAllTasks,          \
    "Adam's beta1,beta2 (Vaswani et al.'s 0.9,0.98)")                                                                 \
  X(double, eps, "eps", 1e-9, 1e-9, 1e-9, 1e-9, 1e-9, true, kAllTasks,                                                      \
    "Adam's epsilon")                                                                                                 \
  X(double, momentum, "momentum", 0.0, 0.0, 0.0, 0.0, 0.0, true, kAllTasks,                                                \
    "SGD momentum (0 = plain SGD)")                                                                                   \
  X(double, weight_decay, "weight-decay", 0.0, 0.0, 0.0, 0.1, 0.0, true, kAllTasks,                                        \
    "weight decay (adamw: decoupled; adam and sgd: L2 added to the gradient), on matrices only unless --decay-all")   \
  X(bool, decay_all, "decay-all", false, false, false, false, false, true, kAllTasks,                                        \
    "weight decay on every parameter, biases, norms and embeddings too (default: the weight matrices of linear and attention layers only, as minGPT)") \
  X(std::size_t, grad_accum, "grad-accum", 1, 1, 1, 1, 1, true, kAllTasks,                                               \
    "batches per update: their gradients are summed, weighted by target tokens (the update of one N-times-larger batch)") \
  X(double, label_smoothing, "label-smoothing", 0.0, 0.1, 0.0, 0.0, 0.0, true, kAllTasks,                                  \
    "label smoothing epsilon")                                                                                        \
  X(double, clip_norm, "clip-grad-norm", 1.0, 1.0, 1.0, 1.0, 1.0, true, kAllTasks,                                         \
    "gradient clipping by global norm (0 = off)")                                                                     \
  X(std::uint64_t, seed, "seed", 1, 1, 1, 1, 1, true, kAllTasks,                                                         \
    "seed of initialisation, data and dropout")                                                                       \
  X(std::size_t, eval_every, "eval-every", 100, 250, 250, 250, 250, true, kAllTasks,                                       \
    "steps between evaluations")                                                                                      \
  X(std::size_t, eval_sequences, "eval-sequences", 1000, 1000, 256, 256, 512, true, kCopy | kInduction | kLm | kRecall,              \
    "held-out sequences scored at each evaluation")                                                                   \
  X(bool, stop_at_perfect, "stop-at-perfect", true, false, false, false, false, true, kCopy,                                 \
    "stop once held-out exact match reaches 100%")                                                                    \
  X(std::size_t, save_every, "save-every", 0, 0, 0, 0, 0, true, kAllTasks,                                               \
    "steps between checkpoints (0 = only at the end)")                                                                \
  X(bool, keep_checkpoints, "keep-checkpoints", false, false, false, false, false, true, kAllTasks,                        \
    "with --save-every: also keep each checkpoint as RUN_DIR/checkpoints/step-<S>.safetensors (heads over training)") \
  X(std::string, select, "select", "valid_loss", "valid_loss", "valid_loss", "valid_loss", "valid_loss", true, kAllTasks,           \
    "the evaluation best.safetensors keeps: valid_loss (lowest), bleu (translate) or accuracy (copy: exact match; induction: repeated half)") \
  X(std::string, run_dir, "run-dir", "", "", "", "", "", false, kAllTasks,                                                \
    "write config.ini, metrics.jsonl, checkpoint.safetensors and summary.json here")                                  \
  X(bool, resume, "resume", false, false, false, false, false, false, kAllTasks,                                             \
    "continue from RUN_DIR/checkpoint.safetensors")                                                                   \
  X(bool, overwrite, "overwrite", false, false, false, false, false, false, kAllTasks,                                       \
    "replace the run in RUN_DIR (removes only the files train writes there)")                                         \
  X(bool, resume_or_start, "resume-or-start", false, false, false, false, false, false, kAllTasks,                           \
    "--resume when RUN_DIR holds a checkpoint, else --overwrite (what a sweep's job lines give: a requeued job goes on)") \
  X(std::string, progress, "progress", "auto", "auto", "auto", "auto", "auto", false, kAllTasks,                              \
    "progress output: auto, bar, lines or none")                                                                      \
  X(bool, stop_on_divergence, "stop-on-divergence", false, false, false, false, false, false, kAllTasks,                   \
    "a non-finite loss or weight ends the run as a result (summary.json: diverged 1, diverged_step; exit 0) instead of an error") \
  X(bool, detect_anomaly, "detect-anomaly", false, false, false, false, false, false, kAllTasks,                             \
    "check every op for NaN/inf and name the first that makes one (slow; for debugging)")                             \
  X(std::string, max_memory, "max-memory", "", "", "", "", "", false, kAllTasks,                                          \
    "refuse a run whose memory estimate is above this: 4G, 512M or bytes (default: the available memory)")
// clang-format on

struct TrainOptions {
#define HEADLAB_DECLARE_FIELD(type, field, flag, for_copy, for_translate, for_induction, for_lm, for_recall, stored, tasks, \
                              help)                                                                              \
  type field = for_copy;
  HEADLAB_TRAIN_OPTIONS(HEADLAB_DECLARE_FIELD)
#undef HEADLAB_DECLARE_FIELD

  // The options of a task with every field at that task's default (the table's columns).
  static TrainOptions defaults_for(Task task);
  TransformerConfig model_config() const;  // copy and induction: vocabularies of `vocab` ids; recall: its layout's
  TransformerConfig model_config(std::size_t src_vocab, std::size_t tgt_vocab) const;
  void validate() const;  // throws OptionError naming the field and why

  // The stored options as "field = value" lines: a checkpoint's metadata. from_text is its inverse
  // (ValueError naming the line); a field missing from the text keeps the default of the text's task.
  std::string to_text() const;
  static TrainOptions from_text(const std::string& text);

  // The run's config file: "[train]" then "flag=value" for every stored option, values as resolved
  // for the task (what `headlab train --config FILE` reads back).
  std::string to_config_ini() const;
};

// The largest value of a count option (steps, sizes, ...; the seed takes any 64-bit value): the
// options and the checkpoint's step are read as whole numbers within it (headlab/core/user_input.hpp).
constexpr std::uint64_t kMaxOptionCount = 1000000000;

// The table as data, for the CLI, the sweep and the config file.
enum class OptionKind { count, real, flag, text, choice };
struct OptionInfo {
  const char* field;  // the TrainOptions member: "ff_dim"
  const char* flag;   // the flag without dashes, also the config.ini key: "ff"
  const char* help;
  OptionKind kind;
  bool stored;
  unsigned tasks;                    // TaskMask bits
  std::vector<std::string> choices;  // kind choice: the allowed values
  std::string (*get)(const TrainOptions&);
  void (*set)(TrainOptions&, const std::string&);  // ValueError on a value of the wrong form
};
const std::vector<OptionInfo>& train_option_table();
const OptionInfo* find_option_by_field(const std::string& field);  // nullptr when unknown
const OptionInfo* find_option_by_flag(const std::string& flag);    // "ff" or "--ff"; nullptr when unknown

// An option is added with the old behaviour as its default, so a run's config.ini or checkpoint
// that lacks it did what the default does. Not so for heads_in_place: runs before 2026-12-06 took
// the composed steps, runs of 2026-12-06 and 07 (before the option) the in-place heads. For such an
// option a missing key says nothing: a sweep's check and --resume accept any value for it.
bool unknown_when_missing(const OptionInfo& info);

}  // namespace headlab
