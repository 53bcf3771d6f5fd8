// headlab/train/optimizer_choice.hpp: the optimiser and learning-rate schedule a run's options
// choose (--optimizer, --schedule, --lr, --betas, --eps, --momentum, --weight-decay, --decay-all).
//
// Weight decay reaches the weight matrices of the linear and attention layers only, not biases,
// layer norms or embeddings (minGPT's rule: shrinking a norm's gain or an embedding towards 0 is
// not a simpler model), unless --decay-all. As PyTorch's parameter groups, the parameters are
// split into a group with decay and a group without; each group is an optimiser of its own
// (headlab/optim/optim.hpp), given the same learning rate at every step.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "headlab/nn/module.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

// True when --weight-decay reaches the parameter `name` (a name of Module::named_parameters):
// a matrix (two or more dimensions) that is not an embedding table ("...embed.weight").
bool takes_weight_decay(const std::string& name, const Tensor<float>& parameter);

class TrainingOptimizer {
 public:
  // The optimiser o.optimizer names over model's parameters, in groups as above. o must be valid.
  TrainingOptimizer(const TrainOptions& o, Module<float>& model);

  void zero_grad();
  void set_lr(double lr);
  double lr() const;
  void step();
  const std::vector<Tensor<float>>& params() const { return params_; }
  // "AdamW (betas 0.9,0.98, eps 1e-09), weight decay 0.1 on 12 matrices, not on 30 biases, norms and embeddings"
  std::string describe() const;

  // One state for the checkpoint (headlab/optim/optim.hpp's names). With one group its names are
  // the optimiser's own ("exp_avg.3"); with two, each name is prefixed "decay." or "no_decay."
  // (indices within the group). load_state checks everything before changing anything.
  OptimizerState<float> state() const;
  void load_state(const OptimizerState<float>& state);

 private:
  std::vector<std::unique_ptr<Optimizer<float>>> groups_;
  std::vector<std::string> prefixes_;  // "" for a single group; else "decay.", "no_decay."
  std::vector<Tensor<float>> params_;
  std::size_t decayed_ = 0, not_decayed_ = 0;
  std::string description_;
};

// lr(step) of o.schedule: noam (d_model, warmup, lr_factor), cosine / linear (lr, warmup, steps, min_lr),
// constant (lr after `warmup` steps of linear warm-up).
std::unique_ptr<LRSchedule> make_schedule(const TrainOptions& o);

// "schedule noam (factor 0.5, warm-up 100: peak 4.4e-03 at step 100)" or
// "schedule cosine (peak 0.001 after 100 warm-up steps, down to 0 at step 2000)".
std::string describe_schedule(const TrainOptions& o);

// Floats of optimiser state per parameter: Adam and AdamW 2, SGD with momentum 1, plain SGD 0.
std::size_t optimizer_floats_per_parameter(const TrainOptions& o);

}  // namespace headlab
