// ops/elementwise.cpp: elementwise ops, forward and backward side by side.
//
// Binary ops broadcast as numpy does: a (..., 1, n) with b (m, n) -> (..., m, n).
// Their backward computes the gradient at the output's shape and then sums it
// back to each input's shape with detail::unbroadcast (the one shared helper).
// In every backward, out.grad is dL/d(output) and out.inputs[i] is input i.
#include <cmath>

#include <xtensor/xmath.hpp>

#include "headlab/core/task_marker.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

using detail::unbroadcast;

namespace {
template <typename T>
Shape checked_broadcast(const char* op, const Tensor<T>& a, const Tensor<T>& b) {
  return detail::broadcast_shapes(a.shape(), b.shape(), op);
}
template <typename T>
const Array<T>& in_value(const Node<T>& out, std::size_t i) {
  return out.inputs[i]->value;
}
template <typename T>
Shape in_shape(const Node<T>& out, std::size_t i) {
  return out.inputs[i]->shape();
}
}  // namespace

// c = a + b   a: A, b: B, c: broadcast(A, B)
// da = unbroadcast(dc, A), db = unbroadcast(dc, B)
template <typename T>
Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b) {
  checked_broadcast("add", a, b);
  Array<T> c = a.value() + b.value();
  return make_result<T>("add", std::move(c), {a, b}, [](Node<T>& out) {
    if (wants_grad(out, 0)) accumulate_grad(*out.inputs[0], unbroadcast(out.grad, in_shape(out, 0)), "add");
    if (wants_grad(out, 1))
      accumulate_grad(*out.inputs[1], unbroadcast(detail::pass_on_grad(out), in_shape(out, 1)), "add");
  }, ValueUse::nothing());
}

// c = a - b;  da = unbroadcast(dc, A), db = -unbroadcast(dc, B)
template <typename T>
Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b) {
  checked_broadcast("sub", a, b);
  Array<T> c = a.value() - b.value();
  return make_result<T>("sub", std::move(c), {a, b}, [](Node<T>& out) {
    if (wants_grad(out, 0)) accumulate_grad(*out.inputs[0], unbroadcast(out.grad, in_shape(out, 0)), "sub");
    if (wants_grad(out, 1)) {
      Array<T> g = -out.grad;
      accumulate_grad(*out.inputs[1], unbroadcast(g, in_shape(out, 1)), "sub");
    }
  }, ValueUse::nothing());
}

// c = a * b;  da = unbroadcast(dc * b, A), db = unbroadcast(dc * a, B)
template <typename T>
Tensor<T> mul(const Tensor<T>& a, const Tensor<T>& b) {
  checked_broadcast("mul", a, b);
  Array<T> c = a.value() * b.value();
  return make_result<T>("mul", std::move(c), {a, b}, [](Node<T>& out) {
    // BEGIN TASK 0.3: mul backward with broadcasting
    HEADLAB_TASK("0.3");
    if (wants_grad(out, 0)) {
      Array<T> g = out.grad * in_value(out, 1);
      accumulate_grad(*out.inputs[0], unbroadcast(g, in_shape(out, 0)), "mul");
    }
    if (wants_grad(out, 1)) {
      Array<T> g = out.grad * in_value(out, 0);
      accumulate_grad(*out.inputs[1], unbroadcast(g, in_shape(out, 1)), "mul");
    }
    // END TASK 0.3
  });
}

// c = a / b;  da = unbroadcast(dc / b, A), db = unbroadcast(-dc * a / b^2, B)
template <typename T>
Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b) {
  checked_broadcast("div", a, b);
  Array<T> c = a.value() / b.value();
  return make_result<T>("div", std::move(c), {a, b}, [](Node<T>& out) {
    // BEGIN TASK 0.4: div backward with broadcasting
    HEADLAB_TASK("0.4");
    const Array<T>& bv = in_value(out, 1);
    if (wants_grad(out, 0)) {
      Array<T> g = out.grad / bv;
      accumulate_grad(*out.inputs[0], unbroadcast(g, in_shape(out, 0)), "div");
    }
    if (wants_grad(out, 1)) {
      // a / b^2 * b^0: reuse c = a / b, so -dc * c / b.
      Array<T> g = -out.grad * out.value / bv;
      accumulate_grad(*out.inputs[1], unbroadcast(g, in_shape(out, 1)), "div");
    }
    // END TASK 0.4
  });
}

// y = -x;  dx = -dy
template <typename T>
Tensor<T> neg(const Tensor<T>& x) {
  Array<T> y = -x.value();
  return make_result<T>("neg", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(-out.grad), "neg");
  });
}

// y = x + s;  dx = dy
template <typename T>
Tensor<T> add_scalar(const Tensor<T>& x, T s) {
  Array<T> y = x.value() + s;
  return make_result<T>("add_scalar", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(out.grad), "add_scalar");
  }, ValueUse::nothing());
}

// y = x * s;  dx = dy * s
template <typename T>
Tensor<T> mul_scalar(const Tensor<T>& x, T s) {
  Array<T> y = x.value() * s;
  return make_result<T>("mul_scalar", std::move(y), {x}, [s](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(out.grad * s), "mul_scalar");
  }, ValueUse::nothing());
}

// y = s - x;  dx = -dy
template <typename T>
Tensor<T> rsub_scalar(const Tensor<T>& x, T s) {
  Array<T> y = s - x.value();
  return make_result<T>("rsub_scalar", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(-out.grad), "rsub_scalar");
  });
}

// y = s / x;  dx = -dy * s / x^2 = -dy * y / x
template <typename T>
Tensor<T> rdiv_scalar(const Tensor<T>& x, T s) {
  Array<T> y = s / x.value();
  return make_result<T>("rdiv_scalar", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(-out.grad * out.value / in_value(out, 0)), "rdiv_scalar");
  });
}

// y = x^p;  dx = dy * p * x^(p-1)
template <typename T>
Tensor<T> pow(const Tensor<T>& x, T p) {
  Array<T> y = xt::pow(x.value(), p);
  return make_result<T>("pow", std::move(y), {x}, [p](Node<T>& out) {
    Array<T> g = out.grad * p * xt::pow(in_value(out, 0), p - T(1));
    accumulate_grad(*out.inputs[0], std::move(g), "pow");
  });
}

// y = exp(x);  dx = dy * y
template <typename T>
Tensor<T> exp(const Tensor<T>& x) {
  Array<T> y = xt::exp(x.value());
  return make_result<T>("exp", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(out.grad * out.value), "exp");
  });
}

// y = log(x);  dx = dy / x
template <typename T>
Tensor<T> log(const Tensor<T>& x) {
  Array<T> y = xt::log(x.value());
  return make_result<T>("log", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(out.grad / in_value(out, 0)), "log");
  });
}

// y = sqrt(x);  dx = dy / (2 y)
template <typename T>
Tensor<T> sqrt(const Tensor<T>& x) {
  Array<T> y = xt::sqrt(x.value());
  return make_result<T>("sqrt", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(out.grad / (T(2) * out.value)), "sqrt");
  });
}

// y = tanh(x);  dx = dy * (1 - y^2)   (keeps the output, not the input)
template <typename T>
Tensor<T> tanh(const Tensor<T>& x) {
  Array<T> y = xt::tanh(x.value());
  return make_result<T>("tanh", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(out.grad * (T(1) - out.value * out.value)), "tanh");
  });
}

// y = 1 / (1 + exp(-x));  dx = dy * y * (1 - y)
template <typename T>
Tensor<T> sigmoid(const Tensor<T>& x) {
  Array<T> y = T(1) / (T(1) + xt::exp(-x.value()));
  return make_result<T>("sigmoid", std::move(y), {x}, [](Node<T>& out) {
    accumulate_grad(*out.inputs[0], Array<T>(out.grad * out.value * (T(1) - out.value)), "sigmoid");
  }, ValueUse::own_output());
}

// y = max(x, 0);  dx = dy * [x > 0]
template <typename T>
Tensor<T> relu(const Tensor<T>& x) {
  Array<T> y = detail::empty_array<T>(x.shape());
  const T* xv = x.value().data();
  T* yv = y.data();
  parallel_for(y.size(), 1, [xv, yv](std::size_t b, std::size_t e) {  // elementwise: threads take blocks
    const T* __restrict in = xv;  // restrict locals: the loop vectorises (as in the backward below)
    T* __restrict o = yv;
    for (std::size_t i = b; i < e; ++i) o[i] = in[i] < T(0) ? T(0) : in[i];  // a NaN stays NaN
  });
  return make_result<T>("relu", std::move(y), {x}, [](Node<T>& out) {
    Array<T> g = detail::empty_array<T>(detail::shape_of(out.value));
    const T* yv = out.value.data();
    const T* dy = out.grad.data();
    T* dx = g.data();
    // Both loads unconditional and the pointers local: written as `yv[i] > 0 ? dy[i] : 0` with
    // captured pointers, the loop stayed scalar and branched on each element's sign (mispredicted
    // half the time: 14% of a copy-task step).
    parallel_for(g.size(), 1, [yv, dy, dx](std::size_t b, std::size_t e) {
      const T* __restrict y = yv;
      const T* __restrict d = dy;
      T* __restrict o = dx;
      for (std::size_t i = b; i < e; ++i) {
        const T grad = d[i];
        o[i] = y[i] > T(0) ? grad : T(0);
      }
    });
    accumulate_grad(*out.inputs[0], std::move(g), "relu");
  }, ValueUse::own_output());
}

// y = x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2
// dx = dy * (Phi(x) + x * phi(x)), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
template <typename T>
Tensor<T> gelu(const Tensor<T>& x) {
  const T inv_sqrt2 = T(0.70710678118654752440);
  Array<T> y = x.value() * (T(0.5) * (T(1) + xt::erf(x.value() * inv_sqrt2)));
  return make_result<T>("gelu", std::move(y), {x}, [inv_sqrt2](Node<T>& out) {
    const T inv_sqrt_2pi = T(0.39894228040143267794);
    const Array<T>& xv = in_value(out, 0);
    Array<T> g = out.grad * (T(0.5) * (T(1) + xt::erf(xv * inv_sqrt2)) +
                             xv * inv_sqrt_2pi * xt::exp(T(-0.5) * xv * xv));
    accumulate_grad(*out.inputs[0], std::move(g), "gelu");
  });
}

#define INSTANTIATE(T)                                                   \
  template Tensor<T> add<T>(const Tensor<T>&, const Tensor<T>&);         \
  template Tensor<T> sub<T>(const Tensor<T>&, const Tensor<T>&);         \
  template Tensor<T> mul<T>(const Tensor<T>&, const Tensor<T>&);         \
  template Tensor<T> div<T>(const Tensor<T>&, const Tensor<T>&);         \
  template Tensor<T> neg<T>(const Tensor<T>&);                           \
  template Tensor<T> add_scalar<T>(const Tensor<T>&, T);                 \
  template Tensor<T> mul_scalar<T>(const Tensor<T>&, T);                 \
  template Tensor<T> rsub_scalar<T>(const Tensor<T>&, T);                \
  template Tensor<T> rdiv_scalar<T>(const Tensor<T>&, T);                \
  template Tensor<T> pow<T>(const Tensor<T>&, T);                        \
  template Tensor<T> exp<T>(const Tensor<T>&);                           \
  template Tensor<T> log<T>(const Tensor<T>&);                           \
  template Tensor<T> sqrt<T>(const Tensor<T>&);                          \
  template Tensor<T> tanh<T>(const Tensor<T>&);                          \
  template Tensor<T> sigmoid<T>(const Tensor<T>&);                       \
  template Tensor<T> relu<T>(const Tensor<T>&);                          \
  template Tensor<T> gelu<T>(const Tensor<T>&);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
