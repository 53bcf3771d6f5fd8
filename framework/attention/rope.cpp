// attention/rope.cpp: rotary position embedding (RoPE), rotate-half form.
//
//   x (..., T, d), d even, halves x1 = x[..., :d/2], x2 = x[..., d/2:]
//   theta_{t,i} = positions[t] * base^(-2i/d),  i in [0, d/2)
//   y1 = x1 cos(theta) - x2 sin(theta),  y2 = x2 cos(theta) + x1 sin(theta)
// The map is a rotation, so its backward is the rotation by -theta:
//   dx1 = dy1 cos + dy2 sin,  dx2 = dy2 cos - dy1 sin
#include <cmath>

#include "headlab/attention/attention.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {
namespace {

// Rotates every (T, d) slice of `src` into `dst` by sign * theta.
template <typename T>
void rotate(const T* src, T* dst, std::size_t slices, std::size_t len, std::size_t d,
            const std::vector<double>& cos_t, const std::vector<double>& sin_t, double sign) {
  const std::size_t half = d / 2;
  for (std::size_t s = 0; s < slices; ++s) {
    for (std::size_t t = 0; t < len; ++t) {
      const T* x = src + (s * len + t) * d;
      T* y = dst + (s * len + t) * d;
      for (std::size_t i = 0; i < half; ++i) {
        const T c = static_cast<T>(cos_t[t * half + i]), sn = static_cast<T>(sign * sin_t[t * half + i]);
        const T x1 = x[i], x2 = x[i + half];
        y[i] = x1 * c - x2 * sn;
        y[i + half] = x2 * c + x1 * sn;
      }
    }
  }
}

}  // namespace

template <typename T>
Tensor<T> rope(const Tensor<T>& x, const std::vector<std::int64_t>& positions, double base) {
  const Shape xs = x.shape();
  if (xs.size() < 2 || xs.back() % 2 != 0 || xs[xs.size() - 2] != positions.size()) {
    throw ShapeError("rope: expects x (..., T, d) with d even and T = " + std::to_string(positions.size()) +
                     " positions, got " + shape_str(xs));
  }
  const std::size_t d = xs.back(), len = positions.size(), half = d / 2;
  const std::size_t slices = len && d ? x.numel() / (len * d) : 0;
  std::vector<double> cos_t(len * half), sin_t(len * half);
  for (std::size_t t = 0; t < len; ++t)
    for (std::size_t i = 0; i < half; ++i) {
      const double theta = static_cast<double>(positions[t]) * std::pow(base, -2.0 * static_cast<double>(i) / d);
      cos_t[t * half + i] = std::cos(theta);
      sin_t[t * half + i] = std::sin(theta);
    }
  Array<T> y = detail::empty_array<T>(xs);
  rotate(x.value().data(), y.data(), slices, len, d, cos_t, sin_t, 1.0);
  return make_result<T>("rope", std::move(y), {x}, [slices, len, d, cos_t, sin_t](Node<T>& out) {
    Array<T> g = detail::empty_array<T>(detail::shape_of(out.grad));
    rotate(out.grad.data(), g.data(), slices, len, d, cos_t, sin_t, -1.0);
    accumulate_grad(*out.inputs[0], std::move(g), "rope");
  }, ValueUse::nothing());
}

template Tensor<float> rope<float>(const Tensor<float>&, const std::vector<std::int64_t>&, double);
template Tensor<double> rope<double>(const Tensor<double>&, const std::vector<std::int64_t>&, double);

}  // namespace headlab
