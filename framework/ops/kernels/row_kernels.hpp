// row_kernels.hpp (internal): vectorised loops over one contiguous row x[0..n).
//
// Without -ffast-math the compiler may not reorder a floating-point sum, so a
// plain `for (j) s += x[j]` runs one add at a time. These helpers keep one
// partial result per SIMD lane (xsimd batches), combine the lanes, then add the
// scalar tail: a fixed order, so the same input always gives the same bits.
// Used by the fast kernels of softmax, log_softmax, cross_entropy and layer_norm
// (softmax_kernels.cpp, loss_kernels.cpp, norm_kernels.cpp) and by flash attention.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

#include <xsimd/xsimd.hpp>

namespace headlab::detail {

template <typename T>
using Batch = xsimd::batch<T>;

// max_j x[j]   (-inf for n == 0)
template <typename T>
T row_max(const T* x, std::size_t n) {
  constexpr std::size_t W = Batch<T>::size;
  std::size_t j = 0;
  T m = -std::numeric_limits<T>::infinity();
  if (n >= W) {
    Batch<T> acc = Batch<T>::load_unaligned(x);
    for (j = W; j + W <= n; j += W) acc = xsimd::max(acc, Batch<T>::load_unaligned(x + j));
    alignas(64) T lanes[W];
    acc.store_aligned(lanes);
    for (std::size_t l = 0; l < W; ++l) m = std::max(m, lanes[l]);
  }
  for (; j < n; ++j) m = std::max(m, x[j]);
  return m;
}

// d[0..n) = s[0..n), the buffers apart. Rows of a few dozen values (a head's row when heads are
// split or merged, a bias row) are copied with SIMD loads and stores in place: there a memcpy
// call costs more than the copy (5% of a copy-task step). Longer rows go to memcpy.
template <typename T>
void row_copy(const T* s, std::size_t n, T* d) {
  if (n > 256) {
    std::memcpy(d, s, n * sizeof(T));
    return;
  }
  constexpr std::size_t W = Batch<T>::size;
  std::size_t j = 0;
  for (; j + W <= n; j += W) Batch<T>::load_unaligned(s + j).store_unaligned(d + j);
  for (; j < n; ++j) d[j] = s[j];
}

// d[0..n) = scale * s[0..n), the buffers apart (one rounding per element, as the scalar loop).
template <typename T>
void row_scale(const T* s, std::size_t n, T scale, T* d) {
  constexpr std::size_t W = Batch<T>::size;
  const Batch<T> factor(scale);
  std::size_t j = 0;
  for (; j + W <= n; j += W) (Batch<T>::load_unaligned(s + j) * factor).store_unaligned(d + j);
  for (; j < n; ++j) d[j] = s[j] * scale;
}

// sum_j x[j]
template <typename T>
T row_sum(const T* x, std::size_t n) {
  constexpr std::size_t W = Batch<T>::size;
  Batch<T> acc(T(0));
  std::size_t j = 0;
  for (; j + W <= n; j += W) acc += Batch<T>::load_unaligned(x + j);
  T s = xsimd::hadd(acc);
  for (; j < n; ++j) s += x[j];
  return s;
}

// sum_j a[j] b[j]
template <typename T>
T row_dot(const T* a, const T* b, std::size_t n) {
  constexpr std::size_t W = Batch<T>::size;
  Batch<T> acc(T(0));
  std::size_t j = 0;
  for (; j + W <= n; j += W) acc = xsimd::fma(Batch<T>::load_unaligned(a + j), Batch<T>::load_unaligned(b + j), acc);
  T s = xsimd::hadd(acc);
  for (; j < n; ++j) s += a[j] * b[j];
  return s;
}

// out[j] = exp(x[j] - shift); returns sum_j out[j]. out may equal x. shift must be finite.
template <typename T>
T row_exp_shifted(const T* x, T shift, T* out, std::size_t n) {
  constexpr std::size_t W = Batch<T>::size;
  const Batch<T> s(shift);
  Batch<T> acc(T(0));
  std::size_t j = 0;
  for (; j + W <= n; j += W) {
    const Batch<T> e = xsimd::exp(Batch<T>::load_unaligned(x + j) - s);
    e.store_unaligned(out + j);
    acc += e;
  }
  if (j < n) {  // the tail, as one batch padded with -inf (exp(-inf) = 0 adds nothing)
    alignas(64) T lanes[W];
    std::fill(lanes, lanes + W, -std::numeric_limits<T>::infinity());
    std::copy(x + j, x + n, lanes);
    const Batch<T> e = xsimd::exp(Batch<T>::load_aligned(lanes) - s);
    e.store_aligned(lanes);
    std::copy(lanes, lanes + (n - j), out + j);
    acc += e;
  }
  return xsimd::hadd(acc);
}

// x[j] = 0 where |x[j]| is below the smallest normal number (a subnormal: 1.2e-38 in float).
// A saturated softmax makes them (exp(-100) ~ 4e-44), and every gemm that then reads them runs
// many times slower on x86. A probability that small is 0 to within float's precision next to
// the row's largest (>= 1/n); gradients through it are scaled by it. What set_flush_denormal
// does for every operation, done here for the rows of softmax and the attention kernels only.
template <typename T>
void flush_subnormals(T* x, std::size_t n) {
  const T tiny = std::numeric_limits<T>::min();
  for (std::size_t j = 0; j < n; ++j) x[j] = std::abs(x[j]) < tiny ? T(0) : x[j];
}

}  // namespace headlab::detail
