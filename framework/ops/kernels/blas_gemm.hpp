// blas_gemm.hpp (internal): C (M x N) = alpha op(A) op(B) + beta C on contiguous row-major
// buffers, one overload per scalar type (cblas_sgemm / cblas_dgemm). op(X) = X^T when trans_x.
#pragma once

#include <algorithm>
#include <cstddef>

#include <cblas.h>

namespace headlab::detail {

inline void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, const float* A,
                 const float* B, float beta, float* C, float alpha = 1.0f) {
  const int lda = static_cast<int>(std::max<std::size_t>(1, trans_a ? M : K));
  const int ldb = static_cast<int>(std::max<std::size_t>(1, trans_b ? K : N));
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A, lda, B, ldb, beta, C,
              static_cast<int>(std::max<std::size_t>(1, N)));
}
inline void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, const double* A,
                 const double* B, double beta, double* C, double alpha = 1.0) {
  const int lda = static_cast<int>(std::max<std::size_t>(1, trans_a ? M : K));
  const int ldb = static_cast<int>(std::max<std::size_t>(1, trans_b ? K : N));
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, A, lda, B, ldb, beta, C,
              static_cast<int>(std::max<std::size_t>(1, N)));
}

}  // namespace headlab::detail
