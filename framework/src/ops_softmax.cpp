// ops_softmax.cpp: softmax and log_softmax over one axis.
//
// The tensor is seen as (outer, n, inner): a "row" is the n elements
// x[o, 0..n-1, i] (contiguous when inner == 1, the usual last-axis case).
//   softmax:      y_j = exp(x_j - m) / sum_k exp(x_k - m),  m = max_k x_k
//   log_softmax:  y_j = x_j - m - log(sum_k exp(x_k - m))
// A row that is all -inf (every key masked) has no finite maximum; it gives
// y = 0 and a zero gradient instead of NaN.
#include <cmath>
#include <limits>

#include <xtensor/xmath.hpp>

#include "headlab/course.hpp"
#include "headlab/ops.hpp"
#include "shape_utils.hpp"

namespace headlab {
namespace {

// shifted = x - rowmax(x), with fully masked rows set to -inf throughout, and
// exp_shifted = exp(shifted) computed in one vectorised pass.
template <typename T>
void shifted_exp(const Array<T>& x, const detail::AxisSplit& s, Array<T>& shifted, Array<T>& exp_shifted) {
  shifted = detail::empty_array<T>(detail::shape_of(x));
  const T* src = x.data();
  T* dst = shifted.data();
  const T neg_inf = -std::numeric_limits<T>::infinity();
  for (std::size_t o = 0; o < s.outer; ++o) {
    for (std::size_t i = 0; i < s.inner; ++i) {
      const std::size_t base = o * s.size * s.inner + i;
      T m = neg_inf;
      for (std::size_t j = 0; j < s.size; ++j) m = std::max(m, src[base + j * s.inner]);
      if (m == neg_inf) {
        for (std::size_t j = 0; j < s.size; ++j) dst[base + j * s.inner] = neg_inf;
      } else {
        for (std::size_t j = 0; j < s.size; ++j) dst[base + j * s.inner] = src[base + j * s.inner] - m;
      }
    }
  }
  exp_shifted = xt::exp(shifted);
}

// Calls fn(row, base) for every row, numbered 0..outer*inner-1, whose
// element j is at base + j * inner.
template <typename Fn>
void for_each_row(const detail::AxisSplit& s, Fn&& fn) {
  for (std::size_t o = 0; o < s.outer; ++o)
    for (std::size_t i = 0; i < s.inner; ++i) fn(o * s.inner + i, o * s.size * s.inner + i);
}

}  // namespace

// y = softmax(x) along axis          x, y: same shape
// dx_j = y_j * (dy_j - sum_k dy_k y_k)
template <typename T>
Tensor<T> softmax(const Tensor<T>& x, std::ptrdiff_t axis) {
  const Shape shape = x.shape();
  const detail::AxisSplit s = detail::split_at_axis(shape, detail::normalize_axis(axis, shape.size(), "softmax", shape));
  Array<T> shifted, y;
  shifted_exp(x.value(), s, shifted, y);
  T* py = y.data();
  for_each_row(s, [&](std::size_t, std::size_t base) {
    T total = 0;
    for (std::size_t j = 0; j < s.size; ++j) total += py[base + j * s.inner];
    const T inv = total > T(0) ? T(1) / total : T(0);  // total == 0 only for a fully masked row
    for (std::size_t j = 0; j < s.size; ++j) py[base + j * s.inner] *= inv;
  });
  return make_result<T>("softmax", std::move(y), {x}, [s](Node<T>& out) {
    // BEGIN TASK 0.6: softmax backward
    HEADLAB_TASK("0.6");
    Array<T> g = detail::empty_array<T>(detail::shape_of(out.value));
    const T* yv = out.value.data();
    const T* dy = out.grad.data();
    T* dx = g.data();
    for_each_row(s, [&](std::size_t, std::size_t base) {
      T dot = 0;
      for (std::size_t j = 0; j < s.size; ++j) dot += dy[base + j * s.inner] * yv[base + j * s.inner];
      for (std::size_t j = 0; j < s.size; ++j) {
        const std::size_t k = base + j * s.inner;
        dx[k] = yv[k] * (dy[k] - dot);
      }
    });
    accumulate_grad(*out.inputs[0], std::move(g), "softmax");
    // END TASK 0.6
  });
}

// y = log_softmax(x) along axis      x, y: same shape
// dx_j = dy_j - softmax_j * sum_k dy_k   (0 on fully masked rows)
template <typename T>
Tensor<T> log_softmax(const Tensor<T>& x, std::ptrdiff_t axis) {
  const Shape shape = x.shape();
  const detail::AxisSplit s =
      detail::split_at_axis(shape, detail::normalize_axis(axis, shape.size(), "log_softmax", shape));
  Array<T> y, e;
  shifted_exp(x.value(), s, y, e);
  T* py = y.data();
  const T* pe = e.data();
  std::vector<unsigned char> masked_row(s.outer * s.inner, 0);
  for_each_row(s, [&](std::size_t row, std::size_t base) {
    T total = 0;
    for (std::size_t j = 0; j < s.size; ++j) total += pe[base + j * s.inner];
    masked_row[row] = total > T(0) ? 0 : 1;
    if (total > T(0)) {
      const T log_total = std::log(total);
      for (std::size_t j = 0; j < s.size; ++j) py[base + j * s.inner] -= log_total;
    } else {
      for (std::size_t j = 0; j < s.size; ++j) py[base + j * s.inner] = T(0);
    }
  });
  return make_result<T>("log_softmax", std::move(y), {x}, [s, masked_row = std::move(masked_row)](Node<T>& out) {
    // BEGIN TASK 0.7: log_softmax backward
    HEADLAB_TASK("0.7");
    Array<T> g = detail::empty_array<T>(detail::shape_of(out.value));
    const T* yv = out.value.data();
    const T* dy = out.grad.data();
    T* dx = g.data();
    for_each_row(s, [&](std::size_t row, std::size_t base) {
      const bool masked = masked_row[row];
      T total = 0;
      for (std::size_t j = 0; j < s.size; ++j) total += dy[base + j * s.inner];
      for (std::size_t j = 0; j < s.size; ++j) {
        const std::size_t k = base + j * s.inner;
        dx[k] = masked ? T(0) : dy[k] - std::exp(yv[k]) * total;
      }
    });
    accumulate_grad(*out.inputs[0], std::move(g), "log_softmax");
    // END TASK 0.7
  });
}

#define INSTANTIATE(T)                                                  \
  template Tensor<T> softmax<T>(const Tensor<T>&, std::ptrdiff_t);      \
  template Tensor<T> log_softmax<T>(const Tensor<T>&, std::ptrdiff_t);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
