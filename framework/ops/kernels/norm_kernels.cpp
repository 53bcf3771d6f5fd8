// norm_kernels.cpp: the fast layer_norm (norm_kernels.hpp): rows of D contiguous elements, their
// sums and dots with the SIMD row kernels. The readable versions are in ops/norm.cpp.
#include "ops/kernels/norm_kernels.hpp"

#include <cmath>
#include <vector>

#include "headlab/core/shape_utils.hpp"
#include "headlab/core/threads.hpp"
#include "ops/kernels/row_kernels.hpp"

namespace headlab::kernels {

template <typename T>
LayerNormForward<T> layer_norm_forward(const Array<T>& x, const T* w, const T* b, T eps) {
  const Shape xs = detail::shape_of(x);
  const std::size_t D = xs.back();
  const std::size_t rows = D ? x.size() / D : 0;
  Shape row_shape = xs;
  row_shape.back() = 1;
  LayerNormForward<T> f{detail::empty_array<T>(xs), detail::empty_array<T>(xs), detail::empty_array<T>(row_shape)};
  parallel_for(rows, 8 * D, [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const T* xr = x.data() + r * D;
      T* xh = f.xhat.data() + r * D;
      T* yr = f.y.data() + r * D;
      const T mu = detail::row_sum(xr, D) / T(D);
      for (std::size_t d = 0; d < D; ++d) xh[d] = xr[d] - mu;  // centred, for now
      const T var = detail::row_dot(xh, xh, D) / T(D);
      const T rstd = T(1) / std::sqrt(var + eps);
      f.rstd.data()[r] = rstd;
      for (std::size_t d = 0; d < D; ++d) xh[d] *= rstd;
      for (std::size_t d = 0; d < D; ++d) yr[d] = (w ? xh[d] * w[d] : xh[d]) + (b ? b[d] : T(0));
    }
  });
  if (D == 0) std::fill_n(f.rstd.data(), f.rstd.size(), T(0));  // no row to normalise
  return f;
}

template <typename T>
LayerNormGrads<T> layer_norm_backward(const Array<T>& dy, const Array<T>& xhat, const Array<T>& rstd, const T* w,
                                      bool want_dx, bool want_dweight, bool want_dbias) {
  // BEGIN FAST TWIN OF TASK 3.1
  const Shape xs = detail::shape_of(dy);
  const std::size_t D = xs.back();
  const std::size_t rows = D ? dy.size() / D : 0;
  LayerNormGrads<T> g;
  if (want_dx) {
    g.dx = detail::empty_array<T>(xs);
    parallel_for(rows, 8 * D, [&](std::size_t r0, std::size_t r1) {
      std::vector<T> dxhat(D);
      for (std::size_t r = r0; r < r1; ++r) {
        const T* xh = xhat.data() + r * D;
        const T* dyr = dy.data() + r * D;
        T* dxr = g.dx.data() + r * D;
        for (std::size_t d = 0; d < D; ++d) dxhat[d] = w ? dyr[d] * w[d] : dyr[d];
        const T mean_dxhat = detail::row_sum(dxhat.data(), D) / T(D);
        const T mean_dxhat_xhat = detail::row_dot(dxhat.data(), xh, D) / T(D);
        const T rs = rstd.data()[r];
        for (std::size_t d = 0; d < D; ++d) dxr[d] = rs * (dxhat[d] - mean_dxhat - xh[d] * mean_dxhat_xhat);
      }
    });
  }
  // dweight = sum over rows of dy * xhat, dbias = sum over rows of dy: each thread sums its block
  // of columns over all rows, in row order.
  if (want_dweight) {
    g.dweight = xt::zeros<T>(Shape{D});
    T* dwp = g.dweight.data();
    parallel_for(D, rows, [&](std::size_t d0, std::size_t d1) {
      for (std::size_t r = 0; r < rows; ++r) {
        const T* dyr = dy.data() + r * D;
        const T* xh = xhat.data() + r * D;
        for (std::size_t d = d0; d < d1; ++d) dwp[d] += dyr[d] * xh[d];
      }
    });
  }
  if (want_dbias) {
    g.dbias = xt::zeros<T>(Shape{D});
    T* dbp = g.dbias.data();
    parallel_for(D, rows, [&](std::size_t d0, std::size_t d1) {
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t d = d0; d < d1; ++d) dbp[d] += dy.data()[r * D + d];
    });
  }
  return g;
  // END FAST TWIN OF TASK 3.1
}

#define INSTANTIATE(T)                                                                                         \
  template LayerNormForward<T> layer_norm_forward<T>(const Array<T>&, const T*, const T*, T);                 \
  template LayerNormGrads<T> layer_norm_backward<T>(const Array<T>&, const Array<T>&, const Array<T>&, const T*, \
                                                    bool, bool, bool);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab::kernels
