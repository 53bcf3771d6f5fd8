// blas_gemm.hpp (internal): C (M x N) = alpha op(A) op(B) + beta C on contiguous row-major
// buffers, one overload per scalar type (cblas_sgemm / cblas_dgemm). op(X) = X^T when trans_x.
//
// gemm() shares one product among headlab's threads (headlab/core/threads.hpp): C is cut into
// as many blocks of rows (or of columns, when C has fewer rows than columns) as there are
// threads, and each thread runs one single-threaded BLAS call on its block. Inside another
// parallel loop (the per-head products) it is one call on the calling thread.
#pragma once

#include <algorithm>
#include <cstddef>

#include <cblas.h>

#include "headlab/core/threads.hpp"

namespace headlab::detail {

// One BLAS call with explicit leading dimensions (row-major: ld = the stored row length).
inline void blas_gemm(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, float alpha, const float* A,
                      std::size_t lda, const float* B, std::size_t ldb, float beta, float* C, std::size_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb),
              beta, C, static_cast<int>(ldc));
}
inline void blas_gemm(bool ta, bool tb, std::size_t M, std::size_t N, std::size_t K, double alpha, const double* A,
                      std::size_t lda, const double* B, std::size_t ldb, double beta, double* C, std::size_t ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb),
              beta, C, static_cast<int>(ldc));
}

template <typename T>
void gemm(bool trans_a, bool trans_b, std::size_t M, std::size_t N, std::size_t K, const T* A, const T* B, T beta,
          T* C, T alpha = T(1)) {
  // Stored shapes: A is (M x K), or (K x M) when trans_a; B is (K x N), or (N x K) when trans_b.
  const std::size_t lda = std::max<std::size_t>(1, trans_a ? M : K);
  const std::size_t ldb = std::max<std::size_t>(1, trans_b ? K : N);
  const std::size_t ldc = std::max<std::size_t>(1, N);
  if (M >= N) {
    // Rows [r0, r1) of C need rows [r0, r1) of op(A): A + r0 K, or columns of A^T: A + r0.
    parallel_for(M, N * K, [&](std::size_t r0, std::size_t r1) {
      blas_gemm(trans_a, trans_b, r1 - r0, N, K, alpha, A + (trans_a ? r0 : r0 * K), lda, B, ldb, beta,
                C + r0 * ldc, ldc);
    });
  } else {
    // Columns [c0, c1) of C need columns [c0, c1) of op(B): B + c0, or rows of B^T: B + c0 K.
    parallel_for(N, M * K, [&](std::size_t c0, std::size_t c1) {
      blas_gemm(trans_a, trans_b, M, c1 - c0, K, alpha, A, lda, B + (trans_b ? c0 * K : c0), ldb, beta, C + c0,
                ldc);
    });
  }
}

}  // namespace headlab::detail
