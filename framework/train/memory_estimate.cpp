// memory_estimate.cpp: a run's memory from its options (headlab/train/memory_estimate.hpp).
#include "headlab/train/memory_estimate.hpp"

#include "headlab/train/optimizer_choice.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace headlab {

namespace {

constexpr double kFloat = 4;  // bytes of a float32
// Floats kept for backward per token and layer, in units of D and F (fitted to measured peak RSS
// with a margin, bench/memory_estimate.sh): an encoder layer keeps its input, q, k, v, the
// context, the output projection, the residual sums and layer norms; a decoder layer has a
// cross-attention on top; the feed-forward block keeps linear1 and ReLU.
constexpr double kEncoderActD = 12, kDecoderActD = 20, kActF = 2;
// (B, h, Tq, Tk) tensors per attention module kept for backward: the softmax and one more (the
// masked scores); with dropout its mask too. Backward adds two of one module at a time.
constexpr double kAttnKept = 2, kAttnBackward = 2;
constexpr double kLogits = 4;  // (B, T, V) tensors: logits, reshaped, log-softmax, gradient
// Floats per parameter a checkpoint save or a resume needs beside the model, with k floats of
// optimiser state per parameter: a save copies the parameters and the optimiser's state into the
// file's bytes (1 + k); a resume reads the file (1 + k) and copies the model's and the optimiser's
// state out of it (1 + k) before taking them. Adam: 6.
double checkpoint_floats_per_parameter(double k) { return 2 * (1 + k); }
constexpr double kRuntime = 48.0 * (1 << 20);  // code, BLAS buffers, the data (measured ~30 MB)
constexpr double kProbe_D = 8;  // (B, T, D) floats of one layer in the probe's forward without a graph

// The batch one training step sees: B sequences, S source and T target tokens.
struct BatchShape {
  double B = 0, S = 0, T = 0;
};

BatchShape training_batch(const TrainOptions& o) {
  switch (o.task) {
    case Task::copy: return {double(o.batch), double(o.length), double(o.length)};
    case Task::induction:
    case Task::recall: return {double(o.batch), 0, double(2 * o.length + 1)};
    case Task::lm: return {double(o.batch), 0, double(o.length)};
    case Task::translate: {  // sentences x longest side <= max_tokens: the worst case is B = max_tokens / max_len
      const double T = double(std::min(o.max_len, o.max_tokens));
      return {double(o.max_tokens) / std::max(T, 1.0), T, T};
    }
  }
  return {};
}

// The held-out batch an evaluation runs at once (no graph).
BatchShape evaluation_batch(const TrainOptions& o) {
  switch (o.task) {
    case Task::copy: return {double(o.eval_sequences), double(o.length), double(o.length)};
    case Task::induction:
    case Task::recall: return {double(o.eval_sequences), 0, double(2 * o.length + 1)};
    case Task::lm: return training_batch(o);  // validation windows go `batch` at a time
    case Task::translate: return training_batch(o);  // validation loss batches have the same budget
  }
  return {};
}

bool decoder_only(const TrainOptions& o) { return decoder_only_task(o.task); }

// Parameters of the model the options describe (the same count as Module::parameter_count, to a
// few biases): attention modules from attention_cost, feed-forward 2 D F + F + D, layer norms 2 D,
// embeddings V D, the generator V D + V (one matrix when tied).
double parameter_count(const TrainOptions& o, double src_vocab, double tgt_vocab) {
  TransformerConfig c = o.model_config(std::size_t(src_vocab), std::size_t(tgt_vocab));
  AttentionConfig a = c.attention;
  a.d_model = c.d_model;
  const double D = double(c.d_model), F = double(c.ff_dim);
  const double attention = double(attention_cost(a, 1).parameters);
  const double ff = c.attention_only ? 0 : 2 * D * F + F + D;
  if (decoder_only(o)) {
    const double layer = attention + ff + (c.attention_only ? 2 : 4) * D;
    return double(c.decoder_layers) * layer + 2 * D + tgt_vocab * D + (c.tie_embeddings ? tgt_vocab : tgt_vocab * D + tgt_vocab);
  }
  const double encoder = double(c.encoder_layers) * (attention + ff + 4 * D);
  const double decoder = double(c.decoder_layers) * (2 * attention + ff + 6 * D);
  const double embeddings = c.tie_embeddings ? src_vocab * D + tgt_vocab : (src_vocab + 2 * tgt_vocab) * D + tgt_vocab;
  return encoder + decoder + 4 * D + embeddings;
}

// Floats of the (B, h, Tq, Tk) attention weights of every attention module of the model, for a batch.
double attention_weights(const TrainOptions& o, const BatchShape& b) {
  if (o.tiled_attention) return 0;  // the tiled kernel keeps (B, h, T) statistics, counted with activations
  const double h = double(o.heads), L = double(o.layers);
  if (decoder_only(o)) return L * b.B * h * b.T * b.T;
  return L * b.B * h * (b.S * b.S + b.T * b.T + b.T * b.S);
}

double attention_modules(const TrainOptions& o) { return double(o.layers) * (decoder_only(o) ? 1 : 3); }

// Floats of the activations a graph keeps, all layers.
// Latent K/V (MLA) keeps its latent c and rotary key k_R (d_c + d_R per token) beside the
// up-projected keys and values (counted in D: they have the full heads' size). A window changes
// nothing: the composed path still forms the whole (B, h, T, T) scores and masks them.
double activations(const TrainOptions& o, const BatchShape& b) {
  const double D = double(o.d_model), F = o.attention_only ? 0 : double(o.ff_dim), L = double(o.layers);
  const double latent = double(o.latent_dim + o.rope_dim);
  if (decoder_only(o)) return L * b.B * b.T * (kEncoderActD * D + kActF * F + latent);
  return L * (b.B * b.S * (kEncoderActD * D + kActF * F) + b.B * b.T * (kDecoderActD * D + kActF * F));
}

// The evaluation's forward without a graph, one layer at a time: that layer's activations
// (10 D + 2 F per token) and attention (the largest module's (B, h, Tq, Tk): 4 of them in the
// encoder of greedy decoding, 6 in a teacher-forced forward with its causal mask, measured), the
// KV caches of every layer (k and v, twice: a cache grows by a copy) and the logits. Copy scores
// greedy decoding: the encoder runs over S tokens once, the decoder one token at a time against
// its caches. Induction scores a teacher-forced forward over T; translate both (validation loss
// over the batch, then greedy BLEU).
double evaluation_floats(const TrainOptions& o, double tgt_vocab) {
  const BatchShape b = evaluation_batch(o);
  const double D = double(o.d_model), F = o.attention_only ? 0 : double(o.ff_dim), L = double(o.layers);
  const double h = o.tiled_attention ? 0 : double(o.heads);
  double tokens = 0, attention = 0, caches = 0;
  switch (o.task) {
    case Task::copy:
      tokens = b.B * b.S;
      attention = 4 * b.B * h * b.S * b.S;
      caches = 2 * 2 * L * b.B * (b.S + b.T) * D;
      break;
    case Task::induction:
    case Task::lm:
    case Task::recall:
      tokens = b.B * b.T;
      attention = 6 * b.B * h * b.T * b.T;
      break;
    case Task::translate:
      tokens = b.B * (b.S + b.T);
      attention = 6 * b.B * h * std::max(b.S, b.T) * std::max(b.S, b.T);
      caches = 2 * 2 * L * b.B * (b.S + b.T) * D;
      break;
  }
  const double one_layer = tokens * (10 * D + 2 * F) + attention;
  const double logits = 2 * b.B * b.T * tgt_vocab;
  return one_layer + caches + logits;
}

}  // namespace

double MemoryEstimate::total() const {
  double sum = 0;
  for (const MemoryItem& item : items) sum += item.bytes;
  return sum;
}

std::string MemoryEstimate::describe(std::size_t largest) const {
  std::vector<MemoryItem> sorted = items;
  std::stable_sort(sorted.begin(), sorted.end(), [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  std::string parts;
  for (std::size_t i = 0; i < std::min(largest, sorted.size()); ++i)
    parts += (i ? ", " : "") + sorted[i].what + " " + memory_text(sorted[i].bytes);
  if (sorted.size() > largest) parts += ", ...";
  return "about " + memory_text(total()) + " (" + parts + ")";
}

MemoryEstimate estimate_training_memory(const TrainOptions& o, std::size_t src_vocab, std::size_t tgt_vocab) {
  // copy and induction: --vocab; recall: its layout; translate and lm: the vocabularies read from their files (lm: at
  // most 256 characters assumed before the text is read)
  const bool from_options = o.task == Task::copy || o.task == Task::induction || o.task == Task::recall;
  const std::size_t unread = o.task == Task::lm ? 256 : 4;
  const double V = double(o.model_config().tgt_vocab);
  const double Vs = from_options ? V : double(std::max<std::size_t>(src_vocab ? src_vocab : unread, 4));
  const double Vt = from_options ? V : double(std::max<std::size_t>(tgt_vocab ? tgt_vocab : unread, 4));
  const double P = parameter_count(o, Vs, Vt);
  const BatchShape b = training_batch(o);
  MemoryEstimate e;
  e.items.push_back({"parameters", kFloat * P});
  e.items.push_back({"gradients", kFloat * P});
  const double k = double(optimizer_floats_per_parameter(o));
  if (k > 0) e.items.push_back({o.optimizer == "sgd" ? "SGD momentum" : "Adam moments", k * kFloat * P});
  e.items.push_back({"activations of one batch", kFloat * activations(o, b)});
  const double weights = attention_weights(o, b), kept = kAttnKept + (o.dropout > 0 ? 1 : 0);
  e.items.push_back({"attention weights of one batch",
                     kFloat * (kept * weights + kAttnBackward * weights / attention_modules(o))});
  e.items.push_back({"logits of one batch", kFloat * kLogits * b.B * b.T * Vt});
  e.items.push_back({"checkpoint save and resume", kFloat * checkpoint_floats_per_parameter(k) * P});
  // translate keeps the best weights so far, and writes them to best.safetensors
  if (o.task == Task::translate) e.items.push_back({"best weights", 2 * kFloat * P});
  e.items.push_back({"evaluation buffers", kFloat * evaluation_floats(o, Vt)});
  e.items.push_back({"runtime", kRuntime});
  return e;
}

MemoryEstimate estimate_inference_memory(const TrainOptions& o, std::size_t src_vocab, std::size_t tgt_vocab,
                                         double checkpoint_bytes) {
  // copy and induction: --vocab; recall: its layout; translate and lm: the vocabularies read from their files (lm: at
  // most 256 characters assumed before the text is read)
  const bool from_options = o.task == Task::copy || o.task == Task::induction || o.task == Task::recall;
  const std::size_t unread = o.task == Task::lm ? 256 : 4;
  const double V = double(o.model_config().tgt_vocab);
  const double Vs = from_options ? V : double(std::max<std::size_t>(src_vocab ? src_vocab : unread, 4));
  const double Vt = from_options ? V : double(std::max<std::size_t>(tgt_vocab ? tgt_vocab : unread, 4));
  MemoryEstimate e;
  const double P = parameter_count(o, Vs, Vt);
  e.items.push_back({"parameters", kFloat * P});
  e.items.push_back({"weights read from the file", kFloat * P});  // copied out, then into the model
  e.items.push_back({"evaluation buffers", kFloat * evaluation_floats(o, Vt)});
  e.items.push_back({"checkpoint file", checkpoint_bytes});
  e.items.push_back({"runtime", kRuntime});
  return e;
}

MemoryEstimate estimate_probe_memory(const TrainOptions& o, std::size_t vocab, std::size_t sequences,
                                     std::size_t length) {
  const double B = double(sequences), T = double(length), D = double(o.d_model), h = double(o.heads);
  const double F = o.attention_only ? 0 : double(o.ff_dim), L = double(o.layers), V = double(vocab);
  const bool decoder_only = decoder_only_task(o.task);
  const double sites = decoder_only ? L : 3 * L;  // encoder self; decoder self and cross
  MemoryEstimate e;
  e.items.push_back({"attention taps of the probe", kFloat * B * sites * (h * T * T + 2 * T * D)});
  e.items.push_back({"one attention module's work", kFloat * B * 4 * h * T * T});
  e.items.push_back({"one layer's activations", kFloat * B * T * (kProbe_D * D + 2 * F) * (decoder_only ? 1 : 2)});
  e.items.push_back({"logits of the probe", kFloat * 2 * B * T * V});
  e.items.push_back({"parameters", kFloat * 2 * parameter_count(o, V, V)});
  e.items.push_back({"runtime", kRuntime});
  return e;
}

double parse_memory_size(const std::string& text) {
  const std::string shown = text.size() > 200 ? text.substr(0, 200) + "..." : text;
  auto bad = [&] {
    return ValueError("'" + shown + "' is not a memory size (a byte count, or a number with K, M, G or T: 512M, 4G)");
  };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  if (text.empty() || !(text[0] >= '0' && text[0] <= '9') || !std::isfinite(value)) throw bad();
  std::string unit = text.substr(used);
  for (const char* suffix : {"iB", "B"})
    if (unit.size() > std::string(suffix).size() && unit.compare(unit.size() - std::string(suffix).size(), std::string::npos, suffix) == 0) {
      unit.resize(unit.size() - std::string(suffix).size());
      break;
    }
  double scale = 1;
  if (unit == "K" || unit == "k") scale = 1024.0;
  else if (unit == "M" || unit == "m") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty() && unit != "B") throw bad();
  if (!(value * scale >= 1))  // 0 would read as "no limit known" and turn the check off
    throw ValueError("'" + shown + "' is no memory to train in (give a size of at least 1 byte: 512M, 4G)");
  return value * scale;
}

std::string memory_text(double bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  const double gib = double(1ull << 30), mib = double(1ull << 20);
  if (bytes >= gib) os << bytes / gib << " GB";
  else os << bytes / mib << " MB";
  return os.str();
}

namespace {

// A byte count read from a cgroup file: -1 when it is missing, "max" or not a number. A v1 "no limit"
// (about 2^63, rounded to pages) reads as -1 too.
double cgroup_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != std::string::npos)
    return -1;  // more than 19 digits: above 2^60 (no limit), and never too long for std::stod
  const double value = std::stod(text);
  return value >= std::ldexp(1.0, 60) ? -1 : value;
}

// The cgroup directories of this process's memory controller, its own first, then each parent up
// to the mount's root: "0::/a/b" (v2) under ROOT, or "N:...memory...:/a/b" (v1) under ROOT/memory.
std::vector<std::pair<std::string, bool>> memory_cgroups(const std::string& self_cgroup, const std::string& root) {
  std::ifstream in(self_cgroup);
  std::string line;
  std::vector<std::pair<std::string, bool>> dirs;  // (directory, v2)
  while (std::getline(in, line)) {
    const std::size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    const bool v2 = line.compare(0, first, "0") == 0 && controllers.empty();
    std::string base;
    if (v2) base = root;
    else if (("," + controllers + ",").find(",memory,") != std::string::npos) base = root + "/memory";
    else continue;
    if (path.find("..") != std::string::npos) continue;  // a path that climbs out: not read
    for (;;) {
      dirs.emplace_back(base + (path == "/" ? "" : path), v2);
      if (path.empty() || path == "/") break;
      path = path.substr(0, path.rfind('/'));
      if (path.empty()) path = "/";
    }
  }
  return dirs;
}

}  // namespace

double available_memory_at(const std::string& meminfo_path, const std::string& self_cgroup,
                           const std::string& cgroup_root) {
  double available = -1;
  std::ifstream meminfo(meminfo_path);
  std::string key, unit;
  double value = 0;
  while (meminfo >> key >> value >> unit)
    if (key == "MemAvailable:") {
      available = value * 1024;  // kB
      break;
    }
  if (available < 0) {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page_size = ::sysconf(_SC_PAGESIZE);
    available = pages > 0 && page_size > 0 ? double(pages) * double(page_size) : 0.0;
  }
  for (const auto& [dir, v2] : memory_cgroups(self_cgroup, cgroup_root)) {
    const double limit = cgroup_number(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    const double used = cgroup_number(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
    if (limit < 0) continue;
    const double room = std::max(0.0, limit - std::max(0.0, used));
    if (available <= 0 || room < available) available = std::max(room, 1.0);  // 1 byte: known and full
  }
  return available;
}

double available_memory() { return available_memory_at("/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup"); }

double memory_limit(const TrainOptions& o) {
  if (o.max_memory.empty()) return available_memory();
  try {
    return parse_memory_size(o.max_memory);
  } catch (const ValueError& e) {
    throw OptionError("max_memory", e.what());
  }
}

void check_memory(const MemoryEstimate& estimate, double limit, const std::string& what, const std::string& advice) {
  if (limit <= 0 || estimate.total() <= limit) return;
  throw OutOfMemory(what + " needs " + estimate.describe() + " but " + memory_text(limit) + " are available; " + advice);
}

void check_training_memory(const TrainOptions& o, std::size_t src_vocab, std::size_t tgt_vocab) {
  check_memory(estimate_training_memory(o, src_vocab, tgt_vocab), memory_limit(o), "this run",
               "lower --layers/--d-model/--ff/--batch/--length/--max-tokens or raise --max-memory");
}

}  // namespace headlab
