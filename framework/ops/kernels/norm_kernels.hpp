// norm_kernels.hpp (internal): the fast layer_norm, forward and backward, with the SIMD row sums
// and dots of row_kernels.hpp. The readable versions, with the formulas, are in ops/norm.cpp.
//
// Shapes: x, y, xhat, dy, dx are (..., D), seen as rows of D; rstd is (..., 1), one per row;
// weight and bias are (D) or null (no affine part).
#pragma once

#include "headlab/core/tensor.hpp"

namespace headlab::kernels {

template <typename T>
struct LayerNormForward {
  Array<T> y;     // (..., D)
  Array<T> xhat;  // (x - mean) * rstd, (..., D): kept for the backward
  Array<T> rstd;  // 1 / sqrt(var + eps), (..., 1): kept for the backward
};
template <typename T>
LayerNormForward<T> layer_norm_forward(const Array<T>& x, const T* weight, const T* bias, T eps);

template <typename T>
struct LayerNormGrads {
  Array<T> dx, dweight, dbias;  // (..., D), (D), (D); left empty when not wanted
};
template <typename T>
LayerNormGrads<T> layer_norm_backward(const Array<T>& dy, const Array<T>& xhat, const Array<T>& rstd,
                                      const T* weight, bool want_dx, bool want_dweight, bool want_dbias);

}  // namespace headlab::kernels
