// headlab/optim/schedules.hpp: learning-rate schedules, lr(step) for the optimisers of
// headlab/optim/optim.hpp (which includes this header):
//
//   opt.set_lr(schedule.lr(opt.steps() + 1));  // before opt.step(); schedules count steps from 1
#pragma once

#include <cstddef>

namespace headlab {

// lr(step) for step = 1, 2, ... (the step about to be taken: opt.steps() + 1).
// lr(0) throws ValueError. Constructors validate their arguments (ValueError
// naming the argument).
class LRSchedule {
 public:
  virtual ~LRSchedule() = default;
  virtual double lr(std::size_t step) const = 0;
};

// lr(step) = lr.
class ConstantSchedule : public LRSchedule {
 public:
  explicit ConstantSchedule(double lr);
  double lr(std::size_t step) const override;

 private:
  double lr_;
};

// "Attention Is All You Need", section 5.3:
//   lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
// Rises linearly for `warmup` steps, peaks at step == warmup with
// factor * (d_model * warmup)^-0.5, then decays as step^-0.5.
// d_model, warmup > 0; factor > 0.
class NoamSchedule : public LRSchedule {
 public:
  NoamSchedule(std::size_t d_model, std::size_t warmup, double factor = 1.0);
  double lr(std::size_t step) const override;

 private:
  std::size_t d_model_;
  std::size_t warmup_;
  double factor_;
};

// Linear warmup to base_lr, then a decay down to min_lr at step `total`:
//   step <= warmup:          lr = base_lr * step / warmup
//   warmup < step <= total:  p = (step - warmup) / (total - warmup)
//                            lr = min_lr + (base_lr - min_lr) * shape(p),   shape(0) = 1, shape(1) = 0
//   step > total:            lr = min_lr
// So lr(warmup) == base_lr and lr(total) == min_lr. warmup may be 0 (no warmup);
// needs warmup < total and 0 <= min_lr <= base_lr (ValueError naming the schedule).
class WarmupDecay : public LRSchedule {
 public:
  double lr(std::size_t step) const override;

 protected:
  WarmupDecay(const char* name, double base_lr, std::size_t warmup, std::size_t total, double min_lr);
  virtual double shape(double progress) const = 0;

 private:
  const char* name_;
  double base_lr_;
  std::size_t warmup_;
  std::size_t total_;
  double min_lr_;
};

// Half a cosine: shape(p) = (1 + cos(pi p)) / 2 (Loshchilov and Hutter's SGDR without restarts).
class WarmupCosine : public WarmupDecay {
 public:
  WarmupCosine(double base_lr, std::size_t warmup, std::size_t total, double min_lr = 0.0)
      : WarmupDecay("WarmupCosine", base_lr, warmup, total, min_lr) {}

 protected:
  double shape(double progress) const override;
};

// A straight line: shape(p) = 1 - p (Hugging Face's "linear" schedule).
class WarmupLinear : public WarmupDecay {
 public:
  WarmupLinear(double base_lr, std::size_t warmup, std::size_t total, double min_lr = 0.0)
      : WarmupDecay("WarmupLinear", base_lr, warmup, total, min_lr) {}

 protected:
  double shape(double progress) const override;
};

// Linear warmup, then constant: lr = base_lr * min(1, step / warmup). warmup may be 0.
class WarmupConstant : public LRSchedule {
 public:
  WarmupConstant(double base_lr, std::size_t warmup);
  double lr(std::size_t step) const override;

 private:
  double base_lr_;
  std::size_t warmup_;
};

}  // namespace headlab
