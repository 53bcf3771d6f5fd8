// shape_utils.hpp (internal): shapes, axes, strides and broadcasting helpers
// shared by the op files.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab::detail {

std::size_t numel_of(const Shape& shape);
// Row-major strides in elements: strides[i] = prod(shape[i+1:]).
std::vector<std::size_t> row_major_strides(const Shape& shape);

// Maps a possibly negative axis into [0, rank); throws ShapeError naming op.
std::size_t normalize_axis(std::ptrdiff_t axis, std::size_t rank, const char* op, const Shape& shape);
// Sorted, unique, normalised axes; empty input means all axes.
std::vector<std::size_t> normalize_axes(const std::vector<std::ptrdiff_t>& axes, std::size_t rank, const char* op,
                                        const Shape& shape);

// numpy broadcasting of two shapes; throws ShapeError "op: cannot broadcast [..] with [..]".
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// The shape of the xarray (as a std::vector).
template <typename A>
Shape shape_of(const A& array) {
  return Shape(array.shape().begin(), array.shape().end());
}

// Strides of `in` (rank <= out rank) seen through broadcasting to `out`:
// aligned to the right, 0 where `in` has size 1 (or is missing) and out does not.
std::vector<std::size_t> broadcast_strides(const Shape& in, const Shape& out);

// The one helper every broadcasting backward uses: sums `grad` (shape out)
// down to `target` (a shape that broadcasts to out), i.e. over the leading
// axes `target` lacks and over the axes where target has size 1.
template <typename T>
Array<T> unbroadcast(const Array<T>& grad, const Shape& target);
// The same for a gradient the caller gives away: moved through when no sum is needed.
template <typename T>
Array<T> unbroadcast(Array<T>&& grad, const Shape& target) {
  if (shape_of(grad) == target) return std::move(grad);
  return unbroadcast(static_cast<const Array<T>&>(grad), target);
}

// dL/d(output) of `out`, given away by its backward to its last user: the pass drops a
// non-leaf's grad right after its backward_fn, so it is moved, not copied, unless the
// user asked to keep it (retain_grad).
template <typename T>
Array<T> pass_on_grad(Node<T>& out) {
  return out.retains_grad ? Array<T>(out.grad) : std::move(out.grad);
}

// Calls fn(out_index, in_offset) for every element of an array of shape `out`
// in row-major order, where in_offset = sum_d index[d] * strides[d].
template <typename Fn>
void for_each_strided(const Shape& out, const std::vector<std::size_t>& strides, Fn&& fn) {
  const std::size_t rank = out.size();
  const std::size_t total = numel_of(out);
  std::vector<std::size_t> counter(rank, 0);
  std::size_t in_offset = 0;
  for (std::size_t i = 0; i < total; ++i) {
    fn(i, in_offset);
    // Increment the multi-index (last axis fastest), keeping in_offset in step.
    for (std::size_t d = rank; d-- > 0;) {
      if (++counter[d] < out[d]) {
        in_offset += strides[d];
        break;
      }
      in_offset -= strides[d] * (out[d] - 1);
      counter[d] = 0;
    }
  }
}

// Calls fn(out_index, in_offset) for every element of `out` in row-major
// order, where in_offset is the element of `in` that broadcasts onto it.
template <typename Fn>
void for_each_broadcast(const Shape& in, const Shape& out, Fn&& fn) {
  for_each_strided(out, broadcast_strides(in, out), std::forward<Fn>(fn));
}

// A contiguous array of `shape` (xtensor's shape type from a std::vector).
template <typename T>
Array<T> empty_array(const Shape& shape) {
  return Array<T>::from_shape(shape);
}

// For reductions and softmax-like ops over one axis: the array viewed as
// (outer, axis_size, inner) with inner contiguous.
struct AxisSplit {
  std::size_t outer = 1, size = 1, inner = 1;
};
AxisSplit split_at_axis(const Shape& shape, std::size_t axis);

}  // namespace headlab::detail

// Explicit instantiation for both scalar types: HEADLAB_INSTANTIATE(MACRO)
// expands MACRO(float) and MACRO(double).
#define HEADLAB_INSTANTIATE(MACRO) MACRO(float) MACRO(double)
