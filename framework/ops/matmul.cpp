// ops/matmul.cpp: the batched matrix product and the linear layer.
//
//   a (..., n, k) @ b (..., k, m) -> c (..., n, m)
//   da = dc @ b^T   (..., n, k)    db = a^T @ dc   (..., k, m)
// Batch dims broadcast; where a batch of a (or b) is reused by several output
// batches, its gradient is the sum over them.
//
// Each formula is written out below as a readable reference (loops over rows and columns); the
// ops run the fast kernels of ops/kernels/matmul_kernels.cpp (cblas gemm, one call for all of a's
// batches when b is a plain matrix) unless the kernel choice says otherwise
// (headlab/ops/kernel_choice.hpp).
#include <algorithm>

#include "headlab/core/shape_utils.hpp"
#include "headlab/core/task_marker.hpp"
#include "headlab/ops/kernel_choice.hpp"
#include "headlab/ops/ops.hpp"
#include "ops/kernels/matmul_kernels.hpp"

namespace headlab {
namespace {

using kernels::MatmulPlan;

// The shapes of one product and, for each output matrix i (batch dims flattened), the matrix of a
// and of b that make it: c_i = a_{a_of[i]} @ b_{b_of[i]}.
MatmulPlan plan_matmul(const Shape& a, const Shape& b) {
  if (a.size() < 2 || b.size() < 2) {
    throw ShapeError("matmul: both operands need at least 2 dims, got " + shape_str(a) + " @ " + shape_str(b));
  }
  MatmulPlan p;
  p.a_shape = a;
  p.b_shape = b;
  p.n = a[a.size() - 2];
  p.k = a[a.size() - 1];
  p.m = b[b.size() - 1];
  if (b[b.size() - 2] != p.k) {
    throw ShapeError("matmul: inner dimensions differ (" + std::to_string(p.k) + " vs " +
                     std::to_string(b[b.size() - 2]) + ") in " + shape_str(a) + " @ " + shape_str(b));
  }
  const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  Shape batch;
  try {
    batch = detail::broadcast_shapes(a_batch, b_batch, "matmul");
  } catch (const ShapeError&) {
    throw ShapeError("matmul: batch dims do not broadcast in " + shape_str(a) + " @ " + shape_str(b));
  }
  p.c_shape = batch;
  p.c_shape.push_back(p.n);
  p.c_shape.push_back(p.m);
  p.b_is_matrix = b.size() == 2;
  const std::size_t batches = detail::numel_of(batch);
  p.a_of.resize(batches);
  p.b_of.resize(batches);
  detail::for_each_broadcast(a_batch, batch, [&](std::size_t i, std::size_t j) { p.a_of[i] = j; });
  detail::for_each_broadcast(b_batch, batch, [&](std::size_t i, std::size_t j) { p.b_of[i] = j; });
  return p;
}

// ---- matmul ----------------------------------------------------------------------------------

// c = a @ b: for every output matrix i, c_i[r][col] = sum_j A[r][j] B[j][col] with A = a_{a_of[i]}
// (n x k) and B = b_{b_of[i]} (k x m), all row-major: A[r][j] is A[r * k + j].
template <typename T>
Array<T> matmul_reference(const Array<T>& a, const Array<T>& b, const MatmulPlan& p) {
  const std::size_t n = p.n, k = p.k, m = p.m;
  Array<T> c = xt::zeros<T>(p.c_shape);
  for (std::size_t i = 0; i < p.a_of.size(); ++i) {
    const T* A = a.data() + p.a_of[i] * n * k;
    const T* B = b.data() + p.b_of[i] * k * m;
    T* C = c.data() + i * n * m;
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t col = 0; col < m; ++col)
        for (std::size_t j = 0; j < k; ++j) C[r * m + col] += A[r * k + j] * B[j * m + col];
  }
  return c;
}

// Task 0.5. a (..., n, k), b (..., k, m) and dc = dL/dc (..., n, m); returns dL/da and dL/db
// (a's and b's shapes). For every output matrix i, with A = a_{a_of[i]}, B = b_{b_of[i]} and
// dC = dc_i (the layout of matmul_reference above):
//   dA += dC @ B^T      dA[r][col] += sum_j dC[r][j] B[col][j]      (n x k)
//   dB += A^T @ dC      dB[r][col] += sum_j A[j][r] dC[j][col]      (k x m)
// "+=": a matrix of a (or b) that several outputs share gets the sum of their gradients.
// The backward may read a and b: the op declares ValueUse::inputs_only(0b11), so the engine keeps
// both inputs' values for it (c itself may already be freed).
template <typename T>
kernels::MatmulGrads<T> matmul_backward_reference(const Array<T>& a, const Array<T>& b, const Array<T>& dc,
                                                  const MatmulPlan& p) {
  // BEGIN TASK 0.5: matmul backward
  HEADLAB_TASK("0.5");
  const std::size_t n = p.n, k = p.k, m = p.m;
  kernels::MatmulGrads<T> g{xt::zeros<T>(p.a_shape), xt::zeros<T>(p.b_shape)};
  for (std::size_t i = 0; i < p.a_of.size(); ++i) {
    const T* A = a.data() + p.a_of[i] * n * k;
    const T* B = b.data() + p.b_of[i] * k * m;
    const T* dC = dc.data() + i * n * m;
    T* dA = g.da.data() + p.a_of[i] * n * k;
    T* dB = g.db.data() + p.b_of[i] * k * m;
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t col = 0; col < k; ++col)
        for (std::size_t j = 0; j < m; ++j) dA[r * k + col] += dC[r * m + j] * B[col * m + j];
    for (std::size_t r = 0; r < k; ++r)
      for (std::size_t col = 0; col < m; ++col)
        for (std::size_t j = 0; j < n; ++j) dB[r * m + col] += A[j * k + r] * dC[j * m + col];
  }
  return g;
  // END TASK 0.5
}

// ---- linear ----------------------------------------------------------------------------------

// y = x W^T + bias, row by row: y[r][o] = bias[o] + sum_i x[r][i] W[o][i]
//   x (rows, in), W (out, in), bias (out) or null -> y (rows, out)
template <typename T>
Array<T> linear_reference(const Array<T>& x, const Array<T>& weight, const T* bias, const Shape& y_shape) {
  const std::size_t in = weight.shape()[1], out = weight.shape()[0];
  const std::size_t rows = detail::numel_of(Shape(y_shape.begin(), y_shape.end() - 1));
  Array<T> y = xt::zeros<T>(y_shape);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      T s = bias ? bias[o] : T(0);
      for (std::size_t i = 0; i < in; ++i) s += x.data()[r * in + i] * weight.data()[o * in + i];
      y.data()[r * out + o] = s;
    }
  }
  return y;
}

// dx = dy W:      dx[r][i] = sum_o dy[r][o] W[o][i]
// dW = dy^T x:    dW[o][i] = sum_r dy[r][o] x[r][i]
// dbias = sum over rows of dy:  dbias[o] = sum_r dy[r][o]
template <typename T>
kernels::LinearGrads<T> linear_backward_reference(const Array<T>& x, const Array<T>& weight, const Array<T>& dy) {
  const std::size_t in = weight.shape()[1], out = weight.shape()[0];
  const std::size_t rows = detail::numel_of(Shape(dy.shape().begin(), dy.shape().end() - 1));
  kernels::LinearGrads<T> g{xt::zeros<T>(detail::shape_of(x)), xt::zeros<T>(Shape{out, in}), xt::zeros<T>(Shape{out})};
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o) {
      const T d = dy.data()[r * out + o];
      for (std::size_t i = 0; i < in; ++i) {
        g.dx.data()[r * in + i] += d * weight.data()[o * in + i];
        g.dweight.data()[o * in + i] += d * x.data()[r * in + i];
      }
      g.dbias.data()[o] += d;
    }
  }
  return g;
}

}  // namespace

template <typename T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b) {
  const MatmulPlan p = plan_matmul(a.shape(), b.shape());
  Array<T> c = detail::run_reference() ? matmul_reference(a.value(), b.value(), p)
                                       : kernels::matmul_forward(a.value(), b.value(), p);
  return make_result<T>("matmul", std::move(c), {a, b}, [p](Node<T>& out) {
    // out.inputs[0]->value is a, out.inputs[1]->value is b (both kept: ValueUse below); out.grad is dL/dc.
    const Array<T>& a_value = out.inputs[0]->value;
    const Array<T>& b_value = out.inputs[1]->value;
    kernels::MatmulGrads<T> g = detail::run_task_region("0.5")
                                    ? matmul_backward_reference(a_value, b_value, out.grad, p)
                                    : kernels::matmul_backward(a_value, b_value, out.grad, p, wants_grad(out, 0),
                                                               wants_grad(out, 1));
    if (wants_grad(out, 0)) accumulate_grad(*out.inputs[0], std::move(g.da), "matmul");
    if (wants_grad(out, 1)) accumulate_grad(*out.inputs[1], std::move(g.db), "matmul");
  }, ValueUse::inputs_only(0b11));
}

// y = x W^T + b      x (..., in), W (out, in), b (out) or undefined -> y (..., out)
// dx = dy W,  dW = dy^T x (over all rows),  db = sum over rows of dy
// PyTorch's nn.Linear layout.
template <typename T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias) {
  const Shape xs = x.shape(), ws = weight.shape();
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[1]) {
    throw ShapeError("linear: input " + shape_str(xs) + " does not match weight " + shape_str(ws) +
                     " (expects input (..., in) and weight (out, in))");
  }
  const std::size_t out_features = ws[0];
  if (bias.defined() && bias.shape() != Shape{out_features}) {
    throw ShapeError("linear: bias " + shape_str(bias.shape()) + " does not match weight " + shape_str(ws));
  }
  Shape ys = xs;
  ys.back() = out_features;
  const T* b = bias.defined() ? bias.value().data() : nullptr;
  Array<T> y = detail::run_reference() ? linear_reference(x.value(), weight.value(), b, ys)
                                       : kernels::linear_forward(x.value(), weight.value(), b, ys);
  std::vector<Tensor<T>> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result<T>("linear", std::move(y), inputs, [](Node<T>& node) {
    const bool has_bias = node.inputs.size() == 3;
    const Array<T>& x_value = node.inputs[0]->value;  // kept, with W: ValueUse below
    const Array<T>& w_value = node.inputs[1]->value;
    kernels::LinearGrads<T> g =
        detail::run_reference()
            ? linear_backward_reference(x_value, w_value, node.grad)
            : kernels::linear_backward(x_value, w_value, node.grad, wants_grad(node, 0), wants_grad(node, 1),
                                       has_bias && wants_grad(node, 2));
    if (wants_grad(node, 0)) accumulate_grad(*node.inputs[0], std::move(g.dx), "linear");
    if (wants_grad(node, 1)) accumulate_grad(*node.inputs[1], std::move(g.dweight), "linear");
    if (has_bias && wants_grad(node, 2)) accumulate_grad(*node.inputs[2], std::move(g.dbias), "linear");
  }, ValueUse::inputs_only(0b011));  // x and W, not the bias or the output
}

template Tensor<float> linear<float>(const Tensor<float>&, const Tensor<float>&, const Tensor<float>&);
template Tensor<double> linear<double>(const Tensor<double>&, const Tensor<double>&, const Tensor<double>&);
template Tensor<float> matmul<float>(const Tensor<float>&, const Tensor<float>&);
template Tensor<double> matmul<double>(const Tensor<double>&, const Tensor<double>&);

}  // namespace headlab
