// ops/softmax.cpp: softmax and log_softmax over one axis.
//
// The tensor is seen as (outer, n, inner): a "row" is the n elements
// x[o, 0..n-1, i] (contiguous when inner == 1, the usual last-axis case).
//   softmax:      y_j = exp(x_j - m) / sum_k exp(x_k - m),  m = max_k x_k
//   log_softmax:  y_j = x_j - m - log(sum_k exp(x_k - m))
// A row that is all -inf (every key masked) has no finite maximum; it gives
// y = 0 and a zero gradient instead of NaN.
#include <cmath>
#include <limits>
#include <vector>

#include "headlab/core/task_marker.hpp"
#include "headlab/ops/ops.hpp"
#include "ops/kernels/row_kernels.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {
namespace {

// The rows of an (outer, n, inner) array as contiguous buffers of n elements, so the
// vectorised row kernels apply: a row is the array's own memory when inner == 1,
// otherwise a copy gathered into (or scattered from) a scratch buffer.
template <typename T>
class Rows {
 public:
  explicit Rows(const detail::AxisSplit& s) : s_(s) {}
  std::size_t count() const { return s_.outer * s_.inner; }
  std::size_t size() const { return s_.size; }

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
  // fn(r, out_row, a_row, b_row) for every row r, with rows of a and b (b may be null: then
  // b_row is null); out_row is written by fn and lands in out.
  template <typename Fn>
  void map(T* out, const T* a, const T* b, Fn&& fn) const {
    std::vector<T> a_buf, b_buf, out_buf;
    for (std::size_t r = 0; r < count(); ++r) {
      T* out_row = target(out, r, out_buf);
      fn(r, out_row, load(a, r, a_buf), b ? load(b, r, b_buf) : nullptr);
      store(out, r, out_buf);
    }
  }

 private:
  std::size_t base(std::size_t r) const { return (r / s_.inner) * s_.size * s_.inner + r % s_.inner; }
  detail::AxisSplit s_;
};

template <typename T>
constexpr T neg_inf = -std::numeric_limits<T>::infinity();

}  // namespace

// y = softmax(x) along axis          x, y: same shape
// dx_j = y_j * (dy_j - sum_k dy_k y_k)
template <typename T>
Tensor<T> softmax(const Tensor<T>& x, std::ptrdiff_t axis) {
  const Shape shape = x.shape();
  const Rows<T> rows(detail::split_at_axis(shape, detail::normalize_axis(axis, shape.size(), "softmax", shape)));
  const std::size_t n = rows.size();
  Array<T> y = detail::empty_array<T>(shape);
  rows.map(y.data(), x.value().data(), nullptr, [n](std::size_t, T* yr, const T* xr, const T*) {
    const T m = detail::row_max(xr, n);
    if (m == neg_inf<T>) {
      std::fill_n(yr, n, T(0));  // fully masked row
      return;
    }
    const T inv_total = T(1) / detail::row_exp_shifted(xr, m, yr, n);
    for (std::size_t j = 0; j < n; ++j) yr[j] *= inv_total;
    detail::flush_subnormals(yr, n);
  });
  return make_result<T>("softmax", std::move(y), {x}, [rows](Node<T>& out) {
    // BEGIN TASK 0.6: softmax backward
    HEADLAB_TASK("0.6");
    const std::size_t n = rows.size();
    Array<T> g = detail::empty_array<T>(detail::shape_of(out.value));
    rows.map(g.data(), out.value.data(), out.grad.data(), [n](std::size_t, T* dx, const T* y, const T* dy) {
      const T dot = detail::row_dot(dy, y, n);  // sum_k dy_k y_k
      for (std::size_t j = 0; j < n; ++j) dx[j] = y[j] * (dy[j] - dot);
      detail::flush_subnormals(dx, n);
    });
    accumulate_grad(*out.inputs[0], std::move(g), "softmax");
    // END TASK 0.6
  }, ValueUse::own_output());
}

// y = log_softmax(x) along axis      x, y: same shape
// dx_j = dy_j - softmax_j * sum_k dy_k   (0 on fully masked rows)
template <typename T>
Tensor<T> log_softmax(const Tensor<T>& x, std::ptrdiff_t axis) {
  const Shape shape = x.shape();
  const Rows<T> rows(
      detail::split_at_axis(shape, detail::normalize_axis(axis, shape.size(), "log_softmax", shape)));
  const std::size_t n = rows.size();
  Array<T> y = detail::empty_array<T>(shape);
  std::vector<unsigned char> masked_row(rows.count(), 0);
  rows.map(y.data(), x.value().data(), nullptr, [n, &masked_row](std::size_t r, T* yr, const T* xr, const T*) {
    const T m = detail::row_max(xr, n);
    if (m == neg_inf<T>) {
      masked_row[r] = 1;
      std::fill_n(yr, n, T(0));
      return;
    }
    const T log_total = std::log(detail::row_exp_shifted(xr, m, yr, n));  // yr holds exp(x - m) for now
    for (std::size_t j = 0; j < n; ++j) yr[j] = xr[j] - m - log_total;
  });
  return make_result<T>("log_softmax", std::move(y), {x}, [rows, masked_row = std::move(masked_row)](Node<T>& out) {
    // BEGIN TASK 0.7: log_softmax backward
    HEADLAB_TASK("0.7");
    const std::size_t n = rows.size();
    Array<T> g = detail::empty_array<T>(detail::shape_of(out.value));
    rows.map(g.data(), out.value.data(), out.grad.data(), [&](std::size_t r, T* dx, const T* y, const T* dy) {
      if (masked_row[r]) {
        std::fill_n(dx, n, T(0));
        return;
      }
      const T total = detail::row_sum(dy, n);  // sum_k dy_k
      detail::row_exp_shifted(y, T(0), dx, n);  // dx = softmax = exp(y) for now
      for (std::size_t j = 0; j < n; ++j) dx[j] = dy[j] - dx[j] * total;
    });
    accumulate_grad(*out.inputs[0], std::move(g), "log_softmax");
    // END TASK 0.7
  }, ValueUse::own_output());
}

#define INSTANTIATE(T)                                                  \
  template Tensor<T> softmax<T>(const Tensor<T>&, std::ptrdiff_t);      \
  template Tensor<T> log_softmax<T>(const Tensor<T>&, std::ptrdiff_t);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
