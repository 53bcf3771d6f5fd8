// ops/matmul.cpp: batched matrix product on cblas gemm.
//
//   a (..., n, k) @ b (..., k, m) -> c (..., n, m)
//   da = dc @ b^T   (..., n, k)    db = a^T @ dc   (..., k, m)
// Batch dims broadcast; where a batch of a (or b) is reused by several output
// batches, its gradient is the sum over them (gemm with beta = 1 accumulates).
// When b is a plain matrix (a weight), all of a's batches are one tall matrix:
// one gemm (n_total x k) @ (k x m) instead of a loop.
#include <algorithm>

#include "headlab/core/task_marker.hpp"
#include "headlab/ops/ops.hpp"
#include "ops/kernels/blas_gemm.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {
namespace {

using detail::gemm;  // blas_gemm.hpp

// The batch layout of one product: which matrix of a and of b feeds each output matrix.
struct MatmulPlan {
  Shape a_shape, b_shape, c_shape;
  std::size_t n = 0, k = 0, m = 0;
  bool b_is_matrix = false;        // b is 2-D: fold a's batches into its rows
  std::vector<std::size_t> a_of;   // per output batch: index of a's matrix
  std::vector<std::size_t> b_of;   // per output batch: index of b's matrix
};

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
  if (!p.b_is_matrix) {
    const std::size_t batches = detail::numel_of(batch);
    p.a_of.resize(batches);
    p.b_of.resize(batches);
    detail::for_each_broadcast(a_batch, batch, [&](std::size_t i, std::size_t j) { p.a_of[i] = j; });
    detail::for_each_broadcast(b_batch, batch, [&](std::size_t i, std::size_t j) { p.b_of[i] = j; });
  }
  return p;
}

}  // namespace

template <typename T>
Tensor<T> matmul(const Tensor<T>& a, const Tensor<T>& b) {
  const MatmulPlan p = plan_matmul(a.shape(), b.shape());
  // gemm with beta = 0 overwrites C, so it needs no zero-fill unless k == 0.
  Array<T> c = p.k > 0 ? detail::empty_array<T>(p.c_shape) : Array<T>(xt::zeros<T>(p.c_shape));
  const std::size_t nk = p.n * p.k, km = p.k * p.m, nm = p.n * p.m;
  if (p.n > 0 && p.m > 0 && p.k > 0) {
    if (p.b_is_matrix) {
      const std::size_t rows = detail::numel_of(p.a_shape) / std::max<std::size_t>(1, p.k);
      gemm(false, false, rows, p.m, p.k, a.value().data(), b.value().data(), T(0), c.data());
    } else {
      for (std::size_t i = 0; i < p.a_of.size(); ++i) {
        gemm(false, false, p.n, p.m, p.k, a.value().data() + p.a_of[i] * nk, b.value().data() + p.b_of[i] * km,
             T(0), c.data() + i * nm);
      }
    }
  }
  // Backward: the plan p says which matrix of a and of b fed each output matrix (a_of, b_of),
  // or that b is one matrix (b_is_matrix: a's batches are one tall matrix). Use gemm().
  return make_result<T>("matmul", std::move(c), {a, b}, [p](Node<T>& out) {
    // BEGIN TASK 0.5: matmul backward
    HEADLAB_TASK("0.5");
    if (p.n == 0 || p.m == 0 || p.k == 0) {
      if (wants_grad(out, 0)) accumulate_grad(*out.inputs[0], Array<T>(xt::zeros<T>(p.a_shape)), "matmul");
      if (wants_grad(out, 1)) accumulate_grad(*out.inputs[1], Array<T>(xt::zeros<T>(p.b_shape)), "matmul");
      return;
    }
    const T* A = out.inputs[0]->value.data();
    const T* B = out.inputs[1]->value.data();
    const T* dC = out.grad.data();
    const std::size_t nk = p.n * p.k, km = p.k * p.m, nm = p.n * p.m;
    if (wants_grad(out, 0)) {
      // Batched: several output batches may share one matrix of a, so accumulate (beta = 1) into zeros.
      Array<T> dA = p.b_is_matrix ? detail::empty_array<T>(p.a_shape) : Array<T>(xt::zeros<T>(p.a_shape));
      if (p.b_is_matrix) {  // dA (rows x k) = dC (rows x m) @ B^T
        gemm(false, true, dA.size() / p.k, p.k, p.m, dC, B, T(0), dA.data());
      } else {
        for (std::size_t i = 0; i < p.a_of.size(); ++i)
          gemm(false, true, p.n, p.k, p.m, dC + i * nm, B + p.b_of[i] * km, T(1), dA.data() + p.a_of[i] * nk);
      }
      accumulate_grad(*out.inputs[0], std::move(dA), "matmul");
    }
    if (wants_grad(out, 1)) {
      Array<T> dB = p.b_is_matrix ? detail::empty_array<T>(p.b_shape) : Array<T>(xt::zeros<T>(p.b_shape));
      if (p.b_is_matrix) {  // dB (k x m) = A^T (k x rows) @ dC (rows x m)
        gemm(true, false, p.k, p.m, detail::numel_of(p.a_shape) / p.k, A, dC, T(0), dB.data());
      } else {
        for (std::size_t i = 0; i < p.a_of.size(); ++i)
          gemm(true, false, p.k, p.m, p.n, A + p.a_of[i] * nk, dC + i * nm, T(1), dB.data() + p.b_of[i] * km);
      }
      accumulate_grad(*out.inputs[1], std::move(dB), "matmul");
    }
    // END TASK 0.5
  }, ValueUse::inputs_only(0b11));
}

// y = x W^T + b      x (..., in), W (out, in), b (out) or undefined -> y (..., out)
// dx = dy W,  dW = dy^T x (over all rows),  db = sum over rows of dy
// PyTorch's nn.Linear layout; one gemm with W transposed in place (no copy).
template <typename T>
Tensor<T> linear(const Tensor<T>& x, const Tensor<T>& weight, const Tensor<T>& bias) {
  const Shape xs = x.shape(), ws = weight.shape();
  if (ws.size() != 2 || xs.empty() || xs.back() != ws[1]) {
    throw ShapeError("linear: input " + shape_str(xs) + " does not match weight " + shape_str(ws) +
                     " (expects input (..., in) and weight (out, in))");
  }
  const std::size_t in = ws[1], out_features = ws[0];
  if (bias.defined() && bias.shape() != Shape{out_features}) {
    throw ShapeError("linear: bias " + shape_str(bias.shape()) + " does not match weight " + shape_str(ws));
  }
  const std::size_t rows = in ? x.numel() / in : detail::numel_of(Shape(xs.begin(), xs.end() - 1));
  Shape ys = xs;
  ys.back() = out_features;
  Array<T> y = detail::empty_array<T>(ys);
  T* py = y.data();
  if (bias.defined()) {
    for (std::size_t r = 0; r < rows; ++r) std::copy_n(bias.value().data(), out_features, py + r * out_features);
  } else {
    std::fill_n(py, y.size(), T(0));
  }
  if (rows && out_features && in) gemm(false, true, rows, out_features, in, x.value().data(), weight.value().data(), T(1), py);
  std::vector<Tensor<T>> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return make_result<T>("linear", std::move(y), inputs, [rows, in, out_features](Node<T>& node) {
    const T* dy = node.grad.data();
    const bool empty = rows == 0 || in == 0 || out_features == 0;
    if (wants_grad(node, 0)) {  // dx (rows x in) = dy (rows x out) @ W (out x in)
      Array<T> dx = empty ? Array<T>(xt::zeros<T>(node.inputs[0]->shape())) : detail::empty_array<T>(node.inputs[0]->shape());
      if (!empty) gemm(false, false, rows, in, out_features, dy, node.inputs[1]->value.data(), T(0), dx.data());
      accumulate_grad(*node.inputs[0], std::move(dx), "linear");
    }
    if (wants_grad(node, 1)) {  // dW (out x in) = dy^T (out x rows) @ x (rows x in)
      Array<T> dw = empty ? Array<T>(xt::zeros<T>(Shape{out_features, in})) : detail::empty_array<T>(Shape{out_features, in});
      if (!empty) gemm(true, false, out_features, in, rows, dy, node.inputs[0]->value.data(), T(0), dw.data());
      accumulate_grad(*node.inputs[1], std::move(dw), "linear");
    }
    if (node.inputs.size() == 3 && wants_grad(node, 2)) {  // db = sum over rows of dy
      Array<T> db = xt::zeros<T>(Shape{out_features});
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < out_features; ++o) db.data()[o] += dy[r * out_features + o];
      accumulate_grad(*node.inputs[2], std::move(db), "linear");
    }
  }, ValueUse::inputs_only(0b011));  // x and W, not the bias or the output
}

template Tensor<float> linear<float>(const Tensor<float>&, const Tensor<float>&, const Tensor<float>&);
template Tensor<double> linear<double>(const Tensor<double>&, const Tensor<double>&, const Tensor<double>&);
template Tensor<float> matmul<float>(const Tensor<float>&, const Tensor<float>&);
template Tensor<double> matmul<double>(const Tensor<double>&, const Tensor<double>&);

}  // namespace headlab
