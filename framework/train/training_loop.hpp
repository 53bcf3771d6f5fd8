// training_loop.hpp (internal): the one training loop every task runs through.
//
// A task (copy_task.cpp, translate_task.cpp, induction_task.cpp) builds its model and its data,
// and says three things: the loss of one step, how to score the weights, and what to write at the
// end. The loop does the rest, the same for every task:
//
//   resume (checkpoint.safetensors) or start; write config.ini
//   while step < steps and the time budget lasts:
//     loss = task.step_loss(batch)                the task's batch through its model (--grad-accum
//     backward                                    batches per step, their gradients summed; at T > 1
//                                                 threads each batch in T parts, one per thread:
//                                                 headlab/core/data_parallel.hpp)
//     clip_grad_norm; lr = schedule(step); optimiser step (headlab/train/optimizer_choice.hpp)
//     progress line / bar; metrics.jsonl row
//     a stop request (SIGINT/SIGTERM): save and stop, no evaluation
//     every eval_every steps and at the last step: task.evaluate (its numbers join the row);
//       the best evaluation by --select so far: its weights to best.safetensors
//     every save_every steps and at the last step: save the checkpoint
//     task.should_stop() (copy: 100% exact match) ends the run early
//   save the checkpoint; loss.svg (headlab/train/run_curves.hpp, from metrics.jsonl);
//   task.finish (final scores, summary.json, its files)
//
// Divergence. A step whose loss is NaN or infinite throws NumericalError (naming the step) before
// any backward. With --stop-on-divergence it ends the run instead, as a result: the loop also
// checks the weights after every update, stops at the first step that made either non-finite
// (LoopState::diverged_step), saves the checkpoint of the step before when its weights are finite
// (never a non-finite one), skips evaluation and task.finish, and writes summary.json itself
// (diverged 1, diverged_step, valid_loss null). Every summary.json also counts the run's loss
// spikes (headlab/train/loss_spikes.hpp: steps whose loss is more than 0.5 nats above the mean of
// the 20 before) and its largest such jump.
//
// On --resume the best so far comes back from best.safetensors (its step and metrics row), so a
// resumed run keeps the best of the whole run, not of its second part.
//
// The time budget counts training steps only: evaluations, saving and start-up are left out.
#pragma once

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "headlab/core/random.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/report/report.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/train/optimizer_choice.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab::detail {

// The loss of one training step and the target tokens it covers (for tokens/s). finite = false:
// with --stop-on-divergence, a batch's loss was NaN or infinite (no backward ran for it).
struct StepLoss {
  Tensor<float> loss;
  std::size_t tokens = 0;
  bool finite = true;
  bool interrupted = false;  // a stop request between two of --grad-accum's batches: the step is dropped
};

// --select as a metrics row key and a direction: valid_loss -> "valid_loss", lowest; bleu ->
// "valid_bleu", highest; accuracy -> "valid_exact_match" (copy), "answer_accuracy" (recall) or "repeated_accuracy"
// (induction), highest.
struct Selection {
  std::string key;
  bool higher_is_better = false;
};
Selection selection_of(const TrainOptions& o);

// The best evaluation so far: its step and its metrics row (what best.safetensors holds).
struct BestSoFar {
  bool found = false;
  std::size_t step = 0;
  MetricRow row;
};
// Whether an evaluation's row beats `best`: a strictly better selected value; on a tie of a
// metric other than valid_loss (BLEU 0 early on), the lower valid_loss. Equal rows keep the earlier
// step; a NaN value (a null in the metrics) never beats a number.
bool improves(const BestSoFar& best, const Selection& selection, const MetricRow& row);

// Where the loop stands, for the task's evaluation line and its final files.
struct LoopState {
  TrainState train;             // step, loss history
  double lr = 0;                // the learning rate of the last step
  double train_seconds = 0;     // time in training steps so far (this call)
  std::vector<double> step_seconds;  // each step's time (this call)
  bool interrupted = false;     // a stop request ended the run
  bool evaluated_last = false;  // the last step ran an evaluation
  // --stop-on-divergence: the step whose loss or update was not finite (0: none), and whether the
  // weights are still finite (a non-finite loss: yes, they are those of the step before).
  std::size_t diverged_step = 0;
  bool weights_finite = true;
  BestSoFar best;               // by --select, over the whole run (restored on --resume)
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  double seconds() const {  // wall time since the run started (this call)
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
};

class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  virtual Module<float>& model() = 0;
  // Draws batch number `batch` (from 1; the step's number unless --grad-accum N, which takes
  // batches (step - 1) * N + 1 to step * N) from data_rng and keeps it; returns its rows (sequences).
  virtual std::size_t draw_batch(std::size_t batch, Generator& data_rng) = 0;
  // Forward pass of rows [begin, end) of the kept batch in training mode, dropout from dropout_rng
  // (nullptr: none). The loss is the mean over those rows' `tokens` target tokens. Called on
  // several threads at once for disjoint rows (a data-parallel step): it must only read the task.
  virtual StepLoss rows_loss(std::size_t begin, std::size_t end, Generator* dropout_rng) = 0;
  // The whole batch's forward pass: draw_batch, then rows_loss of all its rows.
  StepLoss step_loss(std::size_t batch, Generator& data_rng, Generator& dropout_rng) {
    const std::size_t rows = draw_batch(batch, data_rng);
    return rows_loss(0, rows, &dropout_rng);
  }
  // Scores the current weights: sets the task's numbers in `result` and `row`, prints one line to log.
  virtual void evaluate(const LoopState& state, TrainResult& result, MetricRow& row, std::ostream& log) = 0;
  // Called when an evaluation is the best so far (state.best is it): translate keeps the weights.
  virtual void keep_best(const LoopState&) {}
  // Asked after each evaluation: true ends the run early.
  virtual bool should_stop(const LoopState&, const TrainResult&) const { return false; }
  // Metadata saved with every checkpoint of this run (a translation model's vocabularies).
  virtual std::map<std::string, std::string> checkpoint_extras() const { return {}; }
  // Files written into the run directory as the run starts, name -> contents (a translation
  // model's subword merges and vocabularies, for the PyTorch twin).
  virtual std::map<std::string, std::string> starting_files() const { return {}; }
  // After the loop and the last save: final scores and the task's files in the run directory.
  virtual void finish(const LoopState& state, TrainResult& result, std::ostream& log) = 0;
  // Forward FLOPs per target token, for the summary.json of a run that diverged (which the loop
  // writes itself instead of calling finish: its weights are not scored). NaN (null): not given.
  virtual double flops_per_token() const { return std::numeric_limits<double>::quiet_NaN(); }
};

// Runs `task` as the options say. data_rng and dropout_rng are the run's generators (seed + 1,
// seed + 2); the task built its model from seed. Returns the result the task filled in, with steps,
// losses, seconds and interruption set by the loop.
TrainResult run_training_loop(TrainingTask& task, const TrainOptions& o, Generator& data_rng, Generator& dropout_rng,
                              std::ostream& log);

// The whole run of a task type: validates the options, turns anomaly detection on when asked,
// seeds the generators (initialisation seed, data seed + 1, dropout seed + 2), builds the task
// (its model from the initialisation generator) and runs the loop.
template <typename TaskType>
TrainResult train_task(const TrainOptions& o, std::ostream& log);

// ---- What the tasks share ----------------------------------------------------------------------
// Anomaly detection on for the run when o.detect_anomaly, restored afterwards.
class AnomalyScope {
 public:
  explicit AnomalyScope(bool on);
  ~AnomalyScope();
  AnomalyScope(const AnomalyScope&) = delete;
  AnomalyScope& operator=(const AnomalyScope&) = delete;

 private:
  bool previous_;
};
// --keep-checkpoints: copies `checkpoint` (just saved at `step`) to
// RUN_DIR/checkpoints/step-<step, 6 digits>.safetensors; IOError when it cannot.
void keep_checkpoint_copy(const TrainOptions& o, const std::string& checkpoint, std::size_t step);
// RUN_DIR/summary.json, the final numbers of a run (what `headlab ablate` aggregates):
// task, steps, train_seconds, seconds, valid_loss, valid_accuracy (copy: exact match;
// induction: repeated-half accuracy; absent for translate), parameters,
// flops_per_token, interrupted, select, best_step and best_value (the --select value of the
// best evaluation, kept in best.safetensors), and the task's own `extra` fields.
void write_summary(const TrainOptions& o, const TrainResult& r, std::size_t parameters, double flops_per_token,
                   const std::map<std::string, double>& extra = {});
// xavier_uniform on every matrix (The Annotated Transformer's make_model).
void xavier_matrices(Module<float>& model, Generator& gen);
// Rows [begin, end) of a batch's array along its first axis (a part of a data-parallel step).
template <typename A>
A batch_rows(const A& a, std::size_t begin, std::size_t end) {
  std::vector<std::size_t> shape(a.shape().begin(), a.shape().end());
  const std::size_t row = shape[0] ? a.size() / shape[0] : 0;  // elements per row (row-major: contiguous)
  shape[0] = end - begin;
  A rows = A::from_shape(shape);
  std::copy(a.data() + begin * row, a.data() + end * row, rows.data());
  return rows;
}
// RUN_DIR/<name>, or "" without a run directory.
std::string run_file(const TrainOptions& o, const std::string& name);

template <typename TaskType>
TrainResult train_task(const TrainOptions& o, std::ostream& log) {
  o.validate();
  const AnomalyScope anomaly(o.detect_anomaly);
  Generator init_rng(o.seed), data_rng(o.seed + 1), dropout_rng(o.seed + 2);
  TaskType task(o, init_rng, log);
  return run_training_loop(task, o, data_rng, dropout_rng, log);
}

}  // namespace headlab::detail
