// ops/shape.cpp: reshape, permute/transpose, narrow/split, concat/stack.
//
// Results are contiguous copies (row-major), so every later kernel can work on
// raw buffers. Each backward moves the gradient back through the inverse map.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "headlab/core/threads.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/shape_utils.hpp"
#include "ops/kernels/row_kernels.hpp"

namespace headlab {

// y = x with a new shape of the same element count (one entry may be -1).
// dx = dy reshaped back to x's shape.
template <typename T>
Tensor<T> reshape(const Tensor<T>& x, const std::vector<std::ptrdiff_t>& new_shape) {
  const Shape in = x.shape();
  const std::size_t total = detail::numel_of(in);
  Shape out(new_shape.size());
  std::ptrdiff_t inferred = -1;
  std::size_t known = 1;
  for (std::size_t i = 0; i < new_shape.size(); ++i) {
    if (new_shape[i] == -1 && inferred < 0) {
      inferred = static_cast<std::ptrdiff_t>(i);
    } else if (new_shape[i] < 0) {
      throw ShapeError("reshape: invalid size " + std::to_string(new_shape[i]) + " in the new shape for " +
                       shape_str(in));
    } else {
      out[i] = static_cast<std::size_t>(new_shape[i]);
      known *= out[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      throw ShapeError("reshape: cannot infer -1 when reshaping " + shape_str(in) + " (" + std::to_string(total) +
                       " elements)");
    }
    out[static_cast<std::size_t>(inferred)] = total / known;
  }
  if (detail::numel_of(out) != total) {
    throw ShapeError("reshape: cannot reshape " + shape_str(in) + " (" + std::to_string(total) + " elements) to " +
                     shape_str(out) + " (" + std::to_string(detail::numel_of(out)) + " elements)");
  }
  Array<T> y = x.value();
  y.reshape(out);
  return make_result<T>("reshape", std::move(y), {x}, [in](Node<T>& out_node) {
    Array<T> g = detail::pass_on_grad(out_node);
    g.reshape(in);
    accumulate_grad(*out_node.inputs[0], std::move(g), "reshape");
  }, ValueUse::nothing());
}

namespace {

// y = x with axes reordered: y.shape[i] = x.shape[order[i]].
template <typename T>
Array<T> permute_values(const Array<T>& x, const std::vector<std::size_t>& order) {
  const Shape in = detail::shape_of(x);
  const std::vector<std::size_t> in_strides = detail::row_major_strides(in);
  Shape out(order.size());
  std::vector<std::size_t> strides(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    out[i] = in[order[i]];
    strides[i] = in_strides[order[i]];
  }
  Array<T> y = detail::empty_array<T>(out);
  const T* src = x.data();
  T* dst = y.data();
  const std::size_t n = order.size();
  if (n >= 2 && order[n - 1] == n - 1) {
    // The last axis stays last (head split / merge): move whole contiguous rows.
    const std::size_t row = in[n - 1];
    if (row == 0) return y;
    if (n == 4) {  // (B, T, h, d) <-> (B, h, T, d): three plain loops, the first shared among threads
      parallel_for(out[0], out[1] * out[2] * row, [&](std::size_t a0, std::size_t a1) {
        T* d = dst + a0 * out[1] * out[2] * row;
        for (std::size_t a = a0; a < a1; ++a)
          for (std::size_t b = 0; b < out[1]; ++b)
            for (std::size_t c = 0; c < out[2]; ++c, d += row)
              detail::row_copy(src + a * strides[0] + b * strides[1] + c * strides[2], row, d);
      });
      return y;
    }
    const Shape outer(out.begin(), out.end() - 1);
    const std::vector<std::size_t> outer_strides(strides.begin(), strides.end() - 1);
    detail::for_each_strided(outer, outer_strides, [&](std::size_t i, std::size_t j) {
      std::memcpy(dst + i * row, src + j, row * sizeof(T));
    });
    return y;
  }
  bool last_two_swapped = n >= 2 && order[n - 1] == n - 2 && order[n - 2] == n - 1;
  for (std::size_t i = 0; i + 2 < n && last_two_swapped; ++i) last_two_swapped = order[i] == i;
  if (last_two_swapped) {
    // A batch of matrices transposed: (..., R, C) -> (..., C, R).
    const std::size_t R = in[n - 2], C = in[n - 1], matrices = (R > 0 && C > 0) ? x.size() / (R * C) : 0;
    for (std::size_t m = 0; m < matrices; ++m) {
      const T* a = src + m * R * C;
      T* b = dst + m * R * C;
      for (std::size_t r = 0; r < R; ++r)
        for (std::size_t c = 0; c < C; ++c) b[c * R + r] = a[r * C + c];
    }
    return y;
  }
  detail::for_each_strided(out, strides, [&](std::size_t i, std::size_t j) { dst[i] = src[j]; });
  return y;
}

template <typename T>
Tensor<T> permute_impl(const char* op, const Tensor<T>& x, const std::vector<std::size_t>& order) {
  std::vector<std::size_t> inverse(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) inverse[order[i]] = i;
  return make_result<T>(op, permute_values(x.value(), order), {x}, [op, inverse](Node<T>& out) {
    accumulate_grad(*out.inputs[0], permute_values(out.grad, inverse), op);
  }, ValueUse::nothing());
}

}  // namespace

// y = x.permute(order): y[i_0..] = x[i_order^-1..];  dx = dy.permute(inverse order)
template <typename T>
Tensor<T> permute(const Tensor<T>& x, const Axes& order) {
  const Shape in = x.shape();
  if (order.size() != in.size()) {
    throw ShapeError("permute: order has " + std::to_string(order.size()) + " axes for a tensor of shape " +
                     shape_str(in));
  }
  std::vector<std::size_t> norm;
  for (auto a : order) norm.push_back(detail::normalize_axis(a, in.size(), "permute", in));
  std::vector<std::size_t> sorted = norm;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != i) throw ShapeError("permute: order is not a permutation of the axes of " + shape_str(in));
  }
  return permute_impl("permute", x, norm);
}

// y = x with axes axis0 and axis1 swapped;  dx = dy with them swapped back
template <typename T>
Tensor<T> transpose(const Tensor<T>& x, std::ptrdiff_t axis0, std::ptrdiff_t axis1) {
  const Shape in = x.shape();
  const std::size_t a0 = detail::normalize_axis(axis0, in.size(), "transpose", in);
  const std::size_t a1 = detail::normalize_axis(axis1, in.size(), "transpose", in);
  std::vector<std::size_t> order(in.size());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[a0], order[a1]);
  return permute_impl("transpose", x, order);
}

namespace {

// Copies (or, with Accumulate, adds: dst += src) rows of len * inner contiguous elements:
// the sub-range [start, start + len) of an axis, seen as (outer, size, inner).
template <bool Accumulate = false, typename T>
void copy_axis_range(const T* src, std::size_t src_size, std::size_t src_start, T* dst, std::size_t dst_size,
                     std::size_t dst_start, std::size_t len, std::size_t outer, std::size_t inner) {
  const std::size_t block = len * inner;
  if (block == 0) return;
  for (std::size_t o = 0; o < outer; ++o) {
    const T* from = src + (o * src_size + src_start) * inner;
    T* to = dst + (o * dst_size + dst_start) * inner;
    if constexpr (Accumulate) {
      for (std::size_t i = 0; i < block; ++i) to[i] += from[i];
    } else {
      detail::row_copy(from, block, to);
    }
  }
}

template <typename T>
Tensor<T> narrow_impl(const char* op, const Tensor<T>& x, std::size_t axis, std::size_t start, std::size_t length) {
  const Shape in = x.shape();
  const detail::AxisSplit s = detail::split_at_axis(in, axis);
  Shape out = in;
  out[axis] = length;
  Array<T> y = detail::empty_array<T>(out);
  copy_axis_range(x.value().data(), s.size, start, y.data(), length, 0, length, s.outer, s.inner);
  return make_result<T>(op, std::move(y), {x}, [op, in, s, start, length](Node<T>& node) {
    Node<T>& input = *node.inputs[0];
    if (Array<T>* grad = grad_to_add_into(input)) {  // add dy into the range in place (a split's pieces meet here)
      copy_axis_range<true>(node.grad.data(), length, 0, grad->data(), s.size, start, length, s.outer, s.inner);
      return;
    }
    Array<T> g = xt::zeros<T>(in);
    copy_axis_range(node.grad.data(), length, 0, g.data(), s.size, start, length, s.outer, s.inner);
    accumulate_grad(input, std::move(g), op);
  }, ValueUse::nothing());
}

}  // namespace

// y = x[..., start:start+length, ...] along axis;  dx = zeros with dy placed at that range
template <typename T>
Tensor<T> narrow(const Tensor<T>& x, std::ptrdiff_t axis, std::size_t start, std::size_t length) {
  const Shape in = x.shape();
  const std::size_t a = detail::normalize_axis(axis, in.size(), "narrow", in);
  if (start > in[a] || length > in[a] - start) {
    throw ShapeError("narrow: range [" + std::to_string(start) + ", " + std::to_string(start + length) +
                     ") outside axis " + std::to_string(axis) + " of shape " + shape_str(in));
  }
  return narrow_impl("narrow", x, a, start, length);
}

// [x[..., 0:s0, ...], x[..., s0:s0+s1, ...], ...];  each piece's backward is a narrow's
template <typename T>
std::vector<Tensor<T>> split(const Tensor<T>& x, const std::vector<std::size_t>& sizes, std::ptrdiff_t axis) {
  const Shape in = x.shape();
  const std::size_t a = detail::normalize_axis(axis, in.size(), "split", in);
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t(0));
  if (total != in[a]) {
    throw ShapeError("split: sizes add up to " + std::to_string(total) + " but axis " + std::to_string(axis) +
                     " of shape " + shape_str(in) + " has " + std::to_string(in[a]));
  }
  std::vector<Tensor<T>> pieces;
  std::size_t start = 0;
  for (std::size_t len : sizes) {
    pieces.push_back(narrow_impl("split", x, a, start, len));
    start += len;
  }
  return pieces;
}

namespace {

// y = the inputs laid end to end along `axis` of out_shape; inputs are viewed
// as (outer, size_i, inner) and their shapes already checked.
template <typename T>
Tensor<T> concat_impl(const char* op, const std::vector<Tensor<T>>& xs, std::size_t axis, const Shape& out_shape,
                      const std::vector<std::size_t>& sizes) {
  const detail::AxisSplit s = detail::split_at_axis(out_shape, axis);
  Array<T> y = detail::empty_array<T>(out_shape);
  std::size_t start = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    copy_axis_range(xs[i].value().data(), sizes[i], 0, y.data(), s.size, start, sizes[i], s.outer, s.inner);
    start += sizes[i];
  }
  return make_result<T>(op, std::move(y), xs, [op, s, sizes](Node<T>& out) {
    std::size_t begin = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (wants_grad(out, i)) {
        Array<T> g = detail::empty_array<T>(out.inputs[i]->shape());
        copy_axis_range(out.grad.data(), s.size, begin, g.data(), sizes[i], 0, sizes[i], s.outer, s.inner);
        accumulate_grad(*out.inputs[i], std::move(g), op);
      }
      begin += sizes[i];
    }
  }, ValueUse::nothing());
}

}  // namespace

// y = [x_0; x_1; ...] along axis (other dims equal);  dx_i = dy's slice for x_i
template <typename T>
Tensor<T> concat(const std::vector<Tensor<T>>& xs, std::ptrdiff_t axis) {
  if (xs.empty()) throw ShapeError("concat: no tensors given");
  const Shape first = xs[0].shape();
  const std::size_t a = detail::normalize_axis(axis, first.size(), "concat", first);
  Shape out = first;
  out[a] = 0;
  std::vector<std::size_t> sizes;
  for (const auto& x : xs) {
    Shape s = x.shape();
    bool ok = s.size() == first.size();
    for (std::size_t d = 0; ok && d < s.size(); ++d) ok = d == a || s[d] == first[d];
    if (!ok) {
      throw ShapeError("concat: shape " + shape_str(s) + " does not match " + shape_str(first) + " except on axis " +
                       std::to_string(axis));
    }
    sizes.push_back(s[a]);
    out[a] += s[a];
  }
  return concat_impl("concat", xs, a, out, sizes);
}

// y = the inputs stacked along a new axis (all shapes equal);  dx_i = dy's slice i
template <typename T>
Tensor<T> stack(const std::vector<Tensor<T>>& xs, std::ptrdiff_t axis) {
  if (xs.empty()) throw ShapeError("stack: no tensors given");
  const Shape first = xs[0].shape();
  const std::size_t a = detail::normalize_axis(axis, first.size() + 1, "stack", first);
  for (const auto& x : xs) {
    if (x.shape() != first) {
      throw ShapeError("stack: shape " + shape_str(x.shape()) + " differs from " + shape_str(first));
    }
  }
  // Stacking along a new axis a is concatenation along a of inputs seen with
  // a size-1 axis inserted there; the buffers are the same, only shapes differ.
  Shape out = first;
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(a), xs.size());
  return concat_impl("stack", xs, a, out, std::vector<std::size_t>(xs.size(), 1));
}

#define INSTANTIATE(T)                                                                                   \
  template Tensor<T> reshape<T>(const Tensor<T>&, const std::vector<std::ptrdiff_t>&);                   \
  template Tensor<T> transpose<T>(const Tensor<T>&, std::ptrdiff_t, std::ptrdiff_t);                     \
  template Tensor<T> permute<T>(const Tensor<T>&, const Axes&);                                          \
  template Tensor<T> narrow<T>(const Tensor<T>&, std::ptrdiff_t, std::size_t, std::size_t);              \
  template std::vector<Tensor<T>> split<T>(const Tensor<T>&, const std::vector<std::size_t>&, std::ptrdiff_t); \
  template Tensor<T> concat<T>(const std::vector<Tensor<T>>&, std::ptrdiff_t);                           \
  template Tensor<T> stack<T>(const std::vector<Tensor<T>>&, std::ptrdiff_t);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
