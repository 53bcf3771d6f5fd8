// softmax_kernels.cpp: the fast softmax and log_softmax (softmax_kernels.hpp); the readable
// versions, with the formulas, are in ops/softmax.cpp.
#include "ops/kernels/softmax_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "headlab/core/shape_utils.hpp"
#include "headlab/core/threads.hpp"
#include "ops/kernels/row_kernels.hpp"

namespace headlab::kernels {
namespace {

// The rows of an (outer, n, inner) array as contiguous buffers of n elements, so the
// vectorised row kernels apply: a row is the array's own memory when inner == 1,
// otherwise a copy gathered into (or scattered from) a scratch buffer.
template <typename T>
class Rows {
 public:
  Rows(const Shape& shape, std::size_t axis) : s_(detail::split_at_axis(shape, axis)) {}
  std::size_t count() const { return s_.outer * s_.inner; }
  std::size_t size() const { return s_.size; }

  // fn(r, out_row, a_row, b_row) for every row r, with rows of a and b (b may be null: then
  // b_row is null); out_row is written by fn and lands in out. Rows are shared among the threads
  // (headlab/core/threads.hpp); each row is computed whole by one of them.
  template <typename Fn>
  void map(T* out, const T* a, const T* b, Fn&& fn) const {
    parallel_for(count(), 8 * size(), [&](std::size_t r0, std::size_t r1) {
      std::vector<T> a_buf, b_buf, out_buf;
      for (std::size_t r = r0; r < r1; ++r) {
        T* out_row = target(out, r, out_buf);
        fn(r, out_row, load(a, r, a_buf), b ? load(b, r, b_buf) : nullptr);
        store(out, r, out_buf);
      }
    });
  }

 private:
  // Row r of data, to read.
  const T* load(const T* data, std::size_t r, std::vector<T>& scratch) const {
    if (s_.inner == 1) return data + r * s_.size;
    scratch.resize(s_.size);
    for (std::size_t j = 0; j < s_.size; ++j) scratch[j] = data[base(r) + j * s_.inner];
    return scratch.data();
  }
  // Where to write row r of data; store() puts it in place.
  T* target(T* data, std::size_t r, std::vector<T>& scratch) const {
    if (s_.inner == 1) return data + r * s_.size;
    scratch.resize(s_.size);
    return scratch.data();
  }
  void store(T* data, std::size_t r, const std::vector<T>& scratch) const {
    if (s_.inner == 1) return;
    for (std::size_t j = 0; j < s_.size; ++j) data[base(r) + j * s_.inner] = scratch[j];
  }
  std::size_t base(std::size_t r) const { return (r / s_.inner) * s_.size * s_.inner + r % s_.inner; }
  detail::AxisSplit s_;
};

template <typename T>
constexpr T neg_inf = -std::numeric_limits<T>::infinity();

// y = softmax(x) over one contiguous row of n (y may be x); an all -inf row gives y = 0.
template <typename T>
void softmax_row(const T* x, T* y, std::size_t n) {
  const T m = detail::row_max(x, n);
  if (m == neg_inf<T>) {
    std::fill_n(y, n, T(0));  // fully masked row
    return;
  }
  const T inv_total = T(1) / detail::row_exp_shifted(x, m, y, n);
  for (std::size_t j = 0; j < n; ++j) y[j] *= inv_total;
  detail::flush_subnormals(y, n);
}

}  // namespace

template <typename T>
Array<T> softmax_forward(const Array<T>& x, std::size_t axis) {
  const Shape shape = detail::shape_of(x);
  const Rows<T> rows(shape, axis);
  const std::size_t n = rows.size();
  Array<T> y = detail::empty_array<T>(shape);
  rows.map(y.data(), x.data(), nullptr, [n](std::size_t, T* yr, const T* xr, const T*) { softmax_row(xr, yr, n); });
  return y;
}

void HiddenKeys::row(std::size_t r, unsigned char* out) const {
  const std::size_t i = r % L, b = r / (h * L), head = (r / L) % h;
  if (positions) {
    const bool* p = positions + i * S;
    for (std::size_t j = 0; j < S; ++j) out[j] |= p[j] ? 1 : 0;
  }
  if (padding) {
    const bool* p = padding + b * S;
    for (std::size_t j = 0; j < S; ++j) out[j] |= p[j] ? 1 : 0;
  }
  if (mask) {
    const bool* p = mask + b * mask_strides[0] + head * mask_strides[1] + i * mask_strides[2];
    for (std::size_t j = 0; j < S; ++j) out[j] |= p[j * mask_strides[3]] ? 1 : 0;
  }
}

template <typename T>
Array<T> masked_softmax_forward(const Array<T>& x, const HiddenKeys& hidden) {
  // Row by row: copy the scores, set the hidden ones to -inf, softmax in place.
  const std::size_t S = hidden.S, rows = S ? x.size() / S : 0;
  Array<T> y = detail::empty_array<T>(detail::shape_of(x));
  parallel_for(rows, 8 * S, [&](std::size_t r0, std::size_t r1) {
    std::vector<unsigned char> hide(S);
    for (std::size_t r = r0; r < r1; ++r) {
      const T* xr = x.data() + r * S;
      T* yr = y.data() + r * S;
      std::fill(hide.begin(), hide.end(), 0);
      hidden.row(r, hide.data());
      for (std::size_t j = 0; j < S; ++j) yr[j] = hide[j] ? neg_inf<T> : xr[j];
      softmax_row(yr, yr, S);
    }
  });
  return y;
}

template <typename T>
Array<T> softmax_backward(const Array<T>& y, const Array<T>& dy, std::size_t axis) {
  // BEGIN FAST TWIN OF TASK 0.6
  const Shape shape = detail::shape_of(y);
  const Rows<T> rows(shape, axis);
  const std::size_t n = rows.size();
  Array<T> g = detail::empty_array<T>(shape);
  rows.map(g.data(), y.data(), dy.data(), [n](std::size_t, T* dxr, const T* yr, const T* dyr) {
    const T dot = detail::row_dot(dyr, yr, n);  // sum_k dy_k y_k
    for (std::size_t j = 0; j < n; ++j) dxr[j] = yr[j] * (dyr[j] - dot);
    detail::flush_subnormals(dxr, n);
  });
  return g;
  // END FAST TWIN OF TASK 0.6
}

template <typename T>
LogSoftmaxForward<T> log_softmax_forward(const Array<T>& x, std::size_t axis) {
  const Shape shape = detail::shape_of(x);
  const Rows<T> rows(shape, axis);
  const std::size_t n = rows.size();
  Shape row_shape = shape;
  row_shape[axis] = 1;  // one flag per row, in row order (r = o * inner + i)
  LogSoftmaxForward<T> out{detail::empty_array<T>(shape), MaskArray(xt::zeros<bool>(row_shape))};
  bool* masked = out.row_masked.data();
  rows.map(out.y.data(), x.data(), nullptr, [n, masked](std::size_t r, T* yr, const T* xr, const T*) {
    const T m = detail::row_max(xr, n);
    if (m == neg_inf<T>) {
      masked[r] = true;
      std::fill_n(yr, n, T(0));
      return;
    }
    const T log_total = std::log(detail::row_exp_shifted(xr, m, yr, n));  // yr holds exp(x - m) for now
    for (std::size_t j = 0; j < n; ++j) yr[j] = xr[j] - m - log_total;
  });
  return out;
}

template <typename T>
Array<T> log_softmax_backward(const Array<T>& y, const Array<T>& dy, const MaskArray& row_masked, std::size_t axis) {
  // BEGIN FAST TWIN OF TASK 0.7
  const Shape shape = detail::shape_of(y);
  const Rows<T> rows(shape, axis);
  const std::size_t n = rows.size();
  const bool* masked = row_masked.data();
  Array<T> g = detail::empty_array<T>(shape);
  rows.map(g.data(), y.data(), dy.data(), [n, masked](std::size_t r, T* dxr, const T* yr, const T* dyr) {
    if (masked[r]) {
      std::fill_n(dxr, n, T(0));
      return;
    }
    const T total = detail::row_sum(dyr, n);  // sum_k dy_k
    detail::row_exp_shifted(yr, T(0), dxr, n);  // dx = softmax = exp(y) for now
    for (std::size_t j = 0; j < n; ++j) dxr[j] = dyr[j] - dxr[j] * total;
  });
  return g;
  // END FAST TWIN OF TASK 0.7
}

#define INSTANTIATE(T)                                                                                          \
  template Array<T> softmax_forward<T>(const Array<T>&, std::size_t);                                           \
  template Array<T> softmax_backward<T>(const Array<T>&, const Array<T>&, std::size_t);                         \
  template Array<T> masked_softmax_forward<T>(const Array<T>&, const HiddenKeys&);                              \
  template LogSoftmaxForward<T> log_softmax_forward<T>(const Array<T>&, std::size_t);                           \
  template Array<T> log_softmax_backward<T>(const Array<T>&, const Array<T>&, const MaskArray&, std::size_t);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab::kernels
