// ops/reduce.cpp: sum, mean and max over axes, with keepdim.
//
// A reduction over a set of axes is done on raw buffers: every input element
// maps to one output element through "reduced strides" (0 on reduced axes),
// which is also exactly the broadcasting map used to send gradients back.
#include <algorithm>
#include <limits>

#include "headlab/ops/ops.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {
namespace {

struct Reduction {
  Shape in_shape;
  Shape kept_shape;  // in_shape with reduced axes set to 1 (the keepdim shape)
  Shape out_shape;   // kept_shape, or with those axes removed
  std::size_t count = 1;  // elements per reduced slice
};

Reduction plan(const Shape& in, const std::vector<std::ptrdiff_t>& axes, bool keepdim, const char* op) {
  Reduction r;
  r.in_shape = in;
  r.kept_shape = in;
  const std::vector<std::size_t> reduced = detail::normalize_axes(axes, in.size(), op, in);
  for (std::size_t a : reduced) {
    r.count *= in[a];
    r.kept_shape[a] = 1;
  }
  if (keepdim) {
    r.out_shape = r.kept_shape;
  } else {
    for (std::size_t d = 0; d < in.size(); ++d) {
      if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) r.out_shape.push_back(in[d]);
    }
  }
  return r;
}

}  // namespace

// y = sum over axes of x   x: S, y: S without (or with size-1) reduced axes
// dx = broadcast of dy back to S
template <typename T>
Tensor<T> sum(const Tensor<T>& x, const Axes& axes, bool keepdim) {
  const Reduction r = plan(x.shape(), axes, keepdim, "sum");
  Array<T> y = xt::zeros<T>(r.kept_shape);
  const T* src = x.value().data();
  T* dst = y.data();
  detail::for_each_broadcast(r.kept_shape, r.in_shape, [&](std::size_t i, std::size_t o) { dst[o] += src[i]; });
  y.reshape(r.out_shape);
  return make_result<T>("sum", std::move(y), {x}, [r](Node<T>& out) {
    Array<T> g = detail::empty_array<T>(r.in_shape);
    const T* dy = out.grad.data();
    T* dx = g.data();
    detail::for_each_broadcast(r.kept_shape, r.in_shape, [&](std::size_t i, std::size_t o) { dx[i] = dy[o]; });
    accumulate_grad(*out.inputs[0], std::move(g), "sum");
  }, ValueUse::nothing());
}

// y = sum(x) / count;  dx = broadcast(dy) / count
template <typename T>
Tensor<T> mean(const Tensor<T>& x, const Axes& axes, bool keepdim) {
  const Reduction r = plan(x.shape(), axes, keepdim, "mean");
  if (r.count == 0) {
    throw ShapeError("mean: reducing an empty axis of shape " + shape_str(r.in_shape) + " has no mean");
  }
  const T inv = T(1) / static_cast<T>(r.count);
  Array<T> y = xt::zeros<T>(r.kept_shape);
  const T* src = x.value().data();
  T* dst = y.data();
  detail::for_each_broadcast(r.kept_shape, r.in_shape, [&](std::size_t i, std::size_t o) { dst[o] += src[i]; });
  for (std::size_t o = 0; o < y.size(); ++o) dst[o] *= inv;
  y.reshape(r.out_shape);
  return make_result<T>("mean", std::move(y), {x}, [r, inv](Node<T>& out) {
    Array<T> g = detail::empty_array<T>(r.in_shape);
    const T* dy = out.grad.data();
    T* dx = g.data();
    detail::for_each_broadcast(r.kept_shape, r.in_shape, [&](std::size_t i, std::size_t o) { dx[i] = dy[o] * inv; });
    accumulate_grad(*out.inputs[0], std::move(g), "mean");
  }, ValueUse::nothing());
}

// y = max over axes of x;  dx[i] = dy[o] if i is the first argmax of slice o, else 0
template <typename T>
Tensor<T> max(const Tensor<T>& x, const Axes& axes, bool keepdim) {
  const Reduction r = plan(x.shape(), axes, keepdim, "max");
  if (r.count == 0) {
    throw ShapeError("max: reducing an empty axis of shape " + shape_str(r.in_shape) + " has no maximum");
  }
  Array<T> y = detail::empty_array<T>(r.kept_shape);
  y.fill(-std::numeric_limits<T>::infinity());
  std::vector<std::size_t> argmax(y.size(), 0);
  std::vector<bool> seen(y.size(), false);
  const T* src = x.value().data();
  T* dst = y.data();
  detail::for_each_broadcast(r.kept_shape, r.in_shape, [&](std::size_t i, std::size_t o) {
    // Strict > keeps the first maximum; a NaN wins and stays (as in torch.max).
    const bool dst_is_nan = dst[o] != dst[o];
    if (!seen[o] || (!dst_is_nan && (src[i] > dst[o] || src[i] != src[i]))) {
      dst[o] = src[i];
      argmax[o] = i;
      seen[o] = true;
    }
  });
  y.reshape(r.out_shape);
  return make_result<T>("max", std::move(y), {x}, [r, argmax = std::move(argmax)](Node<T>& out) {
    Array<T> g = xt::zeros<T>(r.in_shape);
    for (std::size_t o = 0; o < argmax.size(); ++o) g.data()[argmax[o]] += out.grad.data()[o];
    accumulate_grad(*out.inputs[0], std::move(g), "max");
  });
}

#define INSTANTIATE(T)                                               \
  template Tensor<T> sum<T>(const Tensor<T>&, const Axes&, bool);    \
  template Tensor<T> mean<T>(const Tensor<T>&, const Axes&, bool);   \
  template Tensor<T> max<T>(const Tensor<T>&, const Axes&, bool);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
