// ops/norm.cpp: layer normalisation and dropout.
//
// layer_norm's formulas are written out below as a readable reference (simple xtensor over the
// rows); the op runs the fast kernels of ops/kernels/norm_kernels.cpp (SIMD row sums and dots)
// unless the kernel choice says otherwise (headlab/ops/kernel_choice.hpp).
#include <cmath>
#include <numeric>
#include <vector>

#include "headlab/core/random.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/core/task_marker.hpp"
#include "headlab/ops/kernel_choice.hpp"
#include "headlab/ops/ops.hpp"
#include "ops/kernels/norm_kernels.hpp"

namespace headlab {
namespace {

// Over the last axis (D), for each row of x (..., D):
//   mu = mean(x), var = mean((x - mu)^2), rstd = 1 / sqrt(var + eps)
//   xhat = (x - mu) * rstd,  y = xhat * weight + bias        weight, bias: (D) or null
// (rstd is kept as (..., 1): one per row, broadcasting over the row.)
template <typename T>
kernels::LayerNormForward<T> layer_norm_reference(const Array<T>& x, const Array<T>* weight, const Array<T>* bias,
                                                  T eps) {
  const std::size_t last = x.dimension() - 1;
  const Array<T> mu = xt::mean(x, {last}, xt::keep_dims);  // (..., 1)
  const Array<T> centred = x - mu;
  const Array<T> var = xt::mean(centred * centred, {last}, xt::keep_dims);
  kernels::LayerNormForward<T> f;
  f.rstd = T(1) / xt::sqrt(var + eps);
  f.xhat = centred * f.rstd;
  f.y = f.xhat;
  if (weight) f.y = f.y * *weight;
  if (bias) f.y = f.y + *bias;
  return f;
}

// Task 3.1. dy = dL/dy (..., D); xhat and rstd are what the forward computed (the formulas above);
// weight is (D), or null when the layer has none. Returns dL/dx (..., D), dL/dweight (D) and
// dL/dbias (D) (the op uses the last two only when the layer has them). With dxhat = dy * weight
// (dy without a weight), per row and with means over the row:
//   dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//   dweight = sum over rows of dy * xhat,  dbias = sum over rows of dy
// What the backward may read: x itself is not kept (nor given here), xhat and rstd are (the op's
// closure holds them); the op declares ValueUse::inputs_only for the weight, so the engine keeps
// the weight's value for this backward.
template <typename T>
kernels::LayerNormGrads<T> layer_norm_backward_reference(const Array<T>& dy, const Array<T>& xhat,
                                                         const Array<T>& rstd, const Array<T>* weight) {
  // BEGIN TASK 3.1: layer norm backward
  HEADLAB_TASK("3.1");
  const std::size_t last = dy.dimension() - 1;
  const Array<T> dxhat = weight ? Array<T>(dy * *weight) : dy;
  const Array<T> mean_dxhat = xt::mean(dxhat, {last}, xt::keep_dims);                  // (..., 1)
  const Array<T> mean_dxhat_xhat = xt::mean(dxhat * xhat, {last}, xt::keep_dims);      // (..., 1)
  std::vector<std::size_t> row_axes(last);                                               // every axis but the last
  std::iota(row_axes.begin(), row_axes.end(), std::size_t(0));
  kernels::LayerNormGrads<T> g;
  g.dx = rstd * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat);
  g.dweight = xt::sum(dy * xhat, row_axes);
  g.dbias = xt::sum(dy, row_axes);
  return g;
  // END TASK 3.1
}

}  // namespace

template <typename T>
Tensor<T> layer_norm(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias, T eps) {
  const Shape xs = x.shape();
  if (xs.empty()) throw ShapeError("layer_norm: input must have at least 1 dim, got " + shape_str(xs));
  const std::size_t D = xs.back();
  for (const Tensor<T>* p : {&weight, &bias}) {
    if (p->defined() && p->shape() != Shape{D}) {
      throw ShapeError("layer_norm: " + std::string(p == &weight ? "weight" : "bias") + " of shape " +
                       shape_str(p->shape()) + " does not match the last dim of input " + shape_str(xs));
    }
  }
  const bool has_w = weight.defined(), has_b = bias.defined();
  kernels::LayerNormForward<T> f =
      detail::run_reference()
          ? layer_norm_reference(x.value(), has_w ? &weight.value() : nullptr, has_b ? &bias.value() : nullptr, eps)
          : kernels::layer_norm_forward(x.value(), has_w ? weight.value().data() : nullptr,
                                        has_b ? bias.value().data() : nullptr, eps);
  std::vector<Tensor<T>> inputs{x};
  if (has_w) inputs.push_back(weight);
  if (has_b) inputs.push_back(bias);
  return make_result<T>(
      "layer_norm", std::move(f.y), inputs,
      [has_w, has_b, xhat = std::move(f.xhat), rstd = std::move(f.rstd)](Node<T>& out) {
        // out.grad is dL/dy; xhat and rstd come with this closure; the weight's value is kept (ValueUse below).
        const Array<T>* w = has_w ? &out.inputs[1]->value : nullptr;
        const std::size_t wi = 1, bi = has_w ? 2 : 1;
        const bool want_dw = has_w && wants_grad(out, wi), want_db = has_b && wants_grad(out, bi);
        kernels::LayerNormGrads<T> g =
            detail::run_task_region("3.1")
                ? layer_norm_backward_reference(out.grad, xhat, rstd, w)
                : kernels::layer_norm_backward(out.grad, xhat, rstd, w ? w->data() : nullptr, wants_grad(out, 0),
                                               want_dw, want_db);
        if (wants_grad(out, 0)) accumulate_grad(*out.inputs[0], std::move(g.dx), "layer_norm");
        if (want_dw) accumulate_grad(*out.inputs[wi], std::move(g.dweight), "layer_norm");
        if (want_db) accumulate_grad(*out.inputs[bi], std::move(g.dbias), "layer_norm");
      }, ValueUse::inputs_only(has_w ? 0b010 : 0));  // the weight; xhat and rstd are in the closure
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
