// optim.cpp: SGD, Adam, AdamW and clip_grad_norm (the schedules: schedules.cpp).
// The formulas are in headlab/optim/optim.hpp. The update loops follow PyTorch 1.13's
// single-tensor code path operation for operation (same order, same rounding
// points), which is what lets float64 results agree with PyTorch to ~1e-15.
#include "headlab/optim/optim.hpp"

#include <cmath>
#include <set>

#include "headlab/core/task_marker.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/core/threads.hpp"
#include "optim_checks.hpp"

namespace headlab {

namespace {

using detail::shape_of;
using detail::check_finite_nonnegative;
using detail::fmt;

// A count (a number of steps) as a 0-d array. Refuses counts T cannot hold
// exactly (above 2^24 for float), which would silently change on a round trip.
template <typename T>
Array<T> count_array(std::size_t n, const std::string& who, const std::string& entry) {
  if (static_cast<std::size_t>(static_cast<T>(n)) != n) {
    throw ValueError(who + ".state: the count " + std::to_string(n) + " of '" + entry +
                     "' cannot be stored exactly in this scalar type");
  }
  Array<T> a = Array<T>::from_shape({});
  *a.data() = static_cast<T>(n);
  return a;
}

// Reads a count back: a 0-d array holding a non-negative integer.
template <typename T>
std::size_t count_from(const Array<T>& a, const std::string& who, const std::string& entry) {
  if (a.dimension() != 0) {
    throw ShapeError(who + ".load_state: entry '" + entry + "' must be a 0-d array (a count), got shape " +
                     shape_str(shape_of(a)));
  }
  const double v = static_cast<double>(*a.data());
  if (!std::isfinite(v) || v < 0 || std::floor(v) != v || v > 9007199254740992.0 /* 2^53 */) {
    throw ValueError(who + ".load_state: entry '" + entry + "' must hold a non-negative integer count, got " +
                     fmt(v));
  }
  return static_cast<std::size_t>(v);
}

}  // namespace

// ---- Optimizer ---------------------------------------------------------------------------------

template <typename T>
Optimizer<T>::Optimizer(std::vector<Tensor<T>> params, double lr) : params_(std::move(params)), lr_(0) {
  if (params_.empty()) throw ValueError("optimizer: got an empty parameter list");
  std::set<const Node<T>*> seen;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor<T>& p = params_[i];
    const std::string which = "optimizer: parameter " + std::to_string(i);
    if (!p.defined()) throw ValueError(which + " is an undefined tensor");
    if (!p.node()->is_leaf()) {
      throw ValueError(which + " (op " + p.op() + ") is not a leaf: only leaves can be optimised");
    }
    if (!seen.insert(p.node().get()).second) throw ValueError(which + " appears more than once in the list");
  }
  states_.resize(params_.size());
  set_lr(lr);
}

template <typename T>
void Optimizer<T>::set_lr(double lr) {
  check_finite_nonnegative("optimizer", "lr", lr);
  lr_ = lr;
}

template <typename T>
void Optimizer<T>::zero_grad() {
  for (const auto& p : params_) p.zero_grad();
}

template <typename T>
void Optimizer<T>::step() {
  NoGradGuard no_grad;  // the update is arithmetic on raw buffers, never part of a graph
  // Check every shape first, so that a bad parameter leaves all of them untouched.
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor<T>& p = params_[i];
    if (!p.has_grad()) continue;
    const Shape ps = p.shape();
    const Shape gs = shape_of(p.grad());
    if (gs != ps) {
      throw ShapeError(name() + ".step: parameter " + std::to_string(i) + " has shape " + shape_str(ps) +
                       " but its gradient has shape " + shape_str(gs));
    }
    for (const Array<T>& b : states_[i].buffers) {
      if (shape_of(b) != ps) {
        throw ShapeError(name() + ".step: parameter " + std::to_string(i) + " has shape " + shape_str(ps) +
                         " but its optimiser buffers have shape " + shape_str(shape_of(b)) +
                         " (was the parameter replaced?)");
      }
    }
  }
  const std::size_t n_buffers = buffer_names().size();
  std::vector<std::size_t> updated;  // the parameters with a gradient
  std::size_t elements = 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor<T>& p = params_[i];
    if (!p.has_grad()) continue;  // as PyTorch: no gradient, no update, no state change
    ParamState& s = states_[i];
    if (s.buffers.empty()) s.buffers.assign(n_buffers, Array<T>(xt::zeros<T>(p.shape())));
    ++s.step;
    updated.push_back(i);
    elements += p.value().size();
  }
  // Each parameter's update is independent of the others': they are shared among the threads
  // (headlab/core/threads.hpp), whole parameters per thread, so the bits do not depend on the count.
  const std::size_t per_parameter = updated.empty() ? 0 : 8 * elements / updated.size();
  parallel_for(updated.size(), per_parameter, [&](std::size_t u0, std::size_t u1) {
    for (std::size_t u = u0; u < u1; ++u) {
      Tensor<T>& p = params_[updated[u]];
      update(p.mutable_value(), p.grad(), states_[updated[u]]);
    }
  });
  ++steps_;
}

template <typename T>
OptimizerState<T> Optimizer<T>::state() const {
  const std::vector<std::string> names = buffer_names();
  OptimizerState<T> out;
  out.emplace_back("step", count_array<T>(steps_, name(), "step"));
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamState& s = states_[i];
    if (s.step == 0) continue;  // never updated: nothing to save
    const std::string idx = std::to_string(i);
    out.emplace_back("step." + idx, count_array<T>(s.step, name(), "step." + idx));
    for (std::size_t b = 0; b < names.size(); ++b) out.emplace_back(names[b] + "." + idx, s.buffers[b]);
  }
  return out;
}

template <typename T>
void Optimizer<T>::load_state(const OptimizerState<T>& state) {
  const std::string who = name();
  const std::vector<std::string> names = buffer_names();
  std::string expected = "'step', and per parameter i in [0, " + std::to_string(params_.size()) + "): 'step.i'";
  for (const auto& b : names) expected += ", '" + b + ".i'";

  // Build the new state aside; nothing changes until every entry has passed.
  bool have_steps = false;
  std::size_t new_steps = 0;
  std::vector<ParamState> fresh(params_.size());
  std::vector<std::vector<bool>> present(params_.size(), std::vector<bool>(names.size() + 1, false));  // [0] = step.i
  std::set<std::string> seen;

  for (const auto& [entry, array] : state) {
    if (!seen.insert(entry).second) throw ValueError(who + ".load_state: entry '" + entry + "' appears twice");
    if (entry == "step") {
      new_steps = count_from(array, who, entry);
      have_steps = true;
      continue;
    }
    // "<base>.<i>": split at the last dot; i must be a parameter index.
    const std::size_t dot = entry.rfind('.');
    const std::string base = dot == std::string::npos ? entry : entry.substr(0, dot);
    const std::string idx = dot == std::string::npos ? "" : entry.substr(dot + 1);
    const bool idx_ok = !idx.empty() && idx.size() < 10 && idx.find_first_not_of("0123456789") == std::string::npos &&
                        std::stoul(idx) < params_.size();
    std::size_t slot = 0;  // 0 = step.i, 1 + b = buffer b
    bool base_ok = base == "step";
    for (std::size_t b = 0; b < names.size() && !base_ok; ++b) {
      if (base == names[b]) {
        base_ok = true;
        slot = b + 1;
      }
    }
    if (!base_ok || !idx_ok) {
      throw ValueError(who + ".load_state: unknown entry '" + entry + "'; a " + who + " state over " +
                       std::to_string(params_.size()) + " parameters has " + expected);
    }
    const std::size_t i = std::stoul(idx);
    if (slot == 0) {
      fresh[i].step = count_from(array, who, entry);
      if (fresh[i].step == 0) throw ValueError(who + ".load_state: entry '" + entry + "' must be >= 1");
    } else {
      const Shape want = params_[i].shape();
      if (shape_of(array) != want) {
        throw ShapeError(who + ".load_state: entry '" + entry + "' has shape " + shape_str(shape_of(array)) +
                         " but parameter " + idx + " has shape " + shape_str(want));
      }
      if (fresh[i].buffers.empty()) fresh[i].buffers.resize(names.size());
      fresh[i].buffers[slot - 1] = array;
    }
    present[i][slot] = true;
  }

  if (!have_steps) throw ValueError(who + ".load_state: the entry 'step' is missing; expected " + expected);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    bool any = false;
    for (bool b : present[i]) any = any || b;
    if (!any) continue;  // parameter never updated
    for (std::size_t slot = 0; slot < present[i].size(); ++slot) {
      if (present[i][slot]) continue;
      const std::string missing = (slot == 0 ? std::string("step") : names[slot - 1]) + "." + std::to_string(i);
      throw ValueError(who + ".load_state: parameter " + std::to_string(i) + " has some entries but '" + missing +
                       "' is missing");
    }
  }
  steps_ = new_steps;
  states_ = std::move(fresh);
}

// ---- SGD ---------------------------------------------------------------------------------------

template <typename T>
SGD<T>::SGD(std::vector<Tensor<T>> params, const SGDOptions& options)
    : Optimizer<T>(std::move(params), options.lr), options_(options) {
  check_finite_nonnegative("SGD", "momentum", options.momentum);
  check_finite_nonnegative("SGD", "dampening", options.dampening);
  check_finite_nonnegative("SGD", "weight_decay", options.weight_decay);
  if (options.nesterov && (options.momentum <= 0 || options.dampening != 0)) {
    throw ValueError("SGD: nesterov needs momentum > 0 and dampening == 0, got momentum " + fmt(options.momentum) +
                     ", dampening " + fmt(options.dampening));
  }
}

template <typename T>
std::vector<std::string> SGD<T>::buffer_names() const {
  if (options_.momentum == 0) return {};
  return {"momentum"};
}

template <typename T>
void SGD<T>::update(Array<T>& param, const Array<T>& grad, typename Optimizer<T>::ParamState& s) {
  const T wd = static_cast<T>(options_.weight_decay);
  const T mu = static_cast<T>(options_.momentum);
  const T keep = static_cast<T>(1 - options_.dampening);
  const T neg_lr = static_cast<T>(-this->lr());
  T* p = param.data();
  const T* g = grad.data();
  T* buf = options_.momentum != 0 ? s.buffers[0].data() : nullptr;
  const std::size_t n = param.size();
  for (std::size_t i = 0; i < n; ++i) {
    T d = g[i];
    if (options_.weight_decay != 0) d = d + wd * p[i];  // d = g + wd * p
    if (buf) {
      buf[i] = s.step == 1 ? d : buf[i] * mu + keep * d;  // buf = mu * buf + (1 - tau) * d
      d = options_.nesterov ? d + mu * buf[i] : buf[i];
    }
    p[i] = p[i] + neg_lr * d;  // p = p - lr * d
  }
}

// ---- Adam / AdamW ------------------------------------------------------------------------------

template <typename T>
Adam<T>::Adam(std::vector<Tensor<T>> params, const AdamOptions& options) : Adam(std::move(params), options, false) {}

template <typename T>
Adam<T>::Adam(std::vector<Tensor<T>> params, const AdamOptions& options, bool decoupled)
    : Optimizer<T>(std::move(params), options.lr), options_(options), decoupled_(decoupled) {
  const std::string who = decoupled ? "AdamW" : "Adam";
  for (const auto& [what, beta] : {std::pair<const char*, double>{"beta1", options.beta1}, {"beta2", options.beta2}}) {
    if (!(beta >= 0 && beta < 1)) throw ValueError(who + ": " + what + " must be in [0, 1), got " + fmt(beta));
  }
  check_finite_nonnegative(who, "eps", options.eps);
  check_finite_nonnegative(who, "weight_decay", options.weight_decay);
}

template <typename T>
std::vector<std::string> Adam<T>::buffer_names() const {
  return {"exp_avg", "exp_avg_sq"};
}

template <typename T>
void Adam<T>::update(Array<T>& param, const Array<T>& grad, typename Optimizer<T>::ParamState& s) {
  // One step t = s.step (from 1) on every element: the moments s.buffers[0] (m) and s.buffers[1]
  // (v), bias corrections, weight decay (L2 for Adam, decoupled for AdamW); see headlab/optim/optim.hpp.
  // BEGIN TASK 4.2: Adam
  HEADLAB_TASK("4.2");
  const double lr = this->lr();
  const double t = static_cast<double>(s.step);
  // Scalars are computed in double (as Python floats in PyTorch) and rounded to T once.
  const double bias_correction1 = 1 - std::pow(options_.beta1, t);
  const double bias_correction2 = 1 - std::pow(options_.beta2, t);
  const T neg_step_size = static_cast<T>(-(lr / bias_correction1));
  const T bias_correction2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T beta1 = static_cast<T>(options_.beta1);
  const T beta2 = static_cast<T>(options_.beta2);
  const T one_minus_beta1 = static_cast<T>(1 - options_.beta1);
  const T one_minus_beta2 = static_cast<T>(1 - options_.beta2);
  const T eps = static_cast<T>(options_.eps);
  const T wd = static_cast<T>(options_.weight_decay);
  const T decay = static_cast<T>(1 - lr * options_.weight_decay);  // AdamW's shrink factor

  T* p = param.data();
  const T* g = grad.data();
  T* m = s.buffers[0].data();  // exp_avg
  T* v = s.buffers[1].data();  // exp_avg_sq
  const std::size_t n = param.size();
  // Fixed for the whole update: as locals, the compiler moves these tests out of the loop.
  const bool decoupled = decoupled_, l2 = !decoupled_ && options_.weight_decay != 0;
  for (std::size_t i = 0; i < n; ++i) {
    T gi = g[i];
    if (decoupled) p[i] = p[i] * decay;  // AdamW: p = p * (1 - lr * wd)
    if (l2) gi = gi + wd * p[i];          // Adam: g = g + wd * p
    m[i] = m[i] * beta1 + one_minus_beta1 * gi;       // m = beta1 m + (1 - beta1) g
    v[i] = v[i] * beta2 + one_minus_beta2 * gi * gi;  // v = beta2 v + (1 - beta2) g^2
    const T denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
    p[i] = p[i] + neg_step_size * m[i] / denom;  // p = p - step_size * m / denom
  }
  // END TASK 4.2
}

template <typename T>
AdamW<T>::AdamW(std::vector<Tensor<T>> params, const AdamOptions& options)
    : Adam<T>(std::move(params), options, /*decoupled=*/true) {}

// ---- clip_grad_norm ----------------------------------------------------------------------------

template <typename T>
double clip_grad_norm(const std::vector<Tensor<T>>& params, double max_norm) {
  check_finite_nonnegative("clip_grad_norm", "max_norm", max_norm);
  double sum_sq = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!params[i].defined()) throw ValueError("clip_grad_norm: parameter " + std::to_string(i) + " is undefined");
    if (!params[i].has_grad()) continue;
    const Array<T>& g = params[i].grad();
    for (std::size_t k = 0; k < g.size(); ++k) {
      const double x = static_cast<double>(g.data()[k]);
      sum_sq += x * x;
    }
  }
  const double norm = std::sqrt(sum_sq);
  if (!std::isfinite(norm)) return norm;  // reported, not applied: see the header
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1) {
    const T c = static_cast<T>(coef);
    for (const auto& p : params) {
      if (!p.has_grad()) continue;
      Array<T>& g = p.node()->grad;  // the gradient, edited in place
      for (std::size_t k = 0; k < g.size(); ++k) g.data()[k] *= c;
    }
  }
  return norm;
}

// ---- Instantiations ----------------------------------------------------------------------------

template class Optimizer<float>;
template class Optimizer<double>;
template class SGD<float>;
template class SGD<double>;
template class Adam<float>;
template class Adam<double>;
template class AdamW<float>;
template class AdamW<double>;
template double clip_grad_norm<float>(const std::vector<Tensor<float>>&, double);
template double clip_grad_norm<double>(const std::vector<Tensor<double>>&, double);

}  // namespace headlab
