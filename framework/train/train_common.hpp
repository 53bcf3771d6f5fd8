// train_common.hpp (internal): what the copy and translation loops share:
// checkpoints, initialisation, the optimiser set-up, progress and one update.
//
// A checkpoint is a safetensors file: tensors "model.<name>" (and "optim.<name>"
// unless it only keeps weights), metadata format, options (TrainOptions::to_text),
// step, the two generators' states, the loss history, and task extras (the
// vocabularies of a translation model).
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "headlab/models/transformer.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/core/random.hpp"
#include "headlab/report/report.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab::detail {

inline const char* kCheckpointFormat = "headlab-train-checkpoint-1";

struct TrainState {
  std::size_t step = 0;
  std::vector<double> losses;
};

// Atomic (temporary file, then rename). adam == nullptr keeps the weights only.
void save_checkpoint(const std::string& path, const TrainOptions& o, const Module<float>& model,
                     const Adam<float>* adam, const Generator& data_rng, const Generator& dropout_rng,
                     const TrainState& st, const std::map<std::string, std::string>& extra_metadata = {});
// The file, its format checked.
TensorFile load_checkpoint_file(const std::string& path);
const std::string& checkpoint_meta(const TensorFile& file, const std::string& key);
// Restores model, optimiser, generators and counters for a resume; checks the
// options match (all but steps and time budget) and validates before changing anything.
TrainState load_checkpoint(const std::string& path, const TrainOptions& o, Module<float>& model,
                           Adam<float>& adam, Generator& data_rng, Generator& dropout_rng);
// The start of a run: creates the run directory, restores the checkpoint when
// o.resume (logging it), writes config.ini (TrainOptions::to_config_ini). Returns the restored state (or a fresh one).
TrainState start_run(const TrainOptions& o, const std::string& checkpoint_path, Module<float>& model,
                     Adam<float>& adam, Generator& data_rng, Generator& dropout_rng, std::ostream& log);
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
// RUN_DIR/summary.json, the final numbers of a run (what `headlab ablate` aggregates):
// task, steps, train_seconds, seconds, valid_loss, valid_accuracy (copy: exact match;
// induction: repeated-half accuracy; absent for translate), parameters,
// flops_per_token, interrupted, and the task's own `extra` fields.
void write_summary(const TrainOptions& o, const TrainResult& r, std::size_t parameters, double flops_per_token,
                   const std::map<std::string, double>& extra = {});
// xavier_uniform on every matrix (The Annotated Transformer's make_model).
void xavier_matrices(Module<float>& model, Generator& gen);
// Adam as in Vaswani et al.: beta1 0.9, beta2 0.98, eps 1e-9 (the learning rate comes from the schedule).
AdamOptions paper_adam_options();
// A progress reporter on stderr as --progress says (nullptr for "none").
std::unique_ptr<ProgressReporter> make_progress(const TrainOptions& o, std::size_t start_step);
// The update of step `step` (from 1) for a computed loss: checks it is finite (else
// ValueError naming the step), backward, clip by global norm, lr = schedule(step),
// Adam step. Returns the loss value.
double optimise_step(const Tensor<float>& loss, Adam<float>& adam, const std::vector<Tensor<float>>& params,
                     const NoamSchedule& schedule, const TrainOptions& o, std::size_t step);

}  // namespace headlab::detail
