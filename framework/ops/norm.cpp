// ops/norm.cpp: layer normalisation and dropout.
#include <cmath>

#include "headlab/core/task_marker.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "ops/kernels/row_kernels.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

// Over the last axis (D), for each row of x (..., D):
//   mu = mean(x), var = mean((x - mu)^2), rstd = 1 / sqrt(var + eps)
//   xhat = (x - mu) * rstd,  y = xhat * weight + bias        weight, bias: (D)
// Backward (per row), with dxhat = dy * weight:
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//   dweight = sum over rows of dy * xhat,  dbias = sum over rows of dy
template <typename T>
Tensor<T> layer_norm(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, T eps) {
  const Shape xs = x.shape();
  if (xs.empty()) throw ShapeError("layer_norm: input must have at least 1 dim, got " + shape_str(xs));
  const std::size_t D = xs.back();
  const std::size_t rows = D ? x.numel() / D : 0;
  for (const Tensor<T>* p : {&weight, &bias}) {
    if (p->defined() && p->shape() != Shape{D}) {
      throw ShapeError("layer_norm: " + std::string(p == &weight ? "weight" : "bias") + " of shape " +
                       shape_str(p->shape()) + " does not match the last dim of input " + shape_str(xs));
    }
  }
  const bool has_w = weight.defined(), has_b = bias.defined();
  Array<T> xhat = detail::empty_array<T>(xs);
  Array<T> y = detail::empty_array<T>(xs);
  std::vector<T> rstd(rows);
  const T* w = has_w ? weight.value().data() : nullptr;
  const T* b = has_b ? bias.value().data() : nullptr;
  for (std::size_t r = 0; r < rows; ++r) {
    const T* xr = x.value().data() + r * D;
    T* xh = xhat.data() + r * D;
    T* yr = y.data() + r * D;
    const T mu = detail::row_sum(xr, D) / T(D);
    for (std::size_t d = 0; d < D; ++d) xh[d] = xr[d] - mu;      // centred, for now
    const T var = detail::row_dot(xh, xh, D) / T(D);
    rstd[r] = T(1) / std::sqrt(var + eps);
    for (std::size_t d = 0; d < D; ++d) xh[d] *= rstd[r];
    for (std::size_t d = 0; d < D; ++d) yr[d] = (w ? xh[d] * w[d] : xh[d]) + (b ? b[d] : T(0));
  }
  std::vector<Tensor<T>> inputs{x};
  if (has_w) inputs.push_back(weight);
  if (has_b) inputs.push_back(bias);
  return make_result<T>(
      "layer_norm", std::move(y), inputs,
      [rows, D, has_w, has_b, xhat = std::move(xhat), rstd = std::move(rstd)](Node<T>& out) {
        // BEGIN TASK 3.1: layer norm backward
        HEADLAB_TASK("3.1");
        const T* dy = out.grad.data();
        const T* w = has_w ? out.inputs[1]->value.data() : nullptr;
        if (wants_grad(out, 0)) {
          Array<T> dx = detail::empty_array<T>(detail::shape_of(xhat));
          std::vector<T> dxhat(D);
          for (std::size_t r = 0; r < rows; ++r) {
            const T* xh = xhat.data() + r * D;
            const T* dyr = dy + r * D;
            T* dxr = dx.data() + r * D;
            for (std::size_t d = 0; d < D; ++d) dxhat[d] = w ? dyr[d] * w[d] : dyr[d];
            const T mean_dxhat = detail::row_sum(dxhat.data(), D) / T(D);
            const T mean_dxhat_xhat = detail::row_dot(dxhat.data(), xh, D) / T(D);
            for (std::size_t d = 0; d < D; ++d) dxr[d] = rstd[r] * (dxhat[d] - mean_dxhat - xh[d] * mean_dxhat_xhat);
          }
          accumulate_grad(*out.inputs[0], std::move(dx), "layer_norm");
        }
        const std::size_t wi = 1, bi = has_w ? 2 : 1;
        if (has_w && wants_grad(out, wi)) {  // dweight = sum over rows of dy * xhat
          Array<T> dw = xt::zeros<T>(Shape{D});
          T* dwp = dw.data();
          for (std::size_t r = 0; r < rows; ++r) {
            const T* dyr = dy + r * D;
            const T* xh = xhat.data() + r * D;
            for (std::size_t d = 0; d < D; ++d) dwp[d] += dyr[d] * xh[d];
          }
          accumulate_grad(*out.inputs[wi], std::move(dw), "layer_norm");
        }
        if (has_b && wants_grad(out, bi)) {  // dbias = sum over rows of dy
          Array<T> db = xt::zeros<T>(Shape{D});
          T* dbp = db.data();
          for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t d = 0; d < D; ++d) dbp[d] += dy[r * D + d];
          accumulate_grad(*out.inputs[bi], std::move(db), "layer_norm");
        }
        // END TASK 3.1
      }, ValueUse::inputs_only(has_w ? 0b010 : 0));  // the weight; xhat is in the closure
}

// y = x * keep / (1 - p), keep ~ Bernoulli(1 - p) drawn from gen;  dx = dy * keep / (1 - p)
// p == 1 drops everything (y = 0). Identity (the same tensor) in eval mode or for p == 0.
template <typename T>
Tensor<T> dropout(const Tensor<T>& x, T p, Generator& gen, bool training) {
  if (!(p >= T(0) && p <= T(1))) {
    throw ValueError("dropout: probability must be in [0, 1], got " + std::to_string(p));
  }
  if (!training || p == T(0)) return x;
  const T scale = p < T(1) ? T(1) / (T(1) - p) : T(0);
  Array<T> keep_scaled = detail::empty_array<T>(x.shape());
  for (std::size_t i = 0; i < keep_scaled.size(); ++i)
    keep_scaled.data()[i] = gen.uniform01() >= double(p) ? scale : T(0);
  Array<T> y = x.value() * keep_scaled;
  return make_result<T>("dropout", std::move(y), {x}, [keep_scaled = std::move(keep_scaled)](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(out.grad * keep_scaled), "dropout");
  }, ValueUse::nothing());
}

#define INSTANTIATE(T)                                                                          \
  template Tensor<T> layer_norm<T>(const Tensor<T>&, const Tensor<T>&, const Tensor<T>&, T);    \
  template Tensor<T> dropout<T>(const Tensor<T>&, T, Generator&, bool);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
