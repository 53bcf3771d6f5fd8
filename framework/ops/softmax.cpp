// ops/softmax.cpp: softmax and log_softmax over one axis.
//
// The tensor is seen as (outer, n, inner): a "row" is the n elements
// x[o, 0..n-1, i] (contiguous when inner == 1, the usual last-axis case).
//   softmax:      y_j = exp(x_j - m) / sum_k exp(x_k - m),  m = max_k x_k
//   log_softmax:  y_j = x_j - m - log(sum_k exp(x_k - m))
// A row that is all -inf (every key masked) has no finite maximum; it gives
// y = 0 and a zero gradient instead of NaN.
//
// Each formula is written out below as a readable reference (plain loops over the rows, or one
// line of xtensor); the ops run the fast kernels of ops/kernels/softmax_kernels.cpp (SIMD rows,
// subnormals flushed) unless the kernel choice says otherwise (headlab/ops/kernel_choice.hpp).
#include <cmath>
#include <limits>

#include "headlab/core/shape_utils.hpp"
#include "headlab/core/task_marker.hpp"
#include "headlab/ops/kernel_choice.hpp"
#include "headlab/ops/ops.hpp"
#include "ops/kernels/softmax_kernels.hpp"

namespace headlab {
namespace {

template <typename T>
constexpr T neg_inf = -std::numeric_limits<T>::infinity();

// The rows along `axis` of an array seen as (outer, n, inner): row r = (o, i) is the n elements
// at flat offsets (o n + j) inner + i, j = 0..n-1.
struct AxisRows {
  detail::AxisSplit split;
  AxisRows(const Shape& shape, std::size_t axis) : split(detail::split_at_axis(shape, axis)) {}
  std::size_t count() const { return split.outer * split.inner; }
  std::size_t length() const { return split.size; }
  std::size_t at(std::size_t r, std::size_t j) const {
    return (r / split.inner * split.size + j) * split.inner + r % split.inner;
  }
};

// ---- softmax ---------------------------------------------------------------------------------

// y = softmax(x) along axis, row by row:   m = max_k x_k,  y_j = exp(x_j - m) / sum_k exp(x_k - m)
template <typename T>
Array<T> softmax_reference(const Array<T>& x, std::size_t axis) {
  const AxisRows rows(detail::shape_of(x), axis);
  Array<T> y = xt::zeros<T>(detail::shape_of(x));
  for (std::size_t r = 0; r < rows.count(); ++r) {
    auto x_at = [&](std::size_t j) { return x.data()[rows.at(r, j)]; };  // x_j of row r
    T m = neg_inf<T>;
    for (std::size_t j = 0; j < rows.length(); ++j) m = std::max(m, x_at(j));
    if (m == neg_inf<T>) continue;  // every entry masked: y stays 0
    T total = 0;
    for (std::size_t j = 0; j < rows.length(); ++j) total += std::exp(x_at(j) - m);
    for (std::size_t j = 0; j < rows.length(); ++j) y.data()[rows.at(r, j)] = std::exp(x_at(j) - m) / total;
  }
  return y;
}

// Task 0.6. y = softmax(x) and dy = dL/dy, both of x's shape; returns dL/dx:
//   dx_j = y_j * (dy_j - sum_k dy_k y_k)       (the sum over the row: `axis`)
// You get y, not x: softmax's backward needs only its output, so the op declares
// ValueUse::own_output() and the engine keeps y for it; x itself may already be freed.
// A fully masked row has y = 0 there, so the formula gives it dx = 0 as it is.
template <typename T>
Array<T> softmax_backward_reference(const Array<T>& y, const Array<T>& dy, std::size_t axis) {
  // BEGIN TASK 0.6: softmax backward
  HEADLAB_TASK("0.6");
  const Array<T> dot = xt::sum(dy * y, {axis}, xt::keep_dims);  // sum_k dy_k y_k, one per row (axis of size 1)
  return y * (dy - dot);
  // END TASK 0.6
}

// ---- masked softmax (attention scores) --------------------------------------------------------

// y = masked_softmax(x) for x (B, h, L, S), row by row: key j of row (b, head, i) is hidden when
//   positions(i, j) or padding(b, j) or mask(b, head, i, j)      (each only when given; mask broadcast)
// and then   y_j = exp(x_j - m) / sum over visible k of exp(x_k - m),  m = max over visible k of x_k,
// y_j = 0 on hidden keys, y = 0 on a row with no visible key.
template <typename T>
Array<T> masked_softmax_reference(const Array<T>& x, const kernels::HiddenKeys& keys) {
  const std::size_t B = keys.B, H = keys.h, L = keys.L, S = keys.S;
  const std::size_t* ms = keys.mask_strides;
  auto hidden = [&](std::size_t b, std::size_t head, std::size_t i, std::size_t j) {
    return (keys.positions && keys.positions[i * S + j]) || (keys.padding && keys.padding[b * S + j]) ||
           (keys.mask && keys.mask[b * ms[0] + head * ms[1] + i * ms[2] + j * ms[3]]);
  };
  Array<T> y = xt::zeros<T>(detail::shape_of(x));
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t head = 0; head < H; ++head)
      for (std::size_t i = 0; i < L; ++i) {
        const std::size_t row = ((b * H + head) * L + i) * S;
        T m = neg_inf<T>;
        for (std::size_t j = 0; j < S; ++j)
          if (!hidden(b, head, i, j)) m = std::max(m, x.data()[row + j]);
        if (m == neg_inf<T>) continue;  // nothing visible: y stays 0
        T total = 0;
        for (std::size_t j = 0; j < S; ++j)
          if (!hidden(b, head, i, j)) total += std::exp(x.data()[row + j] - m);
        for (std::size_t j = 0; j < S; ++j)
          if (!hidden(b, head, i, j)) y.data()[row + j] = std::exp(x.data()[row + j] - m) / total;
      }
  return y;
}

// ---- log_softmax -----------------------------------------------------------------------------

// y = log_softmax(x) along axis, row by row:   y_j = x_j - m - log(sum_k exp(x_k - m)),  m = max_k x_k
// and which rows are all -inf (their y is 0).
template <typename T>
kernels::LogSoftmaxForward<T> log_softmax_reference(const Array<T>& x, std::size_t axis) {
  const Shape shape = detail::shape_of(x);
  const AxisRows rows(shape, axis);
  Shape row_shape = shape;
  row_shape[axis] = 1;  // one flag per row
  kernels::LogSoftmaxForward<T> out{xt::zeros<T>(shape), xt::zeros<bool>(row_shape)};
  for (std::size_t r = 0; r < rows.count(); ++r) {
    auto x_at = [&](std::size_t j) { return x.data()[rows.at(r, j)]; };  // x_j of row r
    T m = neg_inf<T>;
    for (std::size_t j = 0; j < rows.length(); ++j) m = std::max(m, x_at(j));
    if (m == neg_inf<T>) {
      out.row_masked.data()[r] = true;  // y stays 0
      continue;
    }
    T total = 0;
    for (std::size_t j = 0; j < rows.length(); ++j) total += std::exp(x_at(j) - m);
    const T log_total = std::log(total);
    for (std::size_t j = 0; j < rows.length(); ++j) out.y.data()[rows.at(r, j)] = x_at(j) - m - log_total;
  }
  return out;
}

// Task 0.7. y = log_softmax(x) and dy = dL/dy, both of x's shape; row_masked has x's shape with
// `axis` of size 1, true on a row that was all -inf. Returns dL/dx:
//   dx_j = dy_j - softmax_j * sum_k dy_k,   softmax_j = exp(y_j);   dx = 0 on a masked row
// You get y, not x: the op declares ValueUse::own_output(), so the engine keeps y for this
// backward; x itself may already be freed. row_masked is kept by the op (its closure).
template <typename T>
Array<T> log_softmax_backward_reference(const Array<T>& y, const Array<T>& dy, const MaskArray& row_masked,
                                        std::size_t axis) {
  // BEGIN TASK 0.7: log_softmax backward
  HEADLAB_TASK("0.7");
  const Array<T> dy_total = xt::sum(dy, {axis}, xt::keep_dims);  // sum_k dy_k, one per row (axis of size 1)
  return xt::where(row_masked, T(0), dy - xt::exp(y) * dy_total);
  // END TASK 0.7
}

}  // namespace

namespace kernels {
// The ScoreMask of (B, h, L, S) scores as the kernels read it, after checking every shape.
HiddenKeys hidden_keys_of(const ScoreMask& hide, const Shape& xs, const char* op) {
  if (xs.size() != 4) throw ShapeError(std::string(op) + ": scores must be (B, h, L, S), got " + shape_str(xs));
  HiddenKeys k;
  k.B = xs[0];
  k.h = xs[1];
  k.L = xs[2];
  k.S = xs[3];
  auto expect = [&](const MaskArray* m, const Shape& want, const char* what) {
    if (m && detail::shape_of(*m) != want) {
      throw ShapeError(std::string(op) + ": " + what + " mask of shape " + shape_str(detail::shape_of(*m)) +
                       " should be " + shape_str(want) + " for scores " + shape_str(xs) + " (B, h, L, S)");
    }
  };
  expect(hide.positions, Shape{k.L, k.S}, "position");
  expect(hide.padding, Shape{k.B, k.S}, "padding");
  k.positions = hide.positions ? hide.positions->data() : nullptr;
  k.padding = hide.padding ? hide.padding->data() : nullptr;
  if (hide.mask) {
    const Shape ms = detail::shape_of(*hide.mask);
    bool fits = ms.size() <= 4;
    // Right-aligned against (B, h, L, S): a dim of the mask is the scores' or 1 (stride 0).
    std::size_t stride = 1;
    for (std::size_t d = 0; fits && d < ms.size(); ++d) {
      const std::size_t md = ms.size() - 1 - d, xd = 3 - d;
      if (ms[md] != xs[xd] && ms[md] != 1) fits = false;
      k.mask_strides[xd] = ms[md] == 1 ? 0 : stride;
      stride *= ms[md];
    }
    if (!fits) {
      throw ShapeError(std::string(op) + ": mask of shape " + shape_str(ms) + " does not broadcast to the scores " +
                       shape_str(xs) + " (B, h, L, S)");
    }
    k.mask = hide.mask->data();
  }
  return k;
}

}  // namespace kernels

// y = softmax(x) along axis          x, y: same shape
template <typename T>
Tensor<T> softmax(const Tensor<T>& x, std::ptrdiff_t axis) {
  const std::size_t ax = detail::normalize_axis(axis, x.shape().size(), "softmax", x.shape());
  Array<T> y = detail::run_reference() ? softmax_reference(x.value(), ax) : kernels::softmax_forward(x.value(), ax);
  return make_result<T>("softmax", std::move(y), {x}, [ax](Node<T>& out) {
    // out.value is y (kept: ValueUse::own_output() below), out.grad is dL/dy.
    Array<T> dx = detail::run_task_region("0.6") ? softmax_backward_reference(out.value, out.grad, ax)
                                                 : kernels::softmax_backward(out.value, out.grad, ax);
    accumulate_grad(*out.inputs[0], std::move(dx), "softmax");
  }, ValueUse::own_output());
}

// y = softmax(scores with hidden keys at -inf, -1)      scores, y: (B, h, L, S)
// dx = y * (dy - sum(dy * y, -1)): softmax's backward (task 0.6); hidden keys have y = 0, so dx = 0.
template <typename T>
Tensor<T> masked_softmax(const Tensor<T>& scores, const ScoreMask& hide) {
  const kernels::HiddenKeys keys = kernels::hidden_keys_of(hide, scores.shape(), "masked_softmax");
  Array<T> y = detail::run_reference() ? masked_softmax_reference(scores.value(), keys)
                                       : kernels::masked_softmax_forward(scores.value(), keys);
  return make_result<T>("masked_softmax", std::move(y), {scores}, [](Node<T>& out) {
    // out.value is y (kept: ValueUse::own_output() below), out.grad is dL/dy.
    Array<T> dx = detail::run_task_region("0.6") ? softmax_backward_reference(out.value, out.grad, 3)
                                                 : kernels::softmax_backward(out.value, out.grad, 3);
    accumulate_grad(*out.inputs[0], std::move(dx), "masked_softmax");
  }, ValueUse::own_output());
}

// y = log_softmax(x) along axis      x, y: same shape
template <typename T>
Tensor<T> log_softmax(const Tensor<T>& x, std::ptrdiff_t axis) {
  const std::size_t ax = detail::normalize_axis(axis, x.shape().size(), "log_softmax", x.shape());
  kernels::LogSoftmaxForward<T> f =
      detail::run_reference() ? log_softmax_reference(x.value(), ax) : kernels::log_softmax_forward(x.value(), ax);
  return make_result<T>("log_softmax", std::move(f.y), {x}, [ax, row_masked = std::move(f.row_masked)](Node<T>& out) {
    // out.value is y (kept: ValueUse::own_output() below), out.grad is dL/dy.
    Array<T> dx = detail::run_task_region("0.7")
                      ? log_softmax_backward_reference(out.value, out.grad, row_masked, ax)
                      : kernels::log_softmax_backward(out.value, out.grad, row_masked, ax);
    accumulate_grad(*out.inputs[0], std::move(dx), "log_softmax");
  }, ValueUse::own_output());
}

#define INSTANTIATE(T)                                                  \
  template Tensor<T> softmax<T>(const Tensor<T>&, std::ptrdiff_t);      \
  template Tensor<T> log_softmax<T>(const Tensor<T>&, std::ptrdiff_t);  \
  template Tensor<T> masked_softmax<T>(const Tensor<T>&, const ScoreMask&);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
