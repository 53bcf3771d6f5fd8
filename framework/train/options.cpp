// options.cpp: the training options table made into defaults, text and config files
// (headlab/train/options.hpp); TrainOptions::validate is in options_validate.cpp.
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
#include "options_internal.hpp"

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

// ---- Shared with options_validate.cpp: a real number as text, the choices of an option ---------
namespace detail {

std::string real_text(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec == std::errc()) return std::string(buf, end);
  std::ostringstream os;
  os << std::setprecision(17) << v;
  return os.str();
}

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

}  // namespace detail

// ---- Values as text: one overload per column type of the table --------------------------------
namespace {

using detail::choices_of;

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
std::string value_text(double v) { return detail::real_text(v); }
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

bool unknown_when_missing(const OptionInfo& info) { return std::string(info.field) == "heads_in_place"; }

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
  c.attention.heads_in_place = heads_in_place;
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
  std::map<std::string, std::size_t> first_line;  // a key twice: which value is meant? (config.ini refuses it too)
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (const auto [it, fresh] = first_line.emplace(entries[i].first, i); !fresh)
      throw ValueError(where(i) + ": " + quote_clipped(entries[i].first) + " is given again (first on " + where(it->second) + ")");
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
