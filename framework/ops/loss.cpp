// ops/loss.cpp: cross-entropy on logits, fused with its log-softmax.
//
//   logits (N, C), targets (N) int64 -> scalar
//   lsm = log_softmax(logits[n]),  eps = label_smoothing, K = #targets != ignore_index
//   loss = (1/K) sum_{n kept} [ -(1 - eps) lsm[y_n] - (eps / C) sum_c lsm[c] ]
//   dlogits[n, c] = (dloss / K) (softmax[n, c] - (1 - eps) [c == y_n] - eps / C),  0 for ignored n
// This is torch.nn.functional.cross_entropy(reduction='mean') with
// ignore_index and label_smoothing, except that K == 0 gives 0, not NaN.
#include <algorithm>
#include <cmath>
#include <limits>

#include "headlab/core/task_marker.hpp"
#include "headlab/ops/ops.hpp"
#include "ops/kernels/row_kernels.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

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
  // Forward: the loss as a 0-d array, keeping the softmax for backward; the backward closure
  // writes dlogits with the formula above. Shift each row by its maximum before exp.
  // BEGIN TASK 4.1: cross entropy with label smoothing
  HEADLAB_TASK("4.1");
  const T eps = label_smoothing;
  Array<T> probs = detail::empty_array<T>(ls);  // softmax, kept for backward
  const T* x = logits.value().data();
  T total = 0;
  std::size_t kept = 0;
  for (std::size_t n = 0; n < N; ++n) {
    const std::int64_t y = targets.data()[n];
    if (y == ignore_index) continue;
    const T* row = x + n * C;
    T* p = probs.data() + n * C;
    const T m = detail::row_max(row, C);
    const T sum_exp = detail::row_exp_shifted(row, m, p, C);  // p = exp(row - m)
    const T log_z = std::log(sum_exp);                         // lsm[c] = row[c] - m - log_z
    for (std::size_t c = 0; c < C; ++c) p[c] /= sum_exp;
    const T lsm_y = row[y] - m - log_z;
    const T sum_lsm = detail::row_sum(row, C) - T(C) * (m + log_z);
    total += -(T(1) - eps) * lsm_y - (eps / T(C)) * sum_lsm;
    ++kept;
  }
  Array<T> loss = Array<T>::from_shape({});
  loss() = kept ? total / T(kept) : T(0);
  return make_result<T>("cross_entropy", std::move(loss), {logits},
                        [targets, ignore_index, eps, N, C, kept, probs = std::move(probs)](Node<T>& out) {
                          Array<T> g = detail::empty_array<T>(Shape{N, C});
                          const T scale = kept ? out.grad() / T(kept) : T(0);
                          for (std::size_t n = 0; n < N; ++n) {
                            const std::int64_t y = targets.data()[n];
                            T* gr = g.data() + n * C;
                            if (y == ignore_index) {
                              std::fill_n(gr, C, T(0));
                              continue;
                            }
                            const T* p = probs.data() + n * C;
                            for (std::size_t c = 0; c < C; ++c) gr[c] = scale * (p[c] - eps / T(C));
                            gr[y] -= scale * (T(1) - eps);
                          }
                          accumulate_grad(*out.inputs[0], std::move(g), "cross_entropy");
                        }, ValueUse::nothing());  // the softmax it needs is in the closure
  // END TASK 4.1
}

template Tensor<float> cross_entropy<float>(const Tensor<float>&, const IndexArray&, std::int64_t, float);
template Tensor<double> cross_entropy<double>(const Tensor<double>&, const IndexArray&, std::int64_t, double);

}  // namespace headlab
