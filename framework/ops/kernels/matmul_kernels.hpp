// matmul_kernels.hpp (internal): the fast matmul and linear, forward and backward, on cblas gemm
// (blas_gemm.hpp). The readable versions, loops over the formula, are in ops/matmul.cpp.
//
//   matmul  a (..., n, k) @ b (..., k, m) -> c (..., n, m)      batch dims broadcast
//   linear  x (rows, in), W (out, in), bias (out) -> y = x W^T + bias (rows, out)
#pragma once

#include <cstddef>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab::kernels {

// Which matrices one batched product pairs up: output matrix i (of the batch dims flattened) is
// matrix a_of[i] of a times matrix b_of[i] of b. Each matrix is contiguous: a's matrix t starts
// at a.data() + t n k, b's at b.data() + t k m, c's matrix i at c.data() + i n m.
struct MatmulPlan {
  Shape a_shape, b_shape, c_shape;
  std::size_t n = 0, k = 0, m = 0;
  std::vector<std::size_t> a_of;  // per output matrix: index of a's matrix
  std::vector<std::size_t> b_of;  // per output matrix: index of b's matrix
  bool b_is_matrix = false;       // b is 2-D: the fast path folds a's batches into one tall matrix
};

template <typename T>
struct MatmulGrads {
  Array<T> da, db;  // a's and b's shapes; left empty when not wanted
};

template <typename T>
Array<T> matmul_forward(const Array<T>& a, const Array<T>& b, const MatmulPlan& p);
// da = dc @ b^T and db = a^T @ dc, summed over the output matrices that share a matrix of a (or b).
template <typename T>
MatmulGrads<T> matmul_backward(const Array<T>& a, const Array<T>& b, const Array<T>& dc, const MatmulPlan& p,
                               bool want_da, bool want_db);

// x is (..., in) seen as (rows, in); bias may be null.
template <typename T>
Array<T> linear_forward(const Array<T>& x, const Array<T>& weight, const T* bias, const Shape& y_shape);

template <typename T>
struct LinearGrads {
  Array<T> dx, dweight, dbias;  // x's, W's and the bias's shapes; left empty when not wanted
};
// dx = dy W,  dW = dy^T x,  dbias = sum over rows of dy
template <typename T>
LinearGrads<T> linear_backward(const Array<T>& x, const Array<T>& weight, const Array<T>& dy, bool want_dx,
                               bool want_dweight, bool want_dbias);

}  // namespace headlab::kernels
