// training_loop.cpp: the one loop every task trains through (training_loop.hpp).
#include "training_loop.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "headlab/core/anomaly.hpp"
#include "headlab/core/data_parallel.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/core/machine.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/train/loss_spikes.hpp"
#include "headlab/train/run_curves.hpp"
#include "headlab/train/run_dir.hpp"

namespace headlab::detail {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Progress on stderr as --progress says: a bar on a terminal, plain lines otherwise; none: nullptr.
std::unique_ptr<ProgressReporter> make_progress(const TrainOptions& o, std::size_t start_step) {
  if (o.progress == "none") return nullptr;
  ProgressOptions po;
  po.mode = o.progress == "bar" ? ProgressMode::Bar : o.progress == "lines" ? ProgressMode::Lines : ProgressMode::Auto;
  po.start_step = static_cast<std::int64_t>(start_step);
  po.time_budget = o.time_budget;  // the ETA is the nearer stop; steps 0: the budget alone
  return std::make_unique<ProgressReporter>(static_cast<std::int64_t>(o.steps), std::cerr, po);
}

// The loss of update `step` (from 1): o.grad_accum batches (batch numbers (step - 1) * N + 1 to
// step * N), each forward and backward at once so that only one batch's graph is alive. The
// gradient is that of the mean over all their target tokens, as one N-times-larger batch would give:
//   loss = sum_k tokens_k * loss_k / sum_k tokens_k        (loss_k: the mean over batch k's tokens)
// At several threads a batch is cut into one part per thread, each part's forward and backward on
// its own thread (headlab/core/data_parallel.hpp): the same sum, over parts as well as batches.
// A loss that is not finite is a NumericalError naming the step, before that batch's gradient
// reaches the parameters; with --stop-on-divergence it is returned with finite = false instead.
// A stop request (Ctrl-C, SIGTERM) between two batches returns interrupted = true at once: a step of
// a million batches must not outlive the signal.
StepLoss accumulated_step_loss(TrainingTask& task, const TrainOptions& o, std::size_t step, Generator& data_rng,
                               Generator& dropout_rng) {
  auto finite = [&](double value) {
    if (std::isfinite(value)) return true;
    if (o.stop_on_divergence) return false;
    throw NumericalError("train: the loss became " + std::to_string(value) + " at step " + std::to_string(step) +
                         "; the last checkpoint (if any) is kept; rerun with --detect-anomaly to find the op that "
                         "first made a NaN or an infinity (or --stop-on-divergence to record it as a result)");
  };
  StepLoss diverged;
  diverged.finite = false;
  double weighted_sum = 0;
  std::size_t tokens = 0;
  for (std::size_t k = 0; k < o.grad_accum; ++k) {
    if (k > 0 && stop_requested()) {
      StepLoss dropped;
      dropped.interrupted = true;
      return dropped;
    }
    const std::size_t rows = task.draw_batch((step - 1) * o.grad_accum + k + 1, data_rng);
    const std::size_t parts = data_parallel_parts(rows);
    if (parts > 1) {  // the gradient of the sum over the batch's tokens, part by part
      const PartLossFn part_loss = [&](std::size_t begin, std::size_t end, Generator* dropout) {
        const StepLoss part = task.rows_loss(begin, end, dropout);
        return PartLoss{part.loss, part.tokens};
      };
      const DataParallelResult r = data_parallel_backward(task.model().parameters(), rows, parts, part_loss, &dropout_rng);
      const double value = !r.finite ? std::numeric_limits<double>::quiet_NaN()
                           : r.tokens ? r.loss_sum / double(r.tokens) : 0.0;  // no target token: 0, as cross_entropy
      if (!finite(value)) return diverged;
      weighted_sum += r.loss_sum;
      tokens += r.tokens;
      continue;
    }
    StepLoss batch = task.rows_loss(0, rows, &dropout_rng);
    const double value = batch.loss.item();
    if (!finite(value)) return diverged;
    if (o.grad_accum == 1) {  // the plain step: backward of the batch's own mean
      batch.loss.backward();
      return batch;
    }
    mul_scalar(batch.loss, static_cast<float>(batch.tokens)).backward();  // gradients add up across batches
    weighted_sum += value * double(batch.tokens);
    tokens += batch.tokens;
  }
  const float inverse_tokens = tokens ? 1.0f / static_cast<float>(tokens) : 0.0f;
  for (const Tensor<float>& p : task.model().parameters()) {
    if (!p.has_grad()) continue;
    Array<float>& g = p.node()->grad;  // the summed gradient, made the mean over all tokens
    for (std::size_t i = 0; i < g.size(); ++i) g.data()[i] *= inverse_tokens;
  }
  StepLoss total;
  total.loss = Tensor<float>(Array<float>(tokens ? weighted_sum / double(tokens) : 0.0), false);
  total.tokens = tokens;
  return total;
}

// Whether every weight of the model is finite (--stop-on-divergence checks after each update).
bool finite_weights(const Module<float>& model) {
  for (const Tensor<float>& p : model.parameters())
    for (const float v : p.value())
      if (!std::isfinite(v)) return false;
  return true;
}

// An ostream that drops everything: evaluation lines under --progress none.
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

// best.safetensors: the weights only, with the checkpoint's metadata and the evaluation's metrics
// row ("best_metrics", one JSON line) that --resume reads back.
void save_best(const TrainOptions& o, const Module<float>& model, const TrainState& st,
               std::map<std::string, std::string> extras, const MetricRow& row) {
  extras["best_metrics"] = to_json_line(row);
  const Generator unused;
  save_checkpoint(run_file(o, "best.safetensors"), o, model, nullptr, unused, unused, st, extras);
}

// On --resume: the best so far from best.safetensors (none when the file is missing, or was written
// by a headlab before --select, whose file has no metrics row: then the next evaluation is the best).
// FormatError naming the file when it is not a checkpoint or its row lacks the selected value.
BestSoFar restore_best(const TrainOptions& o, std::ostream& log) {
  const std::string path = run_file(o, "best.safetensors");
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  const TensorFile file = load_checkpoint_file(path);
  if (!file.metadata.count("best_metrics")) {
    log << "note: " << path << " has no best_metrics (an older run): the next evaluation replaces it\n";
    return {};
  }
  BestSoFar best;
  best.found = true;
  best.row = metric_row_from_json_line(checkpoint_meta(file, "best_metrics"), "checkpoint " + path + ": best_metrics: ");
  const std::string key = selection_of(o).key;
  if (!best.row.has(key) || !best.row.has("step"))
    throw FormatError("checkpoint " + path + ": best_metrics has no '" + key + "' or 'step' (--select " + o.select + ")");
  // The numbers the selection compares, checked before any step: a hand-edited text is named here
  // ("checkpoint runs/a/best.safetensors: best_metrics: 'valid_loss' is not a number: 'true'").
  const std::string where = "checkpoint " + path + ": best_metrics: ";
  best.step = static_cast<std::size_t>(metric_number(best.row, "step", where));
  for (const std::string& name : {key, std::string("valid_loss"), std::string("valid_bleu")})
    if (best.row.has(name)) metric_number(best.row, name, where);
  return best;
}

}  // namespace

Selection selection_of(const TrainOptions& o) {
  if (o.select == "bleu") return {"valid_bleu", true};
  if (o.select == "accuracy")
    return {o.task == Task::induction ? "repeated_accuracy" : o.task == Task::recall ? "answer_accuracy" : "valid_exact_match",
            true};
  return {"valid_loss", false};
}

bool improves(const BestSoFar& best, const Selection& selection, const MetricRow& row) {
  if (!best.found) return true;
  const double value = row.number(selection.key), old = best.row.number(selection.key);
  if (std::isnan(value) || std::isnan(old)) return std::isnan(old) && !std::isnan(value);  // a number beats NaN
  if (value != old) return selection.higher_is_better ? value > old : value < old;
  return selection.key != "valid_loss" && row.number("valid_loss") < best.row.number("valid_loss");
}

std::string run_file(const TrainOptions& o, const std::string& name) {
  return o.run_dir.empty() ? std::string() : (fs::path(o.run_dir) / name).string();
}

TrainResult run_training_loop(TrainingTask& task, const TrainOptions& o, Generator& data_rng, Generator& dropout_rng,
                              std::ostream& log) {
  Module<float>& model = task.model();
  model.train();
  TrainingOptimizer optimizer(o, model);
  const std::unique_ptr<LRSchedule> schedule = make_schedule(o);
  const std::string ckpt = run_file(o, "checkpoint.safetensors");
  const std::map<std::string, std::string> extras = task.checkpoint_extras();

  // The run directory, locked until the run ends: refused if it holds a run and neither --resume
  // nor --overwrite says what to do with it (headlab/train/run_dir.hpp).
  std::optional<RunDir> run_dir;
  if (!o.run_dir.empty()) run_dir.emplace(o.run_dir, train_run_dir_spec(o.resume, o.overwrite));

  // Start or resume. Nothing in the run directory changes before the checkpoint is accepted; then
  // metrics.jsonl is cut back to the checkpoint's step, and the run's one config file is written.
  LoopState state;
  if (o.resume) {
    state.train = load_checkpoint(ckpt, o, model, optimizer, data_rng, dropout_rng);
    state.best = restore_best(o, log);  // a bad best.safetensors is refused before anything changes
    const std::size_t dropped = cut_metrics_to_step(run_file(o, "metrics.jsonl"), state.train.step);
    log << "resumed from " << ckpt << " at step " << state.train.step;
    if (dropped > 0) log << " (" << dropped << " metrics.jsonl lines after it dropped)";
    log << std::endl;  // at once, also into a log file: a requeued run says it went on
  }
  if (!o.run_dir.empty()) {
    write_file_atomic(run_file(o, "config.ini"), o.to_config_ini(), "train");
    for (const auto& [name, contents] : task.starting_files()) write_file_atomic(run_file(o, name), contents, "train");
  }
  const Selection selection = selection_of(o);

  std::unique_ptr<ProgressReporter> progress = make_progress(o, state.train.step);
  std::unique_ptr<MetricsWriter> metrics;
  if (!o.run_dir.empty()) metrics = std::make_unique<MetricsWriter>(o.run_dir);
  NullBuffer discard;
  std::ostream quiet(&discard);
  std::ostream& eval_log = o.progress == "none" ? quiet : log;
  eval_log << "optimiser: " << optimizer.describe() << "; " << describe_schedule(o) << "\n";
  log.flush();  // the header is in a log file before the first step (tail -f; a sweep waiting on it)
  const auto budget_left = [&] { return o.time_budget <= 0 || state.train_seconds < o.time_budget; };
  const auto steps_left = [&] { return o.steps == 0 || state.train.step < o.steps; };  // 0: no step cap

  TrainResult result;
  TrainState& st = state.train;
  while (steps_left() && budget_left()) {
    const auto step_start = Clock::now();
    // One update: the step's loss and gradients, clipping by global norm, lr(step), the optimiser.
    optimizer.zero_grad();
    // A stop is taken between --grad-accum's batches only: then the generators go back to here.
    std::optional<std::pair<Generator, Generator>> before;
    if (o.grad_accum > 1) before.emplace(data_rng, dropout_rng);
    const StepLoss step = accumulated_step_loss(task, o, st.step + 1, data_rng, dropout_rng);
    if (step.interrupted) {  // the partial step is dropped: the checkpoint resumes as after step st.step
      std::tie(data_rng, dropout_rng) = *before;
      optimizer.zero_grad();
      state.interrupted = true;
      clear_stop_request();
      log << "interrupted during step " << st.step + 1 << " (its partial gradient dropped); the run stands at step "
          << st.step << "\n";
      break;
    }
    if (!step.finite) {  // --stop-on-divergence: this step's loss is not finite; the weights are the last step's
      state.diverged_step = st.step + 1;
      break;
    }
    const double loss_value = step.loss.item();
    if (o.clip_norm > 0) clip_grad_norm(optimizer.params(), o.clip_norm);
    optimizer.set_lr(schedule->lr(st.step + 1));
    optimizer.step();
    if (o.stop_on_divergence && !finite_weights(model)) {  // the update itself broke the weights
      state.diverged_step = st.step + 1;
      state.weights_finite = false;
      break;
    }
    ++st.step;
    st.losses.push_back(loss_value);
    state.lr = optimizer.lr();
    const double secs = seconds_since(step_start);
    state.train_seconds += secs;
    state.step_seconds.push_back(secs);
    const double tokens_per_s = double(step.tokens) / secs;
    if (progress)
      progress->update(static_cast<std::int64_t>(st.step), loss_value, optimizer.lr(), tokens_per_s, state.train_seconds);
    MetricRow row;
    row.set("step", st.step).set("loss", loss_value).set("lr", optimizer.lr()).set("tokens_per_s", tokens_per_s);

    state.interrupted = stop_requested();
    const bool last = !steps_left() || !budget_left() || state.interrupted;
    state.evaluated_last = !state.interrupted && (st.step % o.eval_every == 0 || last);
    if (state.interrupted) {
      clear_stop_request();
      log << "interrupted at step " << st.step << "\n";
    } else if (state.evaluated_last) {
      if (progress) progress->show();  // the step's progress line, then the evaluation's
      task.evaluate(state, result, row, eval_log);
      eval_log.flush();  // a log read as it grows (tail -f, a pipe) sees every evaluation at once
      row.set("train_seconds", state.train_seconds);
      if (improves(state.best, selection, row)) {
        state.best = {true, st.step, row};
        if (!o.run_dir.empty()) save_best(o, model, st, extras, row);
        task.keep_best(state);
      }
    }
    const bool save = !ckpt.empty() && ((o.save_every && st.step % o.save_every == 0) || last);
    if (metrics) {
      metrics->write(row);
      if (state.evaluated_last || save) metrics->sync();  // every line up to a checkpoint's step is durable
    }
    if (save) {
      save_checkpoint(ckpt, o, model, &optimizer, data_rng, dropout_rng, st, extras);
      if (o.keep_checkpoints && !state.interrupted) keep_checkpoint_copy(o, ckpt, st.step);
    }
    if (state.interrupted) break;
    if (state.evaluated_last && task.should_stop(state, result)) break;
  }
  if (progress) progress->finish();
  const bool diverged = state.diverged_step != 0;
  if (!ckpt.empty()) {
    if (metrics) metrics->sync();
    // A diverged run keeps the checkpoint of its last finite step, never non-finite weights.
    if (state.weights_finite) save_checkpoint(ckpt, o, model, &optimizer, data_rng, dropout_rng, st, extras);
    try {
      const std::vector<MetricRow> rows = read_metrics(run_file(o, "metrics.jsonl"));
      write_file_atomic(run_file(o, "loss.svg"), run_curves(rows, o.task).svg, "train");
    } catch (const FormatError& e) {  // a row edited by hand: the picture is left out, never the run's end
      log << "warning: " << run_file(o, "metrics.jsonl") << ": " << e.what() << "; loss.svg is not drawn\n";
    }
  }
  result.steps_done = st.step;
  result.losses = st.losses;
  result.interrupted = state.interrupted;
  result.train_seconds = state.train_seconds;
  result.arithmetic = run_arithmetic(st);
  if (state.best.found) {
    result.best_step = state.best.step;
    result.best_value = state.best.row.number(selection.key);
  }
  result.diverged = diverged;
  result.diverged_step = state.diverged_step;
  result.seconds = state.seconds();
  if (diverged) {  // no scores for weights that broke down: the summary alone
    result.valid_loss = std::numeric_limits<double>::quiet_NaN();
    write_summary(o, result, model.parameter_count(), task.flops_per_token());
    return result;
  }
  task.finish(state, result, eval_log);
  result.seconds = state.seconds();
  return result;
}

// ---- What the tasks share ----------------------------------------------------------------------
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

// --keep-checkpoints: RUN_DIR/checkpoints/step-000250.safetensors, a copy of the checkpoint just saved
// (zero-padded, so that the files sort by step).
void keep_checkpoint_copy(const TrainOptions& o, const std::string& checkpoint, std::size_t step) {
  namespace fs = std::filesystem;
  char name[64];
  std::snprintf(name, sizeof name, "step-%06zu.safetensors", step);
  const fs::path dir = fs::path(o.run_dir) / "checkpoints";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec) fs::copy_file(checkpoint, dir / name, fs::copy_options::overwrite_existing, ec);
  if (ec) throw IOError("train: --keep-checkpoints: cannot write " + (dir / name).string() + ": " + ec.message());
}

void write_summary(const TrainOptions& o, const TrainResult& r, std::size_t parameters, double flops_per_token,
                   const std::map<std::string, double>& extra) {
  if (o.run_dir.empty()) return;
  nlohmann::json summary = {{"task", task_name(o.task)},
                            {"steps", r.steps_done},
                            {"train_seconds", r.train_seconds},
                            {"seconds", r.seconds},
                            {"valid_loss", r.valid_loss},
                            {"parameters", parameters},
                            {"flops_per_token", flops_per_token},
                            {"interrupted", r.interrupted},
                            {"threads", threads()},
                            {"cpu", cpu_model()},
                            {"arithmetic", r.arithmetic},
                            {"select", o.select},
                            {"best_step", r.best_step},
                            {"best_value", r.best_value}};
  if (o.task == Task::copy) summary["valid_accuracy"] = r.exact_match;
  if (o.task == Task::induction) summary["valid_accuracy"] = r.repeated_accuracy;
  if (o.task == Task::recall) summary["valid_accuracy"] = r.answer_accuracy;
  // Loss spikes over the whole run (headlab/train/loss_spikes.hpp), divergence as a number (1/0)
  // so that `headlab ablate` averages it into the share of runs that diverged.
  const LossSpikes spikes = loss_spikes(r.losses);
  summary["loss_spikes"] = spikes.count;
  summary["max_loss_jump"] = spikes.max_jump;
  summary["diverged"] = r.diverged ? 1 : 0;
  if (r.diverged) summary["diverged_step"] = r.diverged_step;
  for (const auto& [key, value] : extra) summary[key] = value;
  write_file_atomic(run_file(o, "summary.json"), summary.dump(2) + "\n", "train");
}

AnomalyScope::AnomalyScope(bool on) : previous_(anomaly_detection_enabled()) {
  set_anomaly_detection(on || previous_);
}
AnomalyScope::~AnomalyScope() { set_anomaly_detection(previous_); }

}  // namespace headlab::detail
