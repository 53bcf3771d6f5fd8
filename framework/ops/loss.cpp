// ops/loss.cpp: cross-entropy on logits, fused with its log-softmax.
//
//   logits (N, C), targets (N) int64 -> scalar
//   lsm = log_softmax(logits[n]),  eps = label_smoothing, K = #targets != ignore_index
//   loss = (1/K) sum_{n kept} [ -(1 - eps) lsm[y_n] - (eps / C) sum_c lsm[c] ]
//   dlogits[n, c] = (dloss / K) (softmax[n, c] - (1 - eps) [c == y_n] - eps / C),  0 for ignored n
// This is torch.nn.functional.cross_entropy(reduction='mean') with
// ignore_index and label_smoothing, except that K == 0 gives 0, not NaN.
//
// The formula is written out below as a readable reference (loops over the rows); the op runs
// the fast kernel of ops/kernels/loss_kernels.cpp (SIMD row max, exp and sum) unless the kernel
// choice says otherwise (headlab/ops/kernel_choice.hpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "headlab/core/shape_utils.hpp"
#include "headlab/core/task_marker.hpp"
#include "headlab/ops/kernel_choice.hpp"
#include "headlab/ops/ops.hpp"
#include "ops/kernels/loss_kernels.hpp"

namespace headlab {
namespace {

// Task 4.1. logits (N, C) and targets (N), already checked (every target is ignore_index or in
// [0, C)); eps = label_smoothing. Returns the loss (the formula at the top of this file, 0 when
// no target is kept) and dloss/dlogits (N, C), the gradient for an upstream gradient of 1.
// Shift each row by its maximum before exp, so that exp cannot overflow.
// The op multiplies dlogits by the upstream gradient in its backward; neither the logits nor the
// loss are read there (the op declares ValueUse::nothing(), so the engine may free them).
template <typename T>
kernels::CrossEntropyResult<T> cross_entropy_reference(const Array<T>& logits, const IndexArray& targets,
                                                       std::int64_t ignore_index, T eps) {
  // BEGIN TASK 4.1: cross entropy with label smoothing
  HEADLAB_TASK("4.1");
  const std::size_t N = logits.shape()[0], C = logits.shape()[1];
  std::size_t kept = 0;  // K
  for (std::size_t n = 0; n < N; ++n) kept += targets(n) != ignore_index ? 1 : 0;
  kernels::CrossEntropyResult<T> out{T(0), xt::zeros<T>(Shape{N, C})};
  if (kept == 0) return out;
  T total = 0;
  for (std::size_t n = 0; n < N; ++n) {
    if (targets(n) == ignore_index) continue;  // no loss, no gradient
    const auto y = static_cast<std::size_t>(targets(n));
    T m = -std::numeric_limits<T>::infinity();
    for (std::size_t c = 0; c < C; ++c) m = std::max(m, logits(n, c));
    T z = 0;
    for (std::size_t c = 0; c < C; ++c) z += std::exp(logits(n, c) - m);
    const T log_z = m + std::log(z);  // lsm[c] = logits[n, c] - log_z
    T sum_lsm = 0;
    for (std::size_t c = 0; c < C; ++c) sum_lsm += logits(n, c) - log_z;
    total += -(T(1) - eps) * (logits(n, y) - log_z) - eps / T(C) * sum_lsm;
    for (std::size_t c = 0; c < C; ++c) {
      const T target_share = (c == y ? T(1) - eps : T(0)) + eps / T(C);  // the smoothed one-hot target
      out.dlogits(n, c) = (std::exp(logits(n, c) - log_z) - target_share) / T(kept);
    }
  }
  out.loss = total / T(kept);
  return out;
  // END TASK 4.1
}

}  // namespace

template <typename T>
Tensor<T> cross_entropy(const Tensor<T>& logits, const IndexArray& targets, std::int64_t ignore_index,
                        T label_smoothing) {
  const Shape ls = logits.shape();
  const Shape ts = detail::shape_of(targets);
  if (ls.size() != 2 || ts.size() != 1 || ts[0] != ls[0]) {
    throw ShapeError("cross_entropy: expects logits (N, C) and targets (N), got logits " + shape_str(ls) +
                     " and targets " + shape_str(ts));
  }
  if (!(label_smoothing >= T(0) && label_smoothing <= T(1))) {
    throw ValueError("cross_entropy: label_smoothing must be in [0, 1], got " + std::to_string(label_smoothing));
  }
  const std::size_t N = ls[0], C = ls[1];
  for (std::size_t n = 0; n < N; ++n) {
    const std::int64_t y = targets.data()[n];
    if (y != ignore_index && (y < 0 || static_cast<std::size_t>(y) >= C)) {
      throw IndexError("cross_entropy: target " + std::to_string(y) + " at position " + std::to_string(n) +
                       " is outside [0, " + std::to_string(C) + ") classes (ignore_index " +
                       std::to_string(ignore_index) + ")");
    }
  }
  kernels::CrossEntropyResult<T> r =
      detail::run_task_region("4.1")
          ? cross_entropy_reference(logits.value(), targets, ignore_index, label_smoothing)
          : kernels::cross_entropy(logits.value(), targets, ignore_index, label_smoothing);
  Array<T> loss = Array<T>::from_shape({});
  loss() = r.loss;
  return make_result<T>("cross_entropy", std::move(loss), {logits}, [dlogits = std::move(r.dlogits)](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(dlogits * out.grad()), "cross_entropy");  // out.grad(): dL/dloss
  }, ValueUse::nothing());  // dlogits is in the closure
}

template Tensor<float> cross_entropy<float>(const Tensor<float>&, const IndexArray&, std::int64_t, float);
template Tensor<double> cross_entropy<double>(const Tensor<double>&, const IndexArray&, std::int64_t, double);

}  // namespace headlab
