// options.cpp: the training options table made into defaults, validation, text and config files
// (headlab/train/options.hpp).
#include "headlab/train/options.hpp"

#include <algorithm>
#include <charconv>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>

#include "headlab/core/user_input.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/recall_task.hpp"

namespace headlab {

std::string task_name(Task task) {
  switch (task) {
    case Task::copy: return "copy";
    case Task::translate: return "translate";
    case Task::induction: return "induction";
    case Task::lm: return "lm";
    case Task::recall: return "recall";
  }
  return "copy";
}

const std::vector<Task>& all_tasks() {
  static const std::vector<Task> tasks = {Task::copy, Task::translate, Task::induction, Task::lm, Task::recall};
  return tasks;
}

Task parse_task(const std::string& name) {
  for (Task t : all_tasks())
    if (task_name(t) == name) return t;
  throw ValueError(quote_clipped(name) + " is not a known task (copy, translate, induction, lm, recall)");
}

// ---- Values as text: one overload per column type of the table --------------------------------
namespace {

// The whole numbers a count option takes. Counts stop at 10^9 (the memory check refuses
// models too large long before); the seed takes any 64-bit value. A lower bound of 1 is for
// options that count steps or items and cannot be 0; the model's sizes are checked with their
// reasons by TransformerConfig::validate.
struct CountRange {
  std::uint64_t lo, hi;
};
CountRange count_range(const std::string& field) {
  if (field == "seed") return {0, std::numeric_limits<std::uint64_t>::max()};
  for (const char* positive : {"batch", "warmup", "grad_accum", "eval_every", "eval_sequences", "layers", "beam", "min_freq"})
    if (field == positive) return {1, kMaxOptionCount};
  return {0, kMaxOptionCount};
}

std::string value_text(const std::string& v) { return v; }
std::string value_text(bool v) { return v ? "true" : "false"; }
std::string value_text(double v) {  // the shortest text that reads back as the same double: 0.6, 1e-05
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec == std::errc()) return std::string(buf, end);
  std::ostringstream os;
  os << std::setprecision(17) << v;
  return os.str();
}
std::string value_text(const AdamBetas& v) { return value_text(v.beta1) + "," + value_text(v.beta2); }
std::string value_text(Task v) { return task_name(v); }
std::string value_text(GateKind v) { return gate_name(v); }
template <typename Count>
std::string value_text(Count v) {
  return std::to_string(v);
}

// What a value must look like, per column type (ValueError in the value's own terms otherwise).
// Text must be UTF-8 without control characters: config.ini and the checkpoint's metadata hold one
// value per line, so a line break (or invalid UTF-8, which the config reader refuses) could not
// be written and read back.
void parse_value(std::string& out, const std::string& s, const char*) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      throw ValueError("contains a control character (config.ini could not hold it): " + quote_clipped(s));
  if (!is_valid_utf8(s)) throw ValueError("is not valid UTF-8 (config.ini could not hold it): " + quote_clipped(s));
  out = s;
}
void parse_value(bool& out, const std::string& s, const char*) { out = parse_boolean(s); }
void parse_value(double& out, const std::string& s, const char*) { out = parse_real_number(s); }
void parse_value(AdamBetas& out, const std::string& s, const char*) {
  const std::size_t comma = s.find(',');
  if (comma == std::string::npos || s.find(',', comma + 1) != std::string::npos)
    throw ValueError("expected two numbers BETA1,BETA2 such as 0.9,0.98, got " + quote_clipped(s));
  const double b1 = parse_real_number(s.substr(0, comma)), b2 = parse_real_number(s.substr(comma + 1));
  for (double b : {b1, b2})
    if (!(b >= 0 && b < 1)) throw ValueError("each beta must be in [0, 1), got " + quote_clipped(s));
  out = AdamBetas{b1, b2};
}
void parse_value(Task& out, const std::string& s, const char*) { out = parse_task(s); }
void parse_value(GateKind& out, const std::string& s, const char*) {
  try {
    out = parse_gate(s);
  } catch (const std::exception&) {
    throw ValueError(quote_clipped(s) + " is not a gate (none, headwise, elementwise)");
  }
}
template <typename Count>
void parse_value(Count& out, const std::string& s, const char* field) {
  const CountRange range = count_range(field);
  out = static_cast<Count>(parse_whole_number(s, range.lo, range.hi));
}

template <typename U> OptionKind kind_of() { return OptionKind::count; }
template <> OptionKind kind_of<double>() { return OptionKind::real; }
template <> OptionKind kind_of<bool>() { return OptionKind::flag; }
template <> OptionKind kind_of<std::string>() { return OptionKind::text; }
template <> OptionKind kind_of<AdamBetas>() { return OptionKind::text; }
template <> OptionKind kind_of<Task>() { return OptionKind::choice; }
template <> OptionKind kind_of<GateKind>() { return OptionKind::choice; }

std::vector<std::string> choices_of(const std::string& field) {
  if (field == "task") return {"copy", "translate", "induction", "lm", "recall"};
  if (field == "gate") return {"none", "headwise", "elementwise"};
  if (field == "progress") return {"auto", "bar", "lines", "none"};
  if (field == "optimizer") return {"sgd", "adam", "adamw"};
  if (field == "schedule") return {"noam", "cosine", "linear", "constant"};
  if (field == "select") return {"valid_loss", "bleu", "accuracy"};
  if (field == "tokenizer") return {"char", "word", "bpe"};
  return {};
}

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

std::vector<OptionInfo> make_table() {
  std::vector<OptionInfo> table;
#define HEADLAB_TABLE_ROW(type, field, flag, copy, translate, induction, lm, recall, stored, tasks, help)                     \
  {                                                                                                              \
    std::vector<std::string> choices = choices_of(#field);                                                       \
    table.push_back(OptionInfo{#field, flag, help, choices.empty() ? kind_of<type>() : OptionKind::choice, stored, \
                               tasks, std::move(choices),                                                        \
                               [](const TrainOptions& o) { return value_text(o.field); },                        \
                               [](TrainOptions& o, const std::string& s) { parse_value(o.field, s, #field); }}); \
  }
  HEADLAB_TRAIN_OPTIONS(HEADLAB_TABLE_ROW)
#undef HEADLAB_TABLE_ROW
  return table;
}

}  // namespace

const std::vector<OptionInfo>& train_option_table() {
  static const std::vector<OptionInfo> table = make_table();
  return table;
}

const OptionInfo* find_option_by_field(const std::string& field) {
  for (const OptionInfo& info : train_option_table())
    if (field == info.field) return &info;
  return nullptr;
}

const OptionInfo* find_option_by_flag(const std::string& flag) {
  const std::string bare = flag.rfind("--", 0) == 0 ? flag.substr(2) : flag;
  for (const OptionInfo& info : train_option_table())
    if (bare == info.flag) return &info;
  return nullptr;
}

TrainOptions TrainOptions::defaults_for(Task task) {
  TrainOptions o;
#define HEADLAB_TASK_DEFAULT(type, field, flag, for_copy, for_translate, for_induction, for_lm, for_recall, stored, tasks, \
                             help)                                                                                \
  o.field = task == Task::translate   ? type(for_translate)                                                         \
            : task == Task::induction ? type(for_induction)                                                         \
            : task == Task::lm        ? type(for_lm)                                                                \
            : task == Task::recall    ? type(for_recall)                                                            \
                                      : type(for_copy);
  HEADLAB_TRAIN_OPTIONS(HEADLAB_TASK_DEFAULT)
#undef HEADLAB_TASK_DEFAULT
  return o;
}

// ---- The model these options describe ---------------------------------------------------------
TransformerConfig TrainOptions::model_config(std::size_t src_vocab, std::size_t tgt_vocab) const {
  TransformerConfig c;
  c.d_model = d_model;
  c.ff_dim = ff_dim;
  c.encoder_layers = c.decoder_layers = layers;
  c.dropout = dropout;
  c.norm_first = norm_first;
  c.tie_embeddings = tie_embeddings;
  c.attention.num_heads = heads;
  c.attention.num_kv_heads = kv_heads;
  c.attention.head_dim = head_dim;
  c.attention.gate = gate;
  c.attention.rope = rope;
  c.attention.flash = tiled_attention;
  c.attention.window = window;
  c.attention.sinks = sinks;
  c.attention.latent_dim = latent_dim;
  c.attention.rope_dim = rope_dim;
  c.src_vocab = src_vocab;
  c.tgt_vocab = tgt_vocab;
  c.max_len = task == Task::translate ? std::max<std::size_t>(max_len, 2) : std::max<std::size_t>(length, 1);
  if (decoder_only_task(task)) {  // a decoder-only model: `layers` causal layers
    c.encoder_layers = 0;
    c.src_vocab = 1;  // no encoder
    c.attention_only = attention_only;
    c.max_len = task == Task::lm ? length : 2 * length + 1;  // induction: 2 T + 1 positions; recall: 2 n + 1
  }
  return c;
}

TransformerConfig TrainOptions::model_config() const {
  const std::size_t v = task == Task::recall ? recall_layout(*this).vocab() : vocab;
  return model_config(v, v);
}

bool decoder_only_task(Task task) { return task == Task::induction || task == Task::lm || task == Task::recall; }

namespace {
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
  if (o.min_lr > o.lr) bad("min_lr", "must be <= lr (" + value_text(o.lr) + "), got " + value_text(o.min_lr));
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

// ---- Text: checkpoint metadata and the run's config.ini ----------------------------------------
std::string TrainOptions::to_text() const {
  std::ostringstream os;
  for (const OptionInfo& info : train_option_table())
    if (info.stored) os << info.field << " = " << info.get(*this) << "\n";
  return os.str();
}

TrainOptions TrainOptions::from_text(const std::string& text) {
  // Read every line first: the task's defaults fill in what the text does not say.
  std::vector<std::pair<std::string, std::string>> entries;
  std::vector<std::size_t> line_numbers;
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    const auto eq = line.find(" = ");
    if (eq == std::string::npos)
      throw ValueError("options line " + std::to_string(number) + ": no ' = ' in " + quote_clipped(line));
    entries.emplace_back(line.substr(0, eq), line.substr(eq + 3));
    line_numbers.push_back(number);
  }
  auto where = [&](std::size_t i) { return "options line " + std::to_string(line_numbers[i]); };
  TrainOptions o;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].first != "task") continue;
    try {
      o = defaults_for(parse_task(entries[i].second));
    } catch (const std::exception& e) {
      throw ValueError(where(i) + " (task): " + e.what());
    }
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& [key, value] = entries[i];
    const OptionInfo* info = find_option_by_field(key);
    if (!info || !info->stored) throw ValueError(where(i) + ": unknown option " + quote_clipped(key));
    try {
      info->set(o, value);
    } catch (const std::exception& e) {
      throw ValueError(where(i) + " (" + key + "): " + e.what());
    }
  }
  // Before subwords the field was lm's alone, and a translation model's options said "char" for
  // it; its tokens were words.
  if (o.task == Task::translate && o.tokenizer == "char") o.tokenizer = "word";
  return o;
}

std::string TrainOptions::to_config_ini() const {
  std::ostringstream os;
  os << "# The options of this run as resolved for task " << task_name(task) << ":\n"
     << "#   headlab train --config config.ini [--run-dir NEW_DIR] trains the same model.\n"
     << "[train]\n";
  for (const OptionInfo& info : train_option_table()) {
    if (!info.stored) continue;
    const std::string value = info.get(*this);
    // Text values are quoted: the config reader takes them as is between the quotes (spaces, '#').
    if (info.kind == OptionKind::text) os << info.flag << "=\"" << value << "\"\n";
    else os << info.flag << "=" << value << "\n";
  }
  return os.str();
}

}  // namespace headlab
