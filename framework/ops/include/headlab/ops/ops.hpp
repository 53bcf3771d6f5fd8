// headlab/ops/ops.hpp: every differentiable op, as free functions.
//
// Each op is implemented in src/ops_*.cpp with its forward and its backward
// side by side. Axes may be negative (counted from the end). Shapes follow
// numpy broadcasting for the elementwise binary ops. A bad shape throws
// ShapeError naming the op and the shapes involved.
//
// softmax, log_softmax, cross_entropy, layer_norm, matmul and linear run a fast kernel
// (ops/kernels/) by default; each also has a readable reference in its op's file, the same
// formula as plain loops. headlab/ops/kernel_choice.hpp says which one runs.
#pragma once

#include <cstddef>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab {

class Generator;
using Axes = std::vector<std::ptrdiff_t>;

// ---- Elementwise, broadcasting (ops/elementwise.cpp) ------------------
template <typename T> Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b);
template <typename T> Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b);
template <typename T> Tensor<T> mul(const Tensor<T>& a, const Tensor<T>& b);
template <typename T> Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b);
template <typename T> Tensor<T> neg(const Tensor<T>& x);
template <typename T> Tensor<T> add_scalar(const Tensor<T>& x, T s);   // x + s
template <typename T> Tensor<T> mul_scalar(const Tensor<T>& x, T s);   // x * s
template <typename T> Tensor<T> rsub_scalar(const Tensor<T>& x, T s);  // s - x
template <typename T> Tensor<T> rdiv_scalar(const Tensor<T>& x, T s);  // s / x
template <typename T> Tensor<T> pow(const Tensor<T>& x, T exponent);   // x^p
template <typename T> Tensor<T> exp(const Tensor<T>& x);
template <typename T> Tensor<T> log(const Tensor<T>& x);
template <typename T> Tensor<T> sqrt(const Tensor<T>& x);
template <typename T> Tensor<T> tanh(const Tensor<T>& x);
template <typename T> Tensor<T> sigmoid(const Tensor<T>& x);
template <typename T> Tensor<T> relu(const Tensor<T>& x);
// Exact GELU, x * Phi(x) with the normal CDF (PyTorch's default, approximate='none').
template <typename T> Tensor<T> gelu(const Tensor<T>& x);

template <typename T> Tensor<T> operator+(const Tensor<T>& a, const Tensor<T>& b) { return add(a, b); }
template <typename T> Tensor<T> operator-(const Tensor<T>& a, const Tensor<T>& b) { return sub(a, b); }
template <typename T> Tensor<T> operator*(const Tensor<T>& a, const Tensor<T>& b) { return mul(a, b); }
template <typename T> Tensor<T> operator/(const Tensor<T>& a, const Tensor<T>& b) { return div(a, b); }
template <typename T> Tensor<T> operator-(const Tensor<T>& x) { return neg(x); }
template <typename T> Tensor<T> operator+(const Tensor<T>& x, T s) { return add_scalar(x, s); }
template <typename T> Tensor<T> operator+(T s, const Tensor<T>& x) { return add_scalar(x, s); }
template <typename T> Tensor<T> operator-(const Tensor<T>& x, T s) { return add_scalar(x, -s); }
template <typename T> Tensor<T> operator-(T s, const Tensor<T>& x) { return rsub_scalar(x, s); }
template <typename T> Tensor<T> operator*(const Tensor<T>& x, T s) { return mul_scalar(x, s); }
template <typename T> Tensor<T> operator*(T s, const Tensor<T>& x) { return mul_scalar(x, s); }
template <typename T> Tensor<T> operator/(const Tensor<T>& x, T s) { return mul_scalar(x, T(1) / s); }
template <typename T> Tensor<T> operator/(T s, const Tensor<T>& x) { return rdiv_scalar(x, s); }

// ---- Reductions (ops/reduce.cpp) --------------------------------------
// Over the given axes (all axes when empty); keepdim keeps them as size 1.
template <typename T> Tensor<T> sum(const Tensor<T>& x, const Axes& axes = {}, bool keepdim = false);
template <typename T> Tensor<T> mean(const Tensor<T>& x, const Axes& axes = {}, bool keepdim = false);
// Max over axes. The gradient flows to the first maximal element of each
// reduced slice (as torch.max(dim) does); ties get no share.
template <typename T> Tensor<T> max(const Tensor<T>& x, const Axes& axes = {}, bool keepdim = false);

// ---- Matrix product (ops/matmul.cpp) ----------------------------------
// a (..., n, k) @ b (..., k, m) -> (..., n, m); both operands at least 2-D,
// batch dims broadcast as in numpy. cblas gemm on raw contiguous buffers.
template <typename T> Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b);
// PyTorch's linear layer: x (..., in), weight (out, in), bias (out) or undefined -> x W^T + b (..., out).
template <typename T> Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias = Tensor<T>());

// ---- Shape ops (ops/shape.cpp); results are contiguous copies ---------
// One entry of new_shape may be -1 (inferred).
template <typename T> Tensor<T> reshape(const Tensor<T>& x, const std::vector<std::ptrdiff_t>& new_shape);
template <typename T> Tensor<T> view(const Tensor<T>& x, const std::vector<std::ptrdiff_t>& new_shape) {
  return reshape(x, new_shape);
}
template <typename T> Tensor<T> transpose(const Tensor<T>& x, std::ptrdiff_t axis0, std::ptrdiff_t axis1);
template <typename T> Tensor<T> permute(const Tensor<T>& x, const Axes& order);
// Elements start .. start+length-1 along axis.
template <typename T> Tensor<T> narrow(const Tensor<T>& x, std::ptrdiff_t axis, std::size_t start, std::size_t length);
// Pieces of the given sizes along axis (they must add up to the axis size).
template <typename T> std::vector<Tensor<T>> split(const Tensor<T>& x, const std::vector<std::size_t>& sizes, std::ptrdiff_t axis);
template <typename T> Tensor<T> concat(const std::vector<Tensor<T>>& xs, std::ptrdiff_t axis);
template <typename T> Tensor<T> stack(const std::vector<Tensor<T>>& xs, std::ptrdiff_t axis);

// ---- Indexing (ops/index.cpp) -----------------------------------------
// weight (V, D), ids (any shape) -> (ids..., D); backward scatter-adds rows.
template <typename T> Tensor<T> embedding(const Tensor<T>& weight, const IndexArray& ids);
// torch.gather: out[i][j][k] = x[i][index[i][j][k]][k] for axis 1; index has x's rank.
template <typename T> Tensor<T> gather(const Tensor<T>& x, std::ptrdiff_t axis, const IndexArray& index);
// x where mask is false, value where mask is true (mask broadcasts to x's shape).
template <typename T> Tensor<T> masked_fill(const Tensor<T>& x, const MaskArray& mask, T value);
// a where cond is true, b elsewhere; cond, a and b broadcast together.
template <typename T> Tensor<T> where(const MaskArray& cond, const Tensor<T>& a, const Tensor<T>& b);

// ---- Softmax family (ops/softmax.cpp) ---------------------------------
// Numerically stable (subtracts the row max). A row that is entirely -inf
// (fully masked) gives zeros instead of NaN, for softmax and log_softmax alike.
template <typename T> Tensor<T> softmax(const Tensor<T>& x, std::ptrdiff_t axis = -1);
template <typename T> Tensor<T> log_softmax(const Tensor<T>& x, std::ptrdiff_t axis = -1);

// Which keys each row of attention scores (B, h, L, S) may not see, in compact form. A key is
// hidden when any of the given masks is true there (null = not given):
//   positions (L, S)   the same for every batch and head: causal, sliding window, sinks
//   padding   (B, S)   per sequence, for every head and query: key_padding_mask
//   mask      any shape that broadcasts to (B, h, L, S): attn_mask
// Nothing of size (B, h, L, S) is built from it: masked_softmax reads it row by row.
struct ScoreMask {
  const MaskArray* positions = nullptr;
  const MaskArray* padding = nullptr;
  const MaskArray* mask = nullptr;
  bool empty() const { return !positions && !padding && !mask; }
};
// y = softmax(scores with hidden keys at -inf, -1)      scores, y: (B, h, L, S)
// y is 0 on hidden keys, and on a whole row when all its keys are hidden. The backward is
// softmax's (dx = y (dy - sum(dy y))): a hidden key has y = 0, so its gradient is 0 as it is.
// The masks are read during the call only (ShapeError when one does not fit the scores).
template <typename T> Tensor<T> masked_softmax(const Tensor<T>& scores, const ScoreMask& hide);

// ---- Losses (ops/loss.cpp) ---------------------------------------------
// logits (N, C), targets (N) -> scalar; PyTorch's F.cross_entropy with mean
// reduction over the targets that are not ignore_index:
//   loss_n = (1 - eps) * (-log p[n, y_n]) + eps * mean_c(-log p[n, c]).
// Returns 0 (not NaN) when every target is ignored.
template <typename T>
Tensor<T> cross_entropy(const Tensor<T>& logits, const IndexArray& targets, std::int64_t ignore_index = -100,
                        T label_smoothing = T(0));

// ---- Normalisation and regularisation (ops/norm.cpp) ------------------
// Over the last axis: y = (x - mean) / sqrt(var + eps) * weight + bias, var biased.
// weight and bias are (D) and may be undefined Tensors (no affine part).
template <typename T>
Tensor<T> layer_norm(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, T eps = T(1e-5));
// Zeroes each element with probability p, scales the rest by 1/(1-p). Identity
// when training is false or p == 0.
template <typename T> Tensor<T> dropout(const Tensor<T>& x, T p, Generator& gen, bool training);

}  // namespace headlab
