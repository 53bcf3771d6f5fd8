// options_validate.cpp: TrainOptions::validate, every rule between the training options
// (headlab/train/options.hpp): ranges, what each task needs, and options refused where the chosen
// task, optimiser, schedule or tokenizer would not read them. Errors are OptionErrors naming the field.
#include "headlab/train/options.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "headlab/core/user_input.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/recall_task.hpp"
#include "options_internal.hpp"

namespace headlab {

namespace {

using detail::choices_of;
using detail::real_text;

// --tokenizer word|bpe and the BPE budget of task translate: each option set only where it applies.
void validate_translation_tokenizer(const TrainOptions& o) {
  auto bad = [](const char* field, const std::string& why) { throw OptionError(field, why); };
  const TrainOptions defaults = TrainOptions::defaults_for(Task::translate);
  if (o.tokenizer != "word" && o.tokenizer != "bpe")
    bad("tokenizer", quote_clipped(o.tokenizer) + " is not word or bpe (task translate)");
  if (o.tokenizer == "word") {
    if (o.vocab_size != defaults.vocab_size) bad("vocab_size", "is for --tokenizer bpe");
    if (o.merges != defaults.merges) bad("merges", "is for --tokenizer bpe");
    if (o.joint_bpe) bad("joint_bpe", "is for --tokenizer bpe");
    return;
  }
  if (o.merges == 0 && o.vocab_size == 0) bad("vocab_size", "--tokenizer bpe needs --vocab-size N or --merges N");
  if (o.merges != 0 && o.vocab_size != 0 && o.vocab_size != defaults.vocab_size)
    bad("merges", "give --merges or --vocab-size, not both");
  if (o.merges == 0 && o.vocab_size < Vocabulary::num_specials + 2)
    bad("vocab_size", std::to_string(o.vocab_size) + " is too small: the four specials and at least two pieces");
  if (o.min_freq < 1) bad("min_freq", "must be >= 1");
}

// --optimizer, --schedule and the values they read. A value the chosen optimiser or schedule does
// not read is refused unless it is at the task's default: it would be silently ignored.
void validate_optimizer(const TrainOptions& o) {
  auto bad = [](const char* field, const std::string& why) { throw OptionError(field, why); };
  const TrainOptions d = TrainOptions::defaults_for(o.task);
  auto one_of = [&](const char* field, const std::string& value) {
    const std::vector<std::string> allowed = choices_of(field);
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
    std::string list;
    for (std::size_t i = 0; i < allowed.size(); ++i) list += (i ? (i + 1 == allowed.size() ? " or " : ", ") : "") + allowed[i];
    bad(field, quote_clipped(value) + " is not " + list);
  };
  one_of("optimizer", o.optimizer);
  one_of("schedule", o.schedule);
  const std::string optimizer = "this run's optimizer is " + o.optimizer;
  const std::string schedule = "this run's schedule is " + o.schedule;
  if (o.optimizer == "sgd") {
    if (o.betas != d.betas) bad("betas", "is for --optimizer adam and adamw; " + optimizer);
    if (o.eps != d.eps) bad("eps", "is for --optimizer adam and adamw; " + optimizer);
  } else if (o.momentum != 0) {
    bad("momentum", "is for --optimizer sgd; " + optimizer);
  }
  if (!(o.momentum >= 0 && o.momentum < 1)) bad("momentum", "must be in [0, 1)");
  if (!(o.eps > 0)) bad("eps", "must be > 0");
  if (!(o.weight_decay >= 0)) bad("weight_decay", "must be >= 0");
  if (o.decay_all && o.weight_decay == 0)
    bad("decay_all", "says which parameters --weight-decay reaches, and the weight decay is 0");
  if (!(o.lr >= 0)) bad("lr", "must be >= 0");
  if (!(o.min_lr >= 0)) bad("min_lr", "must be >= 0");
  if (o.schedule == "noam") {
    if (o.lr != 0)
      bad("lr", "is not read by --schedule noam, whose peak is --lr-factor * (d_model * warmup)^-0.5; give --lr-factor, "
                "or --schedule cosine, linear or constant with --lr");
    if (o.min_lr != 0) bad("min_lr", "is for --schedule cosine and linear; " + schedule);
    return;
  }
  if (o.lr_factor != d.lr_factor) bad("lr_factor", "is for --schedule noam; " + schedule + ", whose peak is --lr");
  if (!(o.lr > 0)) bad("lr", "--schedule " + o.schedule + " needs --lr > 0, its peak learning rate (for example --lr 1e-3)");
  if (o.schedule == "constant") {
    if (o.min_lr != 0) bad("min_lr", "is for --schedule cosine and linear; " + schedule);
    return;
  }
  if (o.steps == 0)
    bad("schedule", o.schedule + " decays to --min-lr at --steps, and this run has no step count (--time-budget alone): give --steps");
  if (o.min_lr > o.lr) bad("min_lr", "must be <= lr (" + real_text(o.lr) + "), got " + real_text(o.min_lr));
  if (o.warmup >= o.steps)
    bad("warmup", std::to_string(o.warmup) + " must be below steps " + std::to_string(o.steps) + " for --schedule " + o.schedule);
}

// --window, --sinks, --latent-dim and --rope-dim: the decoder-only models' attention variants,
// checked here so that the message names the flag (AttentionConfig::validate would name its field).
void validate_attention_variant(const TrainOptions& o) {
  auto bad = [](const char* field, const std::string& why) { throw OptionError(field, why); };
  const bool decoder_only = decoder_only_task(o.task);
  for (const auto& [field, value] : {std::pair<const char*, std::size_t>{"window", o.window}, {"sinks", o.sinks},
                                     {"latent_dim", o.latent_dim}, {"rope_dim", o.rope_dim}})
    if (value != 0 && !decoder_only)
      bad(field, "is for tasks induction, lm and recall (decoder-only models); task " + task_name(o.task) +
                     " has an encoder, whose attention is not causal");
  if (o.sinks > 0 && o.window == 0) bad("sinks", "keeps the first positions visible under a sliding window: give --window too");
  if (o.bos_windows && o.task != Task::lm)
    bad("bos_windows", "is for task lm (its windows start anywhere in a text); task " + task_name(o.task) +
                           " starts its sequences with <s> already");
  if (o.latent_dim > 0 && o.kv_heads != 0 && o.kv_heads != o.heads)
    bad("kv_heads", "latent K/V (--latent-dim) up-projects keys and values for every head: leave --kv-heads at 0");
  if (o.rope_dim > 0 && o.latent_dim == 0)
    bad("rope_dim", "is the rotary key of latent K/V: give --latent-dim too (plain --rope rotates whole heads)");
  if (o.rope_dim > 0 && !o.rope) bad("rope_dim", "is the size of a rotary key: give --rope too");
  if (o.latent_dim > 0 && o.rope && (o.rope_dim == 0 || o.rope_dim % 2 != 0))
    bad("rope_dim", "latent K/V with --rope needs an even --rope-dim > 0 (the decoupled rotary key), got " +
                        std::to_string(o.rope_dim));
}
}  // namespace

void TrainOptions::validate() const {
  auto bad = [](const char* field, const std::string& why) { throw OptionError(field, why); };
  auto count = [](std::size_t v) { return std::to_string(v); };
  // Every value as its flag would take it (options made in code never went through a parser):
  // counts within their range, reals finite, text that config.ini can hold.
  for (const OptionInfo& info : train_option_table()) {
    TrainOptions scratch;
    try {
      info.set(scratch, info.get(*this));
    } catch (const ValueError& e) {
      bad(info.field, e.what());
    }
  }
  if (keep_checkpoints && save_every == 0)
    bad("keep_checkpoints", "keeps the checkpoints --save-every N writes: give --save-every too");
  if (attention_only && !decoder_only_task(task))
    bad("attention_only", "is for tasks induction, lm and recall (decoder-only models)");
  validate_attention_variant(*this);
  if (task == Task::copy) {
    if (vocab < 3) bad("vocab", count(vocab) + " is too small: needs at least 3 ids (<pad>, <s>, one symbol)");
    if (length < 2) bad("length", count(length) + " is too short: needs at least 2 tokens");
  } else if (task == Task::induction) {
    // Held-out blocks are from (T + 1) / 2 to T tokens long, and a block needs 2: T >= 3.
    if (vocab < 4) bad("vocab", count(vocab) + " is too small: needs at least 4 ids (<pad>, <s>, two symbols)");
    if (length < 3 || length > 100000)
      bad("length", "must be from 3 to 100000 for task induction (blocks of (T+1)/2 to T tokens, at least 2), got " +
                        count(length));
  } else if (task == Task::recall) {
    validate_recall_sizes(keys, values, relations, length);
    if (train_sequences > 1000000)
      bad("train_sequences", count(train_sequences) + " is more than 1000000 (the set is held in memory; 0 draws a fresh batch every step)");
  } else if (task == Task::lm) {
    if (text_file.empty()) bad("text_file", "task lm needs a text to learn: --text FILE (UTF-8)");
    if (length < 2) bad("length", count(length) + " is too short: a training window needs at least 2 tokens");
    if (valid_file.empty() && !(valid_fraction > 0 && valid_fraction <= 0.5))
      bad("valid_fraction", "must be in (0, 0.5]: the share of --text held out for validation");
    if (tokenizer != "char" && tokenizer != "word")
      bad("tokenizer", quote_clipped(tokenizer) + " is not char or word (task lm)");
    if (tokenizer == "char" && min_freq != defaults_for(Task::lm).min_freq)
      bad("min_freq", "is for --tokenizer word: every character of the training text is a token");
    if (tokenizer == "word" && min_freq < 1) bad("min_freq", "must be >= 1");
    if (!valid_file.empty() && valid_fraction != defaults_for(Task::lm).valid_fraction)
      bad("valid_fraction", "is for a run without --valid (the validation text is --valid's file)");
  } else {
    if (train_file.empty()) bad("train_file", "task translate needs a training corpus (source<TAB>target per line)");
    if (valid_file.empty()) bad("valid_file", "task translate needs a validation corpus (source<TAB>target per line)");
    if (max_len < 3) bad("max_len", count(max_len) + " is too short: needs at least 3 (<s>, a token, </s>)");
    if (max_tokens < max_len)
      bad("max_tokens", count(max_tokens) + " must be >= max_len " + count(max_len) + " (a batch must hold the longest pair)");
    if (!(length_penalty >= 0)) bad("length_penalty", "must be >= 0");
    validate_translation_tokenizer(*this);
  }
  if (!(time_budget >= 0)) bad("time_budget", "must be >= 0 seconds");
  if (steps == 0 && !(time_budget > 0)) bad("steps", "0 means no step cap, which needs a --time-budget to stop the run");
  if (!(dropout >= 0 && dropout < 1)) bad("dropout", "must be in [0, 1)");
  if (!(lr_factor > 0)) bad("lr_factor", "must be > 0");
  if (!(label_smoothing >= 0 && label_smoothing < 1)) bad("label_smoothing", "must be in [0, 1)");
  if (!(clip_norm >= 0)) bad("clip_norm", "must be >= 0");
  validate_optimizer(*this);
  if (resume && run_dir.empty()) bad("resume", "needs a run directory (where the checkpoint is)");
  if (resume_or_start && run_dir.empty()) bad("resume_or_start", "needs a run directory (where the checkpoint is)");
  if (resume_or_start && (resume || overwrite))
    bad("resume_or_start", "decides between --resume and --overwrite itself: give it alone");
  const std::vector<std::string> styles = choices_of("progress");
  if (std::find(styles.begin(), styles.end(), progress) == styles.end())
    bad("progress", quote_clipped(progress) + " is not auto, bar, lines or none");
  const std::vector<std::string> selections = choices_of("select");
  if (std::find(selections.begin(), selections.end(), select) == selections.end())
    bad("select", quote_clipped(select) + " is not valid_loss, bleu or accuracy");
  if (select == "bleu" && task != Task::translate)
    bad("select", "bleu is for task translate; task " + task_name(task) + " has valid_loss" +
                      (task == Task::lm ? "" : " or accuracy"));
  if (select == "accuracy" && task == Task::translate)
    bad("select", "accuracy is for tasks copy, induction and recall; task translate has valid_loss or bleu");
  if (select == "accuracy" && task == Task::lm)
    bad("select", "accuracy is for tasks copy, induction and recall; task lm has valid_loss");
  // The vocabularies of translate and lm come from their files: any size checks the model's shapes.
  TransformerConfig c = task == Task::translate || task == Task::lm ? model_config(5, 5) : model_config();
  c.validate();
}

}  // namespace headlab
