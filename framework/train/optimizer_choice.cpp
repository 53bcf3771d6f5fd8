// optimizer_choice.cpp: the options' optimiser in weight-decay groups, and their schedule
// (headlab/train/optimizer_choice.hpp).
#include "headlab/train/optimizer_choice.hpp"

#include <set>
#include <sstream>

namespace headlab {

namespace {

const std::string kEmbeddingSuffix = "embed.weight";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::unique_ptr<Optimizer<float>> make_optimizer(const TrainOptions& o, std::vector<Tensor<float>> params,
                                                 double weight_decay) {
  if (o.optimizer == "sgd") {
    SGDOptions so;
    so.momentum = o.momentum;
    so.weight_decay = weight_decay;
    return std::make_unique<SGD<float>>(std::move(params), so);
  }
  AdamOptions ao;
  ao.beta1 = o.betas.beta1;
  ao.beta2 = o.betas.beta2;
  ao.eps = o.eps;
  ao.weight_decay = weight_decay;
  if (o.optimizer == "adamw") return std::make_unique<AdamW<float>>(std::move(params), ao);
  return std::make_unique<Adam<float>>(std::move(params), ao);
}

std::string number_text(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

bool takes_weight_decay(const std::string& name, const Tensor<float>& parameter) {
  return parameter.dim() >= 2 && !ends_with(name, kEmbeddingSuffix);
}

TrainingOptimizer::TrainingOptimizer(const TrainOptions& o, Module<float>& model) {
  std::vector<Tensor<float>> decay, no_decay;
  std::set<const Node<float>*> seen;  // a tied tensor (one under several names) counts under its first name
  for (auto& [name, p] : model.named_parameters()) {
    if (!seen.insert(p.node().get()).second) continue;
    params_.push_back(p);
    (o.decay_all || takes_weight_decay(name, p) ? decay : no_decay).push_back(p);
  }
  decayed_ = decay.size();
  not_decayed_ = no_decay.size();
  if (o.weight_decay == 0 || o.decay_all || no_decay.empty() || decay.empty()) {
    // One group: every parameter, in model order (the state's names as a plain optimiser's).
    groups_.push_back(make_optimizer(o, params_, o.weight_decay));
    prefixes_.push_back("");
  } else {
    groups_.push_back(make_optimizer(o, std::move(decay), o.weight_decay));
    prefixes_.push_back("decay.");
    groups_.push_back(make_optimizer(o, std::move(no_decay), 0.0));
    prefixes_.push_back("no_decay.");
  }
  description_ = groups_[0]->name();
  if (o.optimizer == "sgd") {
    if (o.momentum != 0) description_ += " (momentum " + number_text(o.momentum) + ")";
  } else {
    description_ += " (betas " + number_text(o.betas.beta1) + "," + number_text(o.betas.beta2) + ", eps " +
                    number_text(o.eps) + ")";
  }
  if (o.weight_decay != 0) {
    description_ += ", weight decay " + number_text(o.weight_decay);
    description_ += o.decay_all ? " on every parameter"
                                : " on " + std::to_string(decayed_) + " matrices, not on " +
                                      std::to_string(not_decayed_) + " biases, norms and embeddings";
  }
}

void TrainingOptimizer::zero_grad() {
  for (auto& g : groups_) g->zero_grad();
}
void TrainingOptimizer::set_lr(double lr) {
  for (auto& g : groups_) g->set_lr(lr);
}
double TrainingOptimizer::lr() const { return groups_[0]->lr(); }
void TrainingOptimizer::step() {
  for (auto& g : groups_) g->step();
}
std::string TrainingOptimizer::describe() const { return description_; }

OptimizerState<float> TrainingOptimizer::state() const {
  OptimizerState<float> all;
  for (std::size_t g = 0; g < groups_.size(); ++g)
    for (auto& [name, value] : groups_[g]->state()) all.emplace_back(prefixes_[g] + name, std::move(value));
  return all;
}

void TrainingOptimizer::load_state(const OptimizerState<float>& state) {
  if (groups_.size() == 1) {
    groups_[0]->load_state(state);
    return;
  }
  std::vector<OptimizerState<float>> parts(groups_.size());
  for (const auto& [name, value] : state) {
    std::size_t g = 0;
    while (g < groups_.size() && name.rfind(prefixes_[g], 0) != 0) ++g;
    if (g == groups_.size())
      throw ValueError("optimizer state: '" + name + "' belongs to no weight-decay group (decay., no_decay.)");
    parts[g].emplace_back(name.substr(prefixes_[g].size()), value);
  }
  // Each group checks its part before changing anything; should a later group refuse its part,
  // the groups already loaded get their previous state back.
  std::vector<OptimizerState<float>> before;
  for (const auto& group : groups_) before.push_back(group->state());
  std::size_t loaded = 0;
  try {
    for (; loaded < groups_.size(); ++loaded) groups_[loaded]->load_state(parts[loaded]);
  } catch (...) {
    for (std::size_t g = 0; g < loaded; ++g) groups_[g]->load_state(before[g]);
    throw;
  }
}

std::unique_ptr<LRSchedule> make_schedule(const TrainOptions& o) {
  if (o.schedule == "cosine") return std::make_unique<WarmupCosine>(o.lr, o.warmup, o.steps, o.min_lr);
  if (o.schedule == "linear") return std::make_unique<WarmupLinear>(o.lr, o.warmup, o.steps, o.min_lr);
  if (o.schedule == "constant") return std::make_unique<WarmupConstant>(o.lr, o.warmup);
  return std::make_unique<NoamSchedule>(o.d_model, o.warmup, o.lr_factor);
}

std::string describe_schedule(const TrainOptions& o) {
  if (o.schedule == "noam") {
    const NoamSchedule noam(o.d_model, o.warmup, o.lr_factor);
    return "schedule noam (factor " + number_text(o.lr_factor) + ", warm-up " + std::to_string(o.warmup) +
           ": peak " + number_text(noam.lr(o.warmup)) + " at step " + std::to_string(o.warmup) + ")";
  }
  std::string s = "schedule " + o.schedule + " (peak " + number_text(o.lr) + " after " + std::to_string(o.warmup) +
                  " warm-up steps";
  if (o.schedule != "constant") s += ", down to " + number_text(o.min_lr) + " at step " + std::to_string(o.steps);
  return s + ")";
}

std::size_t optimizer_floats_per_parameter(const TrainOptions& o) {
  if (o.optimizer == "sgd") return o.momentum != 0 ? 1 : 0;
  return 2;
}

}  // namespace headlab
