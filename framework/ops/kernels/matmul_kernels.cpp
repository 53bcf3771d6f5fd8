// matmul_kernels.cpp: the fast matmul and linear (matmul_kernels.hpp): one gemm per output
// matrix, or one gemm for all of them when b is a plain matrix (a weight): a's batches are then
// one tall (rows x k) matrix. gemm with beta = 1 accumulates, which sums the gradient of a matrix
// that several outputs share. The readable versions are in ops/matmul.cpp.
//
// Threads (headlab/core/threads.hpp): a single product is split by gemm() itself; a batch of
// products (the per-head ones of attention) is split by matrix, each thread running whole
// single-threaded products. A gradient that several outputs add into the same matrix of a (or b)
// is summed on one thread in batch order, so the sum is the same for every thread count.
#include "ops/kernels/matmul_kernels.hpp"

#include <algorithm>
#include <vector>

#include "headlab/core/shape_utils.hpp"
#include "ops/kernels/blas_gemm.hpp"
#include "ops/kernels/row_kernels.hpp"

namespace headlab::kernels {

using detail::gemm;  // blas_gemm.hpp: C (M x N) = alpha op(A) op(B) + beta C

template <typename T>
Array<T> matmul_forward(const Array<T>& a, const Array<T>& b, const MatmulPlan& p) {
  // gemm with beta = 0 overwrites C, so it needs no zero-fill unless k == 0.
  Array<T> c = p.k > 0 ? detail::empty_array<T>(p.c_shape) : Array<T>(xt::zeros<T>(p.c_shape));
  const std::size_t nk = p.n * p.k, km = p.k * p.m, nm = p.n * p.m;
  if (p.n == 0 || p.m == 0 || p.k == 0) return c;
  if (p.b_is_matrix) {
    const std::size_t rows = a.size() / p.k;
    gemm(false, false, rows, p.m, p.k, a.data(), b.data(), T(0), c.data());
  } else {
    parallel_for(p.a_of.size(), p.n * p.m * p.k, [&](std::size_t i0, std::size_t i1) {
      for (std::size_t i = i0; i < i1; ++i)
        gemm(false, false, p.n, p.m, p.k, a.data() + p.a_of[i] * nk, b.data() + p.b_of[i] * km, T(0), c.data() + i * nm);
    });
  }
  return c;
}

namespace {
// for_each_product(fn): fn(i) for every output matrix i. When every target matrix (a_of for da,
// b_of for db) belongs to one output only, the products are independent and run in parallel;
// otherwise in batch order on this thread (each gemm still splits itself).
template <typename Fn>
void for_each_product(const std::vector<std::size_t>& target_of, std::size_t work, Fn&& fn) {
  const std::size_t batches = target_of.size();
  std::vector<bool> seen(batches, false);
  bool distinct = true;
  for (std::size_t t : target_of) {
    if (t >= batches || seen[t]) {
      distinct = false;
      break;
    }
    seen[t] = true;
  }
  if (!distinct) {
    for (std::size_t i = 0; i < batches; ++i) fn(i);
    return;
  }
  parallel_for(batches, work, [&](std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) fn(i);
  });
}
}  // namespace

template <typename T>
MatmulGrads<T> matmul_backward(const Array<T>& a, const Array<T>& b, const Array<T>& dc, const MatmulPlan& p,
                               bool want_da, bool want_db) {
  // BEGIN FAST TWIN OF TASK 0.5
  MatmulGrads<T> g;
  const bool empty = p.n == 0 || p.m == 0 || p.k == 0;
  const std::size_t nk = p.n * p.k, km = p.k * p.m, nm = p.n * p.m;
  const T* A = a.data();
  const T* B = b.data();
  const T* dC = dc.data();
  if (want_da) {
    // Batched: several output matrices may share one matrix of a, so accumulate (beta = 1) into zeros.
    g.da = p.b_is_matrix && !empty ? detail::empty_array<T>(p.a_shape) : Array<T>(xt::zeros<T>(p.a_shape));
    if (empty) {
      // nothing to add: da stays 0
    } else if (p.b_is_matrix) {  // dA (rows x k) = dC (rows x m) @ B^T
      gemm(false, true, g.da.size() / p.k, p.k, p.m, dC, B, T(0), g.da.data());
    } else {
      T* dA = g.da.data();
      for_each_product(p.a_of, p.n * p.k * p.m, [&](std::size_t i) {
        gemm(false, true, p.n, p.k, p.m, dC + i * nm, B + p.b_of[i] * km, T(1), dA + p.a_of[i] * nk);
      });
    }
  }
  if (want_db) {
    g.db = p.b_is_matrix && !empty ? detail::empty_array<T>(p.b_shape) : Array<T>(xt::zeros<T>(p.b_shape));
    if (empty) {
      // nothing to add: db stays 0
    } else if (p.b_is_matrix) {  // dB (k x m) = A^T (k x rows) @ dC (rows x m)
      gemm(true, false, p.k, p.m, a.size() / p.k, A, dC, T(0), g.db.data());
    } else {
      T* dB = g.db.data();
      for_each_product(p.b_of, p.k * p.m * p.n, [&](std::size_t i) {
        gemm(true, false, p.k, p.m, p.n, A + p.a_of[i] * nk, dC + i * nm, T(1), dB + p.b_of[i] * km);
      });
    }
  }
  return g;
  // END FAST TWIN OF TASK 0.5
}

template <typename T>
Array<T> linear_forward(const Array<T>& x, const Array<T>& weight, const T* bias, const Shape& y_shape) {
  const std::size_t in = weight.shape()[1], out_features = weight.shape()[0];
  const std::size_t rows = detail::numel_of(Shape(y_shape.begin(), y_shape.end() - 1));
  Array<T> y = detail::empty_array<T>(y_shape);
  T* py = y.data();
  if (bias) {
    parallel_for(rows, out_features, [&](std::size_t r0, std::size_t r1) {
      for (std::size_t r = r0; r < r1; ++r) detail::row_copy(bias, out_features, py + r * out_features);
    });
  } else {
    std::fill_n(py, y.size(), T(0));
  }
  // y (rows x out) += x (rows x in) @ W^T (in x out): W is read transposed in place, no copy.
  if (rows && out_features && in) gemm(false, true, rows, out_features, in, x.data(), weight.data(), T(1), py);
  return y;
}

template <typename T>
LinearGrads<T> linear_backward(const Array<T>& x, const Array<T>& weight, const Array<T>& dy, bool want_dx,
                               bool want_dweight, bool want_dbias) {
  const std::size_t in = weight.shape()[1], out_features = weight.shape()[0];
  const std::size_t rows = detail::numel_of(Shape(dy.shape().begin(), dy.shape().end() - 1));
  const bool empty = rows == 0 || in == 0 || out_features == 0;
  LinearGrads<T> g;
  if (want_dx) {  // dx (rows x in) = dy (rows x out) @ W (out x in)
    const Shape xs = detail::shape_of(x);
    g.dx = empty ? Array<T>(xt::zeros<T>(xs)) : detail::empty_array<T>(xs);
    if (!empty) gemm(false, false, rows, in, out_features, dy.data(), weight.data(), T(0), g.dx.data());
  }
  if (want_dweight) {  // dW (out x in) = dy^T (out x rows) @ x (rows x in)
    const Shape ws{out_features, in};
    g.dweight = empty ? Array<T>(xt::zeros<T>(ws)) : detail::empty_array<T>(ws);
    if (!empty) gemm(true, false, out_features, in, rows, dy.data(), x.data(), T(0), g.dweight.data());
  }
  if (want_dbias) {  // dbias = sum over rows of dy
    // Each thread sums its block of columns over all rows, in row order.
    g.dbias = xt::zeros<T>(Shape{out_features});
    T* db = g.dbias.data();
    const T* d = dy.data();
    parallel_for(out_features, rows, [&](std::size_t o0, std::size_t o1) {
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = o0; o < o1; ++o) db[o] += d[r * out_features + o];
    });
  }
  return g;
}

#define INSTANTIATE(T)                                                                                          \
  template Array<T> matmul_forward<T>(const Array<T>&, const Array<T>&, const MatmulPlan&);                     \
  template MatmulGrads<T> matmul_backward<T>(const Array<T>&, const Array<T>&, const Array<T>&, const MatmulPlan&, \
                                             bool, bool);                                                       \
  template Array<T> linear_forward<T>(const Array<T>&, const Array<T>&, const T*, const Shape&);                \
  template LinearGrads<T> linear_backward<T>(const Array<T>&, const Array<T>&, const Array<T>&, bool, bool, bool);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab::kernels
