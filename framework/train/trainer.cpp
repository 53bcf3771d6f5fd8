// trainer.cpp: the copy task and the training loop (checkpoints, exact resume).
//
// One step:  batch ~ data_rng;  logits = model(src, tgt[:, :-1])   (B, L-1, V)
//            loss = cross_entropy(logits, tgt[:, 1:], ignore <pad>, smoothing)
//            backward; clip; lr = Noam(step); Adam step.
// Everything random draws from two generators (data, dropout) whose states
// are saved with the model and the optimiser, so a resumed run repeats the
// uninterrupted one bit for bit on one thread.
#include "headlab/train/trainer.hpp"

#include <chrono>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "headlab/core/anomaly.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/core/random.hpp"
#include "headlab/report/report.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/core/shape_utils.hpp"
#include "train_common.hpp"

namespace headlab {

namespace {
volatile std::sig_atomic_t g_stop_requested = 0;
}
void request_stop() { g_stop_requested = 1; }
bool stop_requested() { return g_stop_requested != 0; }
void clear_stop_request() { g_stop_requested = 0; }

IndexArray copy_task_batch(Generator& gen, std::size_t batch, std::size_t length, std::size_t vocab) {
  IndexArray data = IndexArray::from_shape({batch, length});
  for (std::size_t b = 0; b < batch; ++b) {
    data(b, 0) = 1;  // start symbol
    for (std::size_t t = 1; t < length; ++t) data(b, t) = 1 + static_cast<std::int64_t>(gen.below(vocab - 1));
  }
  return data;
}

double copy_exact_match(Transformer<float>& model, const IndexArray& data) {
  const bool was_training = model.is_training();
  model.eval();
  const std::size_t B = data.shape()[0], L = data.shape()[1];
  const IndexArray decoded = greedy_decode(model, data, L, 1);
  model.train(was_training);
  std::size_t exact = 0;
  for (std::size_t b = 0; b < B; ++b) {
    bool same = true;
    for (std::size_t t = 0; t < L && same; ++t) same = decoded(b, t) == data(b, t);
    exact += same;
  }
  return B ? static_cast<double>(exact) / static_cast<double>(B) : 0.0;
}

namespace {
void parse_into(double& out, const std::string& s) {
  std::size_t used = 0;
  out = std::stod(s, &used);
  if (used != s.size()) throw ValueError("not a number: '" + s + "'");
}
template <typename U>
void parse_into(U& out, const std::string& s) {
  std::size_t used = 0;
  const unsigned long long v = std::stoull(s, &used);
  if (used != s.size() || s.find('-') != std::string::npos) throw ValueError("not a count: '" + s + "'");
  out = static_cast<U>(v);
}

}  // namespace

// ---- Checkpoints (declared in train_common.hpp) -------------------------------
namespace detail {


std::string rng_text(const Generator& g) {
  std::ostringstream os;
  os << g.engine();
  return os.str();
}
void rng_from_text(Generator& g, const std::string& text, const std::string& what) {
  std::istringstream in(text);
  in >> g.engine();
  if (in.fail()) throw ValueError("checkpoint: corrupt random state '" + what + "'");
}

std::string losses_text(const std::vector<double>& losses) {
  std::ostringstream os;
  os << std::setprecision(17);
  for (std::size_t i = 0; i < losses.size(); ++i) os << (i ? "," : "") << losses[i];
  return os.str();
}
// A checkpoint's loss history: numbers separated by commas (ValueError naming the bad one).
std::vector<double> losses_from_text(const std::string& text) {
  std::vector<double> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    double value = 0;
    try {
      parse_into(value, item);
    } catch (const std::exception&) {
      throw ValueError("checkpoint: metadata 'losses': item " + std::to_string(out.size() + 1) + " '" + item +
                       "' is not a number");
    }
    out.push_back(value);
  }
  return out;
}

// A checkpoint's step: a count (ValueError naming the text otherwise).
std::size_t step_from_text(const std::string& text) {
  std::size_t step = 0;
  try {
    parse_into(step, text);
  } catch (const std::exception&) {
    throw ValueError("checkpoint: metadata 'step' is not a count: '" + text + "'");
  }
  return step;
}

void save_checkpoint(const std::string& path, const TrainOptions& o, const Module<float>& model,
                     const Adam<float>* adam, const Generator& data_rng, const Generator& dropout_rng,
                     const TrainState& st, const std::map<std::string, std::string>& extra_metadata) {
  TensorFile file;
  file.metadata = extra_metadata;
  file.metadata["format"] = kCheckpointFormat;
  file.metadata["options"] = o.to_text();
  file.metadata["step"] = std::to_string(st.step);
  file.metadata["data_rng"] = rng_text(data_rng);
  file.metadata["dropout_rng"] = rng_text(dropout_rng);
  file.metadata["losses"] = losses_text(st.losses);
  for (const auto& [name, value] : model.state_dict()) file.add("model." + name, value);
  if (adam)
    for (const auto& [name, value] : adam->state()) file.add("optim." + name, value);
  save_safetensors(path, file);  // atomic: temporary file, then rename
}

// Throws unless the file's metadata says it is a training checkpoint.
void check_checkpoint_format(const TensorFile& file) {
  auto it = file.metadata.find("format");
  if (it == file.metadata.end() || it->second != kCheckpointFormat)
    throw ValueError("checkpoint " + file.source + ": not a headlab training checkpoint (no format '" +
                     std::string(kCheckpointFormat) + "' in its metadata)");
}

// A training checkpoint's file, its format checked.
TensorFile load_checkpoint_file(const std::string& path) {
  TensorFile file = load_safetensors(path);
  check_checkpoint_format(file);
  return file;
}

const std::string& checkpoint_meta(const TensorFile& file, const std::string& key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end()) throw ValueError("checkpoint " + file.source + ": metadata has no '" + key + "'");
  return it->second;
}

// Restores model, optimiser, generators and counters; validates before touching anything.
TrainState load_checkpoint(const std::string& path, const TrainOptions& o, Module<float>& model,
                           Adam<float>& adam, Generator& data_rng, Generator& dropout_rng) {
  const TensorFile file = load_checkpoint_file(path);
  auto meta = [&](const std::string& key) -> const std::string& { return checkpoint_meta(file, key); };
  const TrainOptions saved = TrainOptions::from_text(meta("options"));
  TrainOptions a = saved, b = o;  // everything but the run length must match
  a.steps = b.steps = 0;
  a.time_budget = b.time_budget = 0;
  a.stop_at_perfect = b.stop_at_perfect = false;
  std::string differences;
  for (const OptionInfo& info : train_option_table()) {
    if (!info.stored || info.get(a) == info.get(b)) continue;
    differences += std::string(differences.empty() ? "" : ", ") + info.field + " " + info.get(a) + " there, " +
                   info.get(b) + " here";
  }
  if (!differences.empty())
    throw ValueError("checkpoint " + path + ": it was trained with different options (" + differences + ")");
  Module<float>::StateDict model_state;
  OptimizerState<float> optim_state;
  for (const auto& e : file.entries()) {
    if (e.name.rfind("model.", 0) == 0) model_state.emplace_back(e.name.substr(6), file.get<float>(e.name));
    else if (e.name.rfind("optim.", 0) == 0) optim_state.emplace_back(e.name.substr(6), file.get<float>(e.name));
    else throw ValueError("checkpoint " + path + ": unexpected tensor '" + e.name + "'");
  }
  TrainState st;
  st.step = step_from_text(meta("step"));
  st.losses = losses_from_text(meta("losses"));
  if (st.losses.size() != st.step) throw ValueError("checkpoint " + path + ": loss history does not match the step");
  Generator data_copy, dropout_copy;
  rng_from_text(data_copy, meta("data_rng"), "data_rng");
  rng_from_text(dropout_copy, meta("dropout_rng"), "dropout_rng");
  model.load_state_dict(model_state);  // strict; throws before changing anything
  adam.load_state(optim_state);
  data_rng = data_copy;
  dropout_rng = dropout_copy;
  return st;
}

}  // namespace detail
using namespace detail;

IndexArray held_out_sequences(const TrainOptions& o, std::size_t count) {
  Generator eval_rng(o.seed + 1000003);  // never the training stream's seed
  return copy_task_batch(eval_rng, count, o.length, o.vocab);
}

LoadedModel load_trained_model(const std::string& path) { return load_trained_model(load_checkpoint_file(path)); }

namespace {
// A checkpoint's options decide how big a model load_trained_model builds before the weights are
// compared with it, so corrupt options (d_model 10^12, a billion layers) must be refused first.
// Every parameter is stored in the file, so the model the options describe cannot have more values
// than the file's "model." tensors hold. The bound below counts only what every variant has (the
// embeddings and generator, the query and output projections of each attention, the two
// feed-forward matrices of each layer), in floating point so that it cannot overflow.
void check_model_fits_checkpoint(const TransformerConfig& c, const TensorFile& file, bool decoder_only) {
  double stored = 0;
  for (const auto& e : file.entries())
    if (e.name.rfind("model.", 0) == 0) stored += static_cast<double>(e.numel());
  const double d = static_cast<double>(c.d_model);
  AttentionConfig a = c.attention;
  a.d_model = c.d_model;  // as the layers see it (dim_head() = d_model / heads when head_dim is 0)
  const double heads_width = static_cast<double>(a.num_heads) * static_cast<double>(a.dim_head());
  const double attention = 2 * d * heads_width;                      // W_q and W_o (K and V come on top)
  const double feed_forward = 2 * d * static_cast<double>(c.ff_dim);  // linear1 and linear2
  const double src_vocab = static_cast<double>(c.src_vocab), tgt_vocab = static_cast<double>(c.tgt_vocab);
  const double at_least =
      decoder_only
          ? static_cast<double>(c.decoder_layers) * (attention + (c.attention_only ? 0 : feed_forward)) + 2 * tgt_vocab * d
          : static_cast<double>(c.encoder_layers) * (attention + feed_forward) +
                static_cast<double>(c.decoder_layers) * (2 * attention + feed_forward) +
                (c.tie_embeddings ? src_vocab * d : (src_vocab + 2 * tgt_vocab) * d);
  if (at_least > stored) {
    std::ostringstream os;
    os << "checkpoint " << file.source << ": its options describe a model of at least " << at_least
       << " parameters but the file stores " << stored << " model values (corrupt options?)";
    throw ValueError(os.str());
  }
}
}  // namespace

LoadedModel load_trained_model(const TensorFile& file) {
  check_checkpoint_format(file);
  auto meta = [&](const std::string& key) -> const std::string& { return checkpoint_meta(file, key); };
  LoadedModel out;
  out.options = TrainOptions::from_text(meta("options"));
  out.options.validate();
  out.step = step_from_text(meta("step"));
  Generator gen(0);
  TransformerConfig config = out.options.model_config();
  if (out.options.task == Task::translate) {
    out.src_vocab = Vocabulary::from_text(meta("src_vocab"));
    out.tgt_vocab = Vocabulary::from_text(meta("tgt_vocab"));
    config = out.options.model_config(out.src_vocab.size(), out.tgt_vocab.size());
  }
  const bool decoder_only = out.options.task == Task::induction;
  if (decoder_only) config.src_vocab = 1;  // no encoder
  config.validate();
  check_model_fits_checkpoint(config, file, decoder_only);
  Module<float>* module = nullptr;
  if (decoder_only) {
    out.lm = std::make_unique<DecoderOnlyLM<float>>(config, gen);
    module = out.lm.get();
  } else {
    out.model = std::make_unique<Transformer<float>>(config, gen);
    module = out.model.get();
  }
  Module<float>::StateDict state;
  for (const auto& e : file.entries())
    if (e.name.rfind("model.", 0) == 0) state.emplace_back(e.name.substr(6), file.get<float>(e.name));
  module->load_state_dict(state);
  module->eval();
  return out;
}

// ---- The loop ------------------------------------------------------------------------
namespace detail {
// The Annotated Transformer's make_model: xavier_uniform on every matrix,
// U(-a, a) with a = sqrt(6 / (fan_in + fan_out)). Embeddings then start small
// next to the positional encoding (N(0, 1) * sqrt(D) would drown it out).
void xavier_matrices(Module<float>& model, Generator& gen) {
  for (auto& [name, p] : model.named_parameters()) {
    if (p.dim() < 2) continue;
    const Shape s = p.shape();
    const double bound = std::sqrt(6.0 / static_cast<double>(s[0] + s[1]));
    for (float& v : p.mutable_value()) v = static_cast<float>(gen.uniform(-bound, bound));
  }
}

AdamOptions paper_adam_options() {
  AdamOptions ao;
  ao.beta1 = 0.9;
  ao.beta2 = 0.98;
  ao.eps = 1e-9;
  return ao;
}

// Progress on stderr: a bar on a terminal, plain lines otherwise.
std::unique_ptr<ProgressReporter> make_progress(const TrainOptions& o, std::size_t start_step) {
  if (o.progress == "none") return nullptr;
  ProgressOptions po;
  po.mode = o.progress == "bar" ? ProgressMode::Bar : o.progress == "lines" ? ProgressMode::Lines : ProgressMode::Auto;
  po.start_step = static_cast<std::int64_t>(start_step);
  return std::make_unique<ProgressReporter>(static_cast<std::int64_t>(o.steps), std::cerr, po);
}

double optimise_step(const Tensor<float>& loss, Adam<float>& adam, const std::vector<Tensor<float>>& params,
                     const NoamSchedule& schedule, const TrainOptions& o, std::size_t step) {
  const double value = loss.item();
  if (!std::isfinite(value)) {
    throw NumericalError("train: the loss became " + std::to_string(value) + " at step " + std::to_string(step) +
                         "; the last checkpoint (if any) is kept; rerun with --detect-anomaly to find the op that "
                         "first made a NaN or an infinity");
  }
  loss.backward();
  if (o.clip_norm > 0) clip_grad_norm(params, o.clip_norm);
  adam.set_lr(schedule.lr(step));
  adam.step();
  return value;
}

TrainState start_run(const TrainOptions& o, const std::string& checkpoint_path, Module<float>& model,
                     Adam<float>& adam, Generator& data_rng, Generator& dropout_rng, std::ostream& log) {
  namespace fs = std::filesystem;
  TrainState st;
  if (!o.run_dir.empty()) fs::create_directories(o.run_dir);
  if (o.resume) {
    st = load_checkpoint(checkpoint_path, o, model, adam, data_rng, dropout_rng);
    log << "resumed from " << checkpoint_path << " at step " << st.step << "\n";
  }
  // The run's one config file, written once the options are known to fit the checkpoint.
  if (!o.run_dir.empty()) std::ofstream(fs::path(o.run_dir) / "config.ini") << o.to_config_ini();
  return st;
}

void write_summary(const TrainOptions& o, const TrainResult& r, std::size_t parameters, double flops_per_token,
                   const std::map<std::string, double>& extra) {
  nlohmann::json summary = {{"task", task_name(o.task)},
                            {"steps", r.steps_done},
                            {"train_seconds", r.train_seconds},
                            {"seconds", r.seconds},
                            {"valid_loss", r.valid_loss},
                            {"parameters", parameters},
                            {"flops_per_token", flops_per_token},
                            {"interrupted", r.interrupted}};
  if (o.task == Task::copy) summary["valid_accuracy"] = r.exact_match;
  if (o.task == Task::induction) summary["valid_accuracy"] = r.repeated_accuracy;
  for (const auto& [key, value] : extra) summary[key] = value;
  std::ofstream(std::filesystem::path(o.run_dir) / "summary.json") << summary.dump(2) << "\n";
}

AnomalyScope::AnomalyScope(bool on) : previous_(anomaly_detection_enabled()) {
  set_anomaly_detection(on || previous_);
}
AnomalyScope::~AnomalyScope() { set_anomaly_detection(previous_); }
}  // namespace detail

TrainResult train(const TrainOptions& o, std::ostream& log) {
  o.validate();
  if (o.task == Task::translate) return train_translation(o, log);
  if (o.task == Task::induction) return train_induction(o, log);
  const AnomalyScope anomaly(o.detect_anomaly);
  const auto t0 = std::chrono::steady_clock::now();
  Generator init_rng(o.seed), data_rng(o.seed + 1), dropout_rng(o.seed + 2);
  Transformer<float> model(o.model_config(), init_rng);
  xavier_matrices(model, init_rng);
  model.train();
  Adam<float> adam(model.parameters(), paper_adam_options());
  const NoamSchedule schedule(o.d_model, o.warmup, o.lr_factor);
  const IndexArray held_out = held_out_sequences(o, o.eval_sequences);

  namespace fs = std::filesystem;
  const std::string ckpt = o.run_dir.empty() ? "" : (fs::path(o.run_dir) / "checkpoint.safetensors").string();
  TrainState st = start_run(o, ckpt, model, adam, data_rng, dropout_rng, log);

  log << "copy task: vocab " << o.vocab << ", length " << o.length << ", model d_model " << o.d_model << ", heads "
      << o.heads << ", ff " << o.ff_dim << ", " << o.layers << "+" << o.layers << " layers, "
      << model.parameter_count() << " parameters, batch " << o.batch << ", seed " << o.seed << "\n";
  TrainResult result;
  const auto L = static_cast<std::ptrdiff_t>(o.length), V = static_cast<std::ptrdiff_t>(o.vocab);
  // Progress on stderr; metrics as JSON lines in the run directory.
  std::unique_ptr<ProgressReporter> progress = make_progress(o, st.step);
  std::unique_ptr<MetricsWriter> metrics;
  if (!o.run_dir.empty()) metrics = std::make_unique<MetricsWriter>(o.run_dir);
  auto step_start = std::chrono::steady_clock::now();
  auto within_budget = [&] {
    return o.time_budget <= 0 ||
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < o.time_budget;
  };
  bool evaluated_last = false;
  while (st.step < o.steps && within_budget()) {
    const IndexArray data = copy_task_batch(data_rng, o.batch, o.length, o.vocab);
    const IndexArray tgt_in = xt::view(data, xt::all(), xt::range(0, L - 1));
    IndexArray tgt_out = xt::view(data, xt::all(), xt::range(1, L));
    tgt_out.reshape({tgt_out.size()});
    adam.zero_grad();
    const Tensor<float> logits = model.forward(data, tgt_in, Masks{}, &dropout_rng);  // (B, L-1, V)
    const Tensor<float> loss = cross_entropy(reshape(logits, {-1, V}), tgt_out, 0, static_cast<float>(o.label_smoothing));
    const double loss_value = optimise_step(loss, adam, model.parameters(), schedule, o, st.step + 1);
    ++st.step;
    st.losses.push_back(loss_value);
    const auto now = std::chrono::steady_clock::now();
    const double tokens_per_s = double(o.batch * (o.length - 1)) / std::chrono::duration<double>(now - step_start).count();
    step_start = now;
    if (progress) progress->update(static_cast<std::int64_t>(st.step), loss_value, adam.lr(), tokens_per_s);
    MetricRow row;
    row.set("step", st.step).set("loss", loss_value).set("lr", adam.lr()).set("tokens_per_s", tokens_per_s);

    const bool last = st.step == o.steps;
    evaluated_last = st.step % o.eval_every == 0 || last;
    if (evaluated_last) {
      result.exact_match = copy_exact_match(model, held_out);
      row.set("valid_exact_match", result.exact_match);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (o.progress != "none")
        log << "step " << std::setw(5) << st.step << "  loss " << std::fixed << std::setprecision(4) << loss_value
            << "  lr " << std::scientific << std::setprecision(2) << adam.lr() << std::defaultfloat
            << "  held-out exact match " << std::fixed << std::setprecision(3) << result.exact_match << "  ("
            << std::setprecision(1) << secs << " s)" << std::defaultfloat << "\n";
    }
    if (metrics) metrics->write(row);
    if (!ckpt.empty() && ((o.save_every && st.step % o.save_every == 0) || last))
      save_checkpoint(ckpt, o, model, &adam, data_rng, dropout_rng, st);
    if (o.stop_at_perfect && result.exact_match >= 1.0 && st.step % o.eval_every == 0) break;
    if (stop_requested()) {  // saved just below
      clear_stop_request();
      result.interrupted = true;
      log << "interrupted at step " << st.step << "\n";
      break;
    }
  }
  if (progress) progress->finish();
  // Stopped by the time budget or a request between evaluations: score the final weights.
  if (!evaluated_last && st.step > 0) result.exact_match = copy_exact_match(model, held_out);
  if (!ckpt.empty()) {
    save_checkpoint(ckpt, o, model, &adam, data_rng, dropout_rng, st);
    std::vector<double> steps(st.losses.size());
    for (std::size_t i = 0; i < steps.size(); ++i) steps[i] = double(i + 1);
    std::ofstream(fs::path(o.run_dir) / "loss.svg") << svg_loss_curve(steps, st.losses, "copy task: training loss");
  }
  result.steps_done = st.step;
  result.losses = st.losses;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.train_seconds = result.seconds;
  if (!o.run_dir.empty()) {
    // Held-out loss of the final weights (teacher forcing, no smoothing) for sweeps.
    const IndexArray eval_in = xt::view(held_out, xt::all(), xt::range(0, L - 1));
    IndexArray eval_out = xt::view(held_out, xt::all(), xt::range(1, L));
    eval_out.reshape({eval_out.size()});
    double valid_loss = 0;
    {
      NoGradGuard no_grad;
      model.eval();
      valid_loss = cross_entropy(reshape(model.forward(held_out, eval_in, Masks{}, nullptr), {-1, V}), eval_out, 0).item();
    }
    result.valid_loss = valid_loss;
    write_summary(o, result, model.parameter_count(), transformer_flops_per_token(model.config(), o.length, o.length - 1),
                  {{"valid_exact_match", result.exact_match}});
  }
  return result;
}

}  // namespace headlab
