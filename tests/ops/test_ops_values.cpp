// Forward values and edge cases that gradcheck alone does not pin.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <xtensor-blas/xlinalg.hpp>

#include "headlab/headlab.hpp"

namespace test_ops_values {

using namespace headlab;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
MaskArray mask(std::vector<int> v, const Shape& shape) {
  MaskArray m = MaskArray::from_shape(shape);
  for (std::size_t i = 0; i < v.size(); ++i) m.data()[i] = v[i] != 0;
  return m;
}
}  // namespace

TEST_CASE("softmax: a fully masked row gives zero weights and zero gradient, no NaN") {
  Generator gen(1);
  TensorD x = uniform<double>({3, 4}, -1, 1, gen, true);
  const MaskArray m = mask({0, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1}, {3, 4});  // row 1 fully masked
  TensorD y = softmax(masked_fill(x, m, -kInf), -1);
  CHECK(xt::all(xt::isfinite(y.value())));
  for (std::size_t j = 0; j < 4; ++j) CHECK(y.value()(1, j) == 0.0);
  CHECK(xt::sum(xt::view(y.value(), 0, xt::all()))() == doctest::Approx(1.0));
  CHECK(y.value()(0, 1) == 0.0);
  y.backward(xt::ones<double>({3, 4}) * 0.3 + xt::eval(x.value()));
  CHECK(xt::all(xt::isfinite(x.grad())));
  for (std::size_t j = 0; j < 4; ++j) CHECK(x.grad()(1, j) == 0.0);

  TensorD x2 = uniform<double>({3, 4}, -1, 1, gen, true);
  TensorD l = log_softmax(masked_fill(x2, m, -kInf), -1);
  for (std::size_t j = 0; j < 4; ++j) CHECK(l.value()(1, j) == 0.0);
  CHECK(l.value()(0, 1) == -kInf);  // a masked key in a live row has log-probability -inf
}

TEST_CASE("softmax: large logits stay finite (max is subtracted)") {
  TensorF x = from_data<float>({1000.f, 1001.f, 999.f}, {1, 3});
  TensorF y = softmax(x, -1);
  CHECK(xt::all(xt::isfinite(y.value())));
  CHECK(y.value()(0, 1) == doctest::Approx(std::exp(1.0) / (1 + std::exp(1.0) + std::exp(-1.0))));
}

TEST_CASE("matmul: float32 2-D product equals xtensor-blas dot") {
  Generator gen(2);
  TensorF a = uniform<float>({17, 9}, -1, 1, gen), b = uniform<float>({9, 13}, -1, 1, gen);
  Array<float> ref = xt::linalg::dot(a.value(), b.value());
  CHECK(xt::allclose(matmul(a, b).value(), ref, 1e-5, 1e-6));
}

TEST_CASE("matmul: batched product equals a loop of 2-D products") {
  Generator gen(3);
  TensorD a = uniform<double>({2, 1, 3, 4}, -1, 1, gen), b = uniform<double>({3, 4, 5}, -1, 1, gen);
  TensorD c = matmul(a, b);
  REQUIRE(c.shape() == Shape{2, 3, 3, 5});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      Array<double> ai = xt::view(a.value(), i, 0), bj = xt::view(b.value(), j);
      Array<double> ref = xt::linalg::dot(ai, bj);
      Array<double> got = xt::view(c.value(), i, j);
      CHECK(xt::allclose(got, ref, 1e-12, 1e-12));
    }
}

TEST_CASE("cross_entropy: matches the formula, and all-ignored gives 0 not NaN") {
  TensorD logits = from_data<double>({1, 2, 3, 0, 0, 0}, {2, 3}, true);
  IndexArray y = {2, 0};
  const double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const double expected = ((lse0 - 3.0) + std::log(3.0)) / 2.0;
  CHECK(cross_entropy(logits, y).item() == doctest::Approx(expected));
  const double eps = 0.2;
  const double smooth0 = (1 - eps) * (lse0 - 3.0) + eps / 3 * (3 * lse0 - 6.0);
  const double smooth1 = std::log(3.0);  // uniform logits: every class costs log 3
  CHECK(cross_entropy(logits, y, -100, eps).item() == doctest::Approx((smooth0 + smooth1) / 2));
  IndexArray ignored = {-100, -100};
  TensorD loss = cross_entropy(logits, ignored);
  CHECK(loss.item() == 0.0);
  loss.backward();
  CHECK(xt::all(xt::equal(logits.grad(), 0.0)));
}

TEST_CASE("max: ties send the gradient to the first maximum only") {
  TensorD x = from_data<double>({1, 3, 3, 2}, {1, 4}, true);
  TensorD m = max(x, {1});
  CHECK(m.item() == 3.0);
  m.backward();
  CHECK(x.grad()(0, 1) == 1.0);
  CHECK(x.grad()(0, 2) == 0.0);
}

TEST_CASE("layer_norm: output rows have mean 0 and variance 1 before the affine part") {
  Generator gen(4);
  TensorD x = uniform<double>({3, 16}, -5, 5, gen);
  TensorD y = layer_norm(x, TensorD(), TensorD(), 0.0);
  for (std::size_t r = 0; r < 3; ++r) {
    Array<double> row = xt::view(y.value(), r);
    CHECK(xt::mean(row)() == doctest::Approx(0.0).epsilon(1e-12));
    CHECK(xt::variance(row)() == doctest::Approx(1.0));
  }
}

TEST_CASE("dropout: identity in eval mode, seeded masks, 1/(1-p) scaling") {
  Generator gen(5);
  TensorF x = ones<float>({10000}, true);
  CHECK(dropout(x, 0.5f, gen, false).node() == x.node());
  CHECK(dropout(x, 0.0f, gen, true).node() == x.node());
  Generator g1(11), g2(11);
  TensorF a = dropout(x, 0.25f, g1, true), b = dropout(x, 0.25f, g2, true);
  CHECK(xt::all(xt::equal(a.value(), b.value())));
  std::size_t dropped = 0;
  for (float v : a.value()) {
    CHECK((v == 0.0f || v == doctest::Approx(1.0f / 0.75f)));
    dropped += v == 0.0f;
  }
  CHECK(std::abs(static_cast<double>(dropped) / 10000 - 0.25) < 0.03);
  CHECK(xt::all(xt::equal(dropout(x, 1.0f, g1, true).value(), 0.0f)));
}

TEST_CASE("broadcasting: (2,1,4) + (3,1) has shape (2,3,4) and numpy values") {
  TensorD a = from_data<double>({0, 1, 2, 3, 10, 11, 12, 13}, {2, 1, 4});
  TensorD b = from_data<double>({100, 200, 300}, {3, 1});
  TensorD c = a + b;
  REQUIRE(c.shape() == Shape{2, 3, 4});
  CHECK(c.value()(1, 2, 3) == 313.0);
  CHECK(c.value()(0, 1, 0) == 200.0);
}
}  // namespace test_ops_values
