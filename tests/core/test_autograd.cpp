// Autograd semantics: how gradients flow, accumulate and stop.
#include <doctest/doctest.h>

#include "headlab/headlab.hpp"

namespace test_autograd {

using namespace headlab;

namespace {
TensorD scalar(double v, bool requires_grad = true) { return from_data<double>({v}, {1}, requires_grad); }
double grad0(const TensorD& t) { return t.grad().data()[0]; }
}  // namespace

TEST_CASE("autograd: diamond graph sums both paths") {
  // x -> a = x^2, b = 3x -> y = a * b = 3 x^3;  dy/dx = 9 x^2
  TensorD x = scalar(2.0);
  TensorD a = x * x;
  TensorD b = x * 3.0;
  TensorD y = a * b;
  y.backward();
  CHECK(grad0(x) == doctest::Approx(9.0 * 4.0));
}

TEST_CASE("autograd: a tensor used several times in one op") {
  TensorD x = scalar(1.5);
  TensorD y = x + x + x;  // dy/dx = 3
  y.backward();
  CHECK(grad0(x) == doctest::Approx(3.0));
  TensorD z = scalar(1.5);
  TensorD w = z * z;  // dw/dz = 2z
  w.backward();
  CHECK(grad0(z) == doctest::Approx(3.0));
}

TEST_CASE("autograd: repeated backward accumulates into leaves") {
  TensorD x = scalar(2.0);
  TensorD y = x * x;  // 2x = 4
  y.backward(/*retain_graph=*/true);
  CHECK(grad0(x) == doctest::Approx(4.0));
  y.backward();
  CHECK(grad0(x) == doctest::Approx(8.0));
  // A second, separately built graph also accumulates.
  TensorD y2 = x * 5.0;
  y2.backward();
  CHECK(grad0(x) == doctest::Approx(13.0));
  x.zero_grad();
  CHECK_FALSE(x.has_grad());
  CHECK_THROWS_AS(x.grad(), AutogradError);
}

TEST_CASE("autograd: the graph is released after backward unless retained") {
  TensorD x = scalar(2.0);
  TensorD h = x * x;
  TensorD y = h * 3.0;
  y.backward();
  CHECK(h.node()->inputs.empty());
  CHECK_FALSE(static_cast<bool>(h.node()->backward_fn));
  CHECK_THROWS_AS(y.backward(), AutogradError);  // second pass through a freed graph

  TensorD x2 = scalar(2.0);
  TensorD h2 = x2 * x2;
  TensorD y2 = h2 * 3.0;
  y2.backward(/*retain_graph=*/true);
  CHECK(h2.node()->inputs.size() == 2);
}

TEST_CASE("autograd: non-leaf gradients are dropped unless retain_grad") {
  TensorD x = scalar(2.0);
  TensorD h = x * x;
  TensorD kept = (x * 4.0).retain_grad();
  TensorD y = h + kept;
  y.backward();
  CHECK_FALSE(h.has_grad());
  CHECK(grad0(kept) == doctest::Approx(1.0));
  CHECK(grad0(x) == doctest::Approx(2.0 * 2.0 + 4.0));
}

TEST_CASE("autograd: no-grad scope records nothing") {
  TensorD x = scalar(2.0);
  {
    NoGradGuard guard;
    CHECK_FALSE(grad_enabled());
    TensorD y = x * x;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.node()->inputs.empty());
    CHECK_THROWS_AS(y.backward(), AutogradError);
    {
      NoGradGuard nested;
    }
    CHECK_FALSE(grad_enabled());  // the nested guard restores "disabled"
  }
  CHECK(grad_enabled());
  TensorD z = x * x;
  CHECK(z.requires_grad());
}

TEST_CASE("autograd: detach stops gradients") {
  TensorD x = scalar(3.0);
  TensorD y = x * x.detach();  // treated as x * const: dy/dx = 3, not 6
  y.backward();
  CHECK(grad0(x) == doctest::Approx(3.0));
  CHECK_FALSE(x.detach().requires_grad());
}

TEST_CASE("autograd: requires_grad propagates from any input") {
  TensorD c = scalar(1.0, false);
  TensorD x = scalar(2.0, true);
  CHECK_FALSE((c * c).requires_grad());
  CHECK((c * x).requires_grad());
  TensorD y = c * x;
  y.backward();
  CHECK_FALSE(c.has_grad());
  CHECK(grad0(x) == doctest::Approx(1.0));
  CHECK_THROWS_AS((x * 2.0).set_requires_grad(false), AutogradError);  // non-leaf
}

TEST_CASE("autograd: backward needs a one-element output or an explicit upstream gradient") {
  Generator gen(1);
  TensorD x = uniform<double>({2, 3}, -1, 1, gen, true);
  TensorD y = x * 2.0;
  CHECK_THROWS_AS(y.backward(), AutogradError);
  CHECK_THROWS_AS(y.backward(xt::ones<double>({3, 2})), ShapeError);
  Array<double> up = {{1, 2, 3}, {4, 5, 6}};
  y.backward(up);
  CHECK(x.grad()(1, 2) == doctest::Approx(12.0));
}

TEST_CASE("autograd: a 100 000-node chain neither overflows backward nor destruction") {
  const int depth = 100000;
  TensorD x = scalar(0.0);
  {
    TensorD y = x;
    for (int i = 0; i < depth; ++i) y = y + 1.0;
    CHECK(y.item() == doctest::Approx(depth));
    y.backward();
    CHECK(grad0(x) == doctest::Approx(1.0));
  }
  {
    // Dropped without backward: the destructor must free the chain iteratively.
    TensorD y = x;
    for (int i = 0; i < depth; ++i) y = y * 1.0;
    CHECK(y.node()->inputs.size() == 1);
  }
  CHECK(x.defined());
}

TEST_CASE("autograd: float32 and float64 run the same op code") {
  TensorF xf = from_data<float>({0.5f, -1.0f}, {2}, true);
  TensorD xd = from_data<double>({0.5, -1.0}, {2}, true);
  sum(tanh(xf) * xf).backward();
  sum(tanh(xd) * xd).backward();
  for (std::size_t i = 0; i < 2; ++i) CHECK(xf.grad()(i) == doctest::Approx(xd.grad()(i)).epsilon(1e-6));
}

TEST_CASE("graphviz: DOT names every op with its shape") {
  Generator gen(1);
  TensorD x = uniform<double>({4, 3}, -1, 1, gen, true);
  TensorD w = uniform<double>({3, 2}, -1, 1, gen, true);
  TensorD loss = mean(relu(matmul(x, w)));
  const std::string dot = to_dot(loss);
  CHECK(dot.rfind("digraph", 0) == 0);
  for (const char* s : {"matmul | [4, 2]", "relu | [4, 2]", "mean | []", "leaf | [4, 3]", "leaf | [3, 2]"}) {
    CHECK_MESSAGE(dot.find(s) != std::string::npos, "missing '" << s << "' in\n" << dot);
  }
  std::size_t edges = 0;
  for (std::size_t p = dot.find("->"); p != std::string::npos; p = dot.find("->", p + 2)) ++edges;
  CHECK(edges == 4);  // x->matmul, w->matmul, matmul->relu, relu->mean
}

TEST_CASE("autograd: values nobody can reach are freed during the forward pass, values a backward reads are kept") {
  TensorD x = from_data<double>({1, -2, 3, -4, 5, -6}, {3, 2}, true);
  TensorD w = from_data<double>({0.5, -1, 2, 1, 0, -0.5}, {2, 3}, true);
  // h = relu(x * 2) reshaped; y = sum(linear(h, w)): mul_scalar's and the reshape's outputs are
  // read by no backward and held by no handle; relu keeps its output (its backward reads it),
  // and the reshape's output is linear's input x (linear's backward reads it for dW).
  TensorD y = sum(linear(reshape(relu(x * 2.0), {2, 3}), w, TensorD()));
  const auto& lin = y.node()->inputs[0];
  const auto& reshaped = lin->inputs[0];
  const auto& relu_out = reshaped->inputs[0];
  const auto& doubled = relu_out->inputs[0];
  CHECK(lin->op == "linear");
  CHECK(lin->value_freed);             // sum reads nothing of its input
  CHECK_FALSE(reshaped->value_freed);  // linear reads its input
  CHECK_FALSE(relu_out->value_freed);  // relu reads its own output
  CHECK(doubled->value_freed);         // relu does not read its input
  CHECK(doubled->shape() == Shape{3, 2});  // the shape stays
  CHECK_THROWS_AS(TensorD::from_node(doubled).value(), AutogradError);
  y.backward();
  // d/dx sum(relu(2x) W^T) = 2 [x > 0] * colsum(W), element i of x landing in column i % 3
  const double colsum[3] = {1.5, -1, 1.5};
  for (std::size_t i = 0; i < 6; ++i) {
    const double expected = x.value().data()[i] > 0 ? 2 * colsum[i % 3] : 0.0;
    CHECK(x.grad().data()[i] == doctest::Approx(expected));
  }
}

TEST_CASE("autograd: a value stays while a handle holds it") {
  TensorD x = from_data<double>({1, 2, 3, 4}, {2, 2}, true);
  TensorD kept = reshape(x * 3.0, {4});
  TensorD y = sum(kept);
  CHECK_FALSE(kept.node()->value_freed);
  CHECK(kept.value()(3) == doctest::Approx(12.0));
  CHECK(y.node()->inputs[0]->inputs[0]->value_freed);  // x * 3: its only handle was a temporary
  y.backward();
  CHECK(x.grad()(1, 1) == doctest::Approx(3.0));
}
}  // namespace test_autograd
