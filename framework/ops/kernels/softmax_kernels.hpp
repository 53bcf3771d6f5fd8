// softmax_kernels.hpp (internal): the fast softmax and log_softmax, forward and backward.
//
// The same formulas as the references in ops/softmax.cpp (read those first), computed row by row
// with the SIMD row kernels (row_kernels.hpp) on contiguous rows: a row along a middle axis is
// gathered into a scratch buffer first. softmax's probabilities and gradients get their subnormal
// numbers flushed to zero (a speed matter: row_kernels.hpp, flush_subnormals).
//
// Shapes: x, y, dy, dx have one shape; `axis` is the (normalised) axis of the rows; row_masked has
// x's shape with that axis of size 1 (true where the whole row is -inf).
#pragma once

#include <cstddef>

#include "headlab/core/tensor.hpp"

namespace headlab {
struct ScoreMask;  // headlab/ops/ops.hpp
}

namespace headlab::kernels {

// y = softmax(x) along axis; a row of all -inf gives y = 0.
template <typename T>
Array<T> softmax_forward(const Array<T>& x, std::size_t axis);
// dx = y * (dy - sum(dy * y, axis))
template <typename T>
Array<T> softmax_backward(const Array<T>& y, const Array<T>& dy, std::size_t axis);

// Where the keys of row r = (b, head, i) of (B, h, L, S) scores are hidden: hidden(r, row) sets
// row[j] = 1 for each hidden key j (row has S bytes, zeroed by the caller). Built by
// ops/softmax.cpp from a ScoreMask, whose row rule is written out there.
struct HiddenKeys {
  std::size_t B = 0, h = 0, L = 0, S = 0;
  const bool* positions = nullptr;  // (L, S) or null
  const bool* padding = nullptr;    // (B, S) or null
  const bool* mask = nullptr;       // broadcast to (B, h, L, S) with `mask_strides` (0 on a broadcast dim)
  std::size_t mask_strides[4] = {0, 0, 0, 0};
  void row(std::size_t r, unsigned char* out) const;
};
// The HiddenKeys of scores of shape `scores` (B, h, L, S) from a ScoreMask (ops/softmax.cpp), after
// checking every mask's shape: ShapeError naming `op` when one does not fit.
HiddenKeys hidden_keys_of(const ScoreMask& hide, const Shape& scores, const char* op);
// y = softmax(x with hidden keys at -inf) over the last axis of (B, h, L, S) x.
template <typename T>
Array<T> masked_softmax_forward(const Array<T>& x, const HiddenKeys& hidden);

// log_softmax's forward also says which rows were fully masked (their y is 0 and so is their dx).
template <typename T>
struct LogSoftmaxForward {
  Array<T> y;
  MaskArray row_masked;
};
// y = x - max - log(sum(exp(x - max))) along axis
template <typename T>
LogSoftmaxForward<T> log_softmax_forward(const Array<T>& x, std::size_t axis);
// dx = dy - exp(y) * sum(dy, axis), and 0 on the masked rows
template <typename T>
Array<T> log_softmax_backward(const Array<T>& y, const Array<T>& dy, const MaskArray& row_masked, std::size_t axis);

}  // namespace headlab::kernels
