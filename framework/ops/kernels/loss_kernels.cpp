// loss_kernels.cpp: the fast cross-entropy (loss_kernels.hpp). Per kept row: the row's max, the
// shifted exponentials and their sum in one SIMD pass (row_exp_shifted), then the loss term and
// the gradient row. The readable version is in ops/loss.cpp.
#include "ops/kernels/loss_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "headlab/core/shape_utils.hpp"
#include "headlab/core/threads.hpp"
#include "ops/kernels/row_kernels.hpp"

namespace headlab::kernels {

template <typename T>
CrossEntropyResult<T> cross_entropy(const Array<T>& logits, const IndexArray& targets, std::int64_t ignore_index,
                                    T label_smoothing) {
  // BEGIN FAST TWIN OF TASK 4.1
  const std::size_t N = logits.shape()[0], C = logits.shape()[1];
  const T eps = label_smoothing;
  const std::int64_t* y_of = targets.data();
  const std::size_t kept = static_cast<std::size_t>(
      std::count_if(y_of, y_of + N, [ignore_index](std::int64_t y) { return y != ignore_index; }));
  CrossEntropyResult<T> out{T(0), detail::empty_array<T>(Shape{N, C})};
  const T inv_kept = kept ? T(1) / T(kept) : T(0);
  const T* x = logits.data();
  // Rows are shared among the threads; each row's loss term lands in row_loss, summed afterwards
  // in row order (the same sum for every thread count).
  std::vector<T> row_loss(N, T(0));
  parallel_for(N, 8 * C, [&](std::size_t n0, std::size_t n1) {
    for (std::size_t n = n0; n < n1; ++n) {
      const std::int64_t y = y_of[n];
      T* g = out.dlogits.data() + n * C;
      if (y == ignore_index) {
        std::fill_n(g, C, T(0));
        continue;
      }
      const T* row = x + n * C;
      const T m = detail::row_max(row, C);
      const T sum_exp = detail::row_exp_shifted(row, m, g, C);  // g = exp(row - m) for now
      const T log_z = std::log(sum_exp);                         // lsm[c] = row[c] - m - log_z
      const T lsm_y = row[y] - m - log_z;
      const T sum_lsm = detail::row_sum(row, C) - T(C) * (m + log_z);
      row_loss[n] = -(T(1) - eps) * lsm_y - (eps / T(C)) * sum_lsm;
      for (std::size_t c = 0; c < C; ++c) g[c] = inv_kept * (g[c] / sum_exp - eps / T(C));  // (softmax - eps / C) / K
      g[y] -= inv_kept * (T(1) - eps);
    }
  });
  T total = 0;
  for (std::size_t n = 0; n < N; ++n) total += row_loss[n];
  out.loss = kept ? total / T(kept) : T(0);
  return out;
  // END FAST TWIN OF TASK 4.1
}

template CrossEntropyResult<float> cross_entropy<float>(const Array<float>&, const IndexArray&, std::int64_t, float);
template CrossEntropyResult<double> cross_entropy<double>(const Array<double>&, const IndexArray&, std::int64_t,
                                                          double);

}  // namespace headlab::kernels
