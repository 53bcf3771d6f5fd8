// headlab/optim/optim.hpp: optimisers (SGD, Adam, AdamW) and gradient clipping; it includes
// the learning-rate schedules (headlab/optim/schedules.hpp).
//
// An optimiser holds handles to the parameters it trains (usually
// module.parameters()). A training step is
//
//   opt.zero_grad();                          // forget last step's gradients
//   loss = model(batch); loss.backward();     // fill p.grad() for every parameter
//   clip_grad_norm(opt.params(), 1.0);        // optional
//   opt.set_lr(schedule.lr(opt.steps() + 1)); // optional; schedules count steps from 1
//   opt.step();                               // p <- p - (update from p.grad())
//
// The updates follow PyTorch 1.13 (torch.optim, single-tensor code path)
// operation for operation, so that float64 runs agree with PyTorch to ~1e-15.
// For a parameter p with gradient g at its t-th update (t = 1, 2, ...):
//
//   SGD(lr, momentum mu, dampening tau, weight_decay wd, nesterov):
//     d = g + wd * p                                (L2 penalty folded into the gradient)
//     buf = d                      if t == 1        (momentum buffer; only when mu != 0)
//     buf = mu * buf + (1 - tau) * d   otherwise
//     d = nesterov ? d + mu * buf : buf
//     p = p - lr * d
//
//   Adam(lr, beta1, beta2, eps, weight_decay wd):
//     g = g + wd * p                                (L2 penalty, as torch.optim.Adam)
//     m = beta1 * m + (1 - beta1) * g               (exp_avg,    starts at 0)
//     v = beta2 * v + (1 - beta2) * g * g           (exp_avg_sq, starts at 0)
//     step_size = lr / (1 - beta1^t)
//     denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//     p = p - step_size * m / denom
//
//   AdamW(lr, beta1, beta2, eps, weight_decay wd): decoupled weight decay,
//     p = p * (1 - lr * wd), then the Adam update above with no L2 term.
//
// As in PyTorch, t is counted per parameter: a parameter without a gradient is
// skipped by step() and its own t does not advance (its bias correction uses
// the number of updates it actually received). steps() counts step() calls.
//
// Updates run under a NoGradGuard and edit p.mutable_value() in place: the
// optimiser never builds graph nodes.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "headlab/core/tensor.hpp"
#include "headlab/optim/schedules.hpp"

namespace headlab {

// An optimiser's resumable state: (name, array) pairs, in a fixed order.
//   "step"            0-d: the number of step() calls so far (steps()).
//   "step.<i>"        0-d: how many updates parameter i has received (t above).
//   "<buffer>.<i>"    parameter i's buffer, with the parameter's shape:
//                     "momentum.<i>" (SGD with momentum != 0),
//                     "exp_avg.<i>", "exp_avg_sq.<i>" (Adam, AdamW).
// Parameter i appears only once it has been updated; its entries are then all
// present. Hyperparameters (lr, betas, ...) are configuration, not state: the
// optimiser that loads a state is constructed with them. Counts are stored as
// T, so for T = float a count above 2^24 cannot be exported (ValueError).
template <typename T>
using OptimizerState = std::vector<std::pair<std::string, Array<T>>>;

template <typename T>
class Optimizer {
 public:
  // Throws ValueError for an empty list, an undefined or non-leaf tensor, a
  // tensor given twice, or a negative / non-finite lr.
  Optimizer(std::vector<Tensor<T>> params, double lr);
  virtual ~Optimizer() = default;

  // Forgets every parameter's gradient (Tensor::zero_grad on each).
  void zero_grad();
  // One update of every parameter that has a gradient; others are skipped.
  // Throws ShapeError if a gradient's shape differs from its parameter's.
  void step();

  double lr() const { return lr_; }
  void set_lr(double lr);  // ValueError if negative or non-finite
  std::size_t steps() const { return steps_; }
  const std::vector<Tensor<T>>& params() const { return params_; }
  virtual std::string name() const = 0;  // "SGD", "Adam", "AdamW"

  // Export and import of the state described at OptimizerState. load_state
  // checks the whole state before changing anything: an unknown, repeated or
  // missing name, or a count that is not a non-negative integer, throws
  // ValueError; an array of the wrong shape throws ShapeError. Both name the entry.
  OptimizerState<T> state() const;
  void load_state(const OptimizerState<T>& state);

 protected:
  // What the optimiser keeps for one parameter.
  struct ParamState {
    std::size_t step = 0;           // updates received so far (t)
    std::vector<Array<T>> buffers;  // one per buffer_names() entry; empty before the first update
  };
  // The per-parameter buffers of this optimiser, e.g. {"exp_avg", "exp_avg_sq"}.
  virtual std::vector<std::string> buffer_names() const = 0;
  // Updates `param` in place from `grad`. s.step has already been advanced
  // (it is t, >= 1) and s.buffers hold buffer_names().size() arrays of the
  // parameter's shape (zeros at t == 1).
  virtual void update(Array<T>& param, const Array<T>& grad, ParamState& s) = 0;

 private:
  std::vector<Tensor<T>> params_;
  std::vector<ParamState> states_;  // parallel to params_
  double lr_;
  std::size_t steps_ = 0;
};

// ---- SGD ---------------------------------------------------------------------------------------
struct SGDOptions {
  double lr = 1e-2;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;  // needs momentum > 0 and dampening == 0 (as PyTorch)
};

template <typename T>
class SGD : public Optimizer<T> {
 public:
  SGD(std::vector<Tensor<T>> params, const SGDOptions& options);
  std::string name() const override { return "SGD"; }
  const SGDOptions& options() const { return options_; }

 protected:
  std::vector<std::string> buffer_names() const override;
  void update(Array<T>& param, const Array<T>& grad, typename Optimizer<T>::ParamState& s) override;

 private:
  SGDOptions options_;  // options_.lr is only the initial lr: lr() is the live one
};

// ---- Adam and AdamW ----------------------------------------------------------------------------
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;  // Adam: L2 added to the gradient; AdamW: decoupled decay
};

template <typename T>
class Adam : public Optimizer<T> {
 public:
  Adam(std::vector<Tensor<T>> params, const AdamOptions& options);
  std::string name() const override { return decoupled_ ? "AdamW" : "Adam"; }
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(std::vector<Tensor<T>> params, const AdamOptions& options, bool decoupled);
  std::vector<std::string> buffer_names() const override;
  void update(Array<T>& param, const Array<T>& grad, typename Optimizer<T>::ParamState& s) override;

 private:
  AdamOptions options_;
  bool decoupled_;  // true for AdamW
};

// AdamW: Adam whose weight decay shrinks the parameter directly,
// p <- p * (1 - lr * wd), instead of adding wd * p to the gradient.
// PyTorch's AdamW defaults weight_decay to 1e-2; here it is whatever options says.
template <typename T>
class AdamW : public Adam<T> {
 public:
  AdamW(std::vector<Tensor<T>> params, const AdamOptions& options);
};

// ---- Gradient clipping -------------------------------------------------------------------------
// torch.nn.utils.clip_grad_norm_ with the 2-norm. The total norm is taken over
// all gradients together, as if concatenated into one vector:
//   norm = sqrt(sum over parameters with a grad, over elements, of g^2)   (accumulated in double)
//   coef = max_norm / (norm + 1e-6)
//   if coef < 1: every gradient g <- g * coef
// Returns norm, measured before clipping (0 when no parameter has a grad).
// As PyTorch, the test is coef < 1, i.e. norm > max_norm - 1e-6 (not norm > max_norm).
// A non-finite norm (an inf or NaN gradient) is returned as it is and the
// gradients are left untouched, so the caller can see it and skip the step;
// PyTorch would instead multiply every gradient by 0 or NaN.
// Throws ValueError if max_norm is negative or non-finite.
template <typename T>
double clip_grad_norm(const std::vector<Tensor<T>>& params, double max_norm);

}  // namespace headlab
