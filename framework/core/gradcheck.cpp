// gradcheck.cpp: central differences against backward(), in float64.
#include "headlab/core/gradcheck.hpp"

#include <cmath>
#include <sstream>

#include "headlab/core/task_marker.hpp"
#include "headlab/core/random.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {
namespace {

// The two helpers below are given to the TASK 0.2 region, the only caller; [[maybe_unused]] keeps
// the student copy, where that region is blank, free of warnings.

// L(inputs) = sum(w * f(inputs)), evaluated without recording a graph.
[[maybe_unused]] double weighted_loss(const GradcheckFn& f, const std::vector<TensorD>& inputs, const Array<double>& w) {
  NoGradGuard no_grad;
  const TensorD y = f(inputs);
  const double* yv = y.value().data();
  double total = 0;
  for (std::size_t i = 0; i < w.size(); ++i) total += w.data()[i] * yv[i];
  return total;
}

[[maybe_unused]] std::string index_str(std::size_t flat, const Shape& shape) {
  // Flat index -> multi-index, e.g. 5 in [2, 3] -> (1, 2).
  std::vector<std::size_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::ostringstream os;
  os << '(';
  for (std::size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << ')';
  return os.str();
}

}  // namespace

GradcheckResult gradcheck(const std::string& name, const GradcheckFn& f, const std::vector<TensorD>& inputs,
                          const GradcheckOptions& opt) {
  GradcheckResult result;
  // Fresh leaves so that earlier gradients do not leak in.
  std::vector<TensorD> leaves;
  for (const auto& x : inputs) leaves.push_back(TensorD(x.value(), x.requires_grad()));

  const TensorD y = f(leaves);
  Generator gen(opt.seed);
  Array<double> w = detail::empty_array<double>(y.shape());
  for (std::size_t i = 0; i < w.size(); ++i) w.data()[i] = gen.uniform(-1.0, 1.0);
  bool any_grad = false;
  for (const auto& x : leaves) any_grad = any_grad || x.requires_grad();
  if (!any_grad || !y.requires_grad()) {
    result.ok = false;
    result.message = name + ": no input requires grad, or the output is not connected to them";
    return result;
  }
  y.backward(w);

  std::ostringstream fail;
  for (std::size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].requires_grad()) continue;
    const Shape shape = leaves[i].shape();
    Array<double> analytic = xt::zeros<double>(shape);
    if (leaves[i].has_grad()) {
      if (leaves[i].shape() != detail::shape_of(leaves[i].grad())) {
        fail << name << ": gradient of input " << i << " has shape " << shape_str(detail::shape_of(leaves[i].grad()))
             << ", input has " << shape_str(shape) << "\n";
        result.ok = false;
        continue;
      }
      analytic = leaves[i].grad();
    }
    // For every element j of input i: numeric = (L(x + eps e_j) - L(x - eps e_j)) / (2 eps) with
    // L = weighted_loss (no graph), against analytic[j]; track result.max_abs_error, and on the
    // first mismatch write op, input, element (index_str), expected and received into `fail`.
    // BEGIN TASK 0.2: central-difference gradcheck
    HEADLAB_TASK("0.2");
    for (std::size_t j = 0; j < analytic.size(); ++j) {
      std::vector<TensorD> probe = leaves;
      Array<double> plus = leaves[i].value(), minus = leaves[i].value();
      plus.data()[j] += opt.eps;
      minus.data()[j] -= opt.eps;
      probe[i] = TensorD(plus);
      const double lp = weighted_loss(f, probe, w);
      probe[i] = TensorD(minus);
      const double lm = weighted_loss(f, probe, w);
      const double numeric = (lp - lm) / (2 * opt.eps);
      const double got = analytic.data()[j];
      const double err = std::abs(got - numeric);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (!(err <= opt.atol + opt.rtol * std::abs(numeric))) {
        if (result.ok) {
          fail.precision(10);
          fail << name << ": gradient mismatch for input " << i << " " << shape_str(shape) << " at element "
               << index_str(j, shape) << ": expected (numeric) " << numeric << ", received (backward) " << got
               << ", |diff| " << err << "\n";
        }
        result.ok = false;
      }
    }
    // END TASK 0.2
  }
  result.message = fail.str();
  return result;
}

}  // namespace headlab
