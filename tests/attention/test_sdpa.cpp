// SDPA's semantics against a loop reference: position masks (causal, window, sinks), padding,
// GQA, L != S, fully masked rows, additive biases and bad shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <xtensor/xview.hpp>

#include "headlab/attention/attention.hpp"
#include "headlab/headlab.hpp"
#include "test_support.hpp"

namespace test_sdpa {

using namespace headlab;
using headlab::testing::max_diff;

namespace {

MaskArray mask_of(std::vector<int> v, const Shape& shape) {
  MaskArray m = MaskArray::from_shape(shape);
  for (std::size_t i = 0; i < v.size(); ++i) m.data()[i] = v[i] != 0;
  return m;
}

// Reference attention for one (batch, head): plain loops, no autograd.
Array<double> naive_attention(const Array<double>& q, const Array<double>& k, const Array<double>& v,
                              const MaskArray& hidden, double scale) {
  const std::size_t L = q.shape()[0], S = k.shape()[0], d = q.shape()[1], dv = v.shape()[1];
  Array<double> out = xt::zeros<double>({L, dv});
  for (std::size_t i = 0; i < L; ++i) {
    std::vector<double> w(S, 0.0);
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < S; ++j) {
      if (hidden(i, j)) continue;
      double s = 0;
      for (std::size_t c = 0; c < d; ++c) s += q(i, c) * k(j, c);
      w[j] = s * scale;
      m = std::max(m, w[j]);
    }
    double z = 0;
    for (std::size_t j = 0; j < S; ++j) z += hidden(i, j) ? 0.0 : std::exp(w[j] - m);
    for (std::size_t j = 0; j < S; ++j) {
      const double p = hidden(i, j) || z == 0 ? 0.0 : std::exp(w[j] - m) / z;
      for (std::size_t c = 0; c < dv; ++c) out(i, c) += p * v(j, c);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("sdpa: position mask pins causal (L != S), window of W keys including itself, and sinks") {
  // Queries are the last 2 of 5 positions: query 0 is position 3, query 1 is position 4.
  const MaskArray causal = position_mask({3, 4}, {0, 1, 2, 3, 4}, true, 0, 0);
  CHECK(causal == mask_of({0, 0, 0, 0, 1, 0, 0, 0, 0, 0}, {2, 5}));
  // Window 3: position 4 sees 2, 3, 4 (three keys including itself); sink 0 stays visible.
  const MaskArray window = position_mask({4}, {0, 1, 2, 3, 4}, true, 3, 0);
  CHECK(window == mask_of({1, 1, 0, 0, 0}, {1, 5}));
  const MaskArray sinks = position_mask({4}, {0, 1, 2, 3, 4}, true, 3, 1);
  CHECK(sinks == mask_of({0, 1, 0, 0, 0}, {1, 5}));
  // A sink never lets a query see the future.
  CHECK(position_mask({0}, {0, 1}, true, 1, 2) == mask_of({0, 1}, {1, 2}));
}

TEST_CASE("sdpa: matches a loop reference with causal, padding, GQA and L != S") {
  Generator gen(1);
  const std::size_t B = 2, h = 4, hkv = 2, L = 3, S = 5, d = 4;
  TensorD q = uniform<double>({B, h, L, d}, -1, 1, gen), k = uniform<double>({B, hkv, S, d}, -1, 1, gen);
  TensorD v = uniform<double>({B, hkv, S, 3}, -1, 1, gen);
  SdpaOptions<double> opt;
  opt.causal = true;
  opt.key_padding_mask = mask_of({0, 0, 0, 0, 1, 1, 0, 0, 0, 0}, {B, S});
  opt.need_weights = true;
  const auto r = scaled_dot_product_attention(q, k, v, opt);
  REQUIRE(r.output.shape() == Shape{B, h, L, 3});
  REQUIRE(r.weights.shape() == Shape{B, h, L, S});
  const MaskArray pos = position_mask({2, 3, 4}, {0, 1, 2, 3, 4}, true, 0, 0);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t hh = 0; hh < h; ++hh) {
      MaskArray hidden = pos;
      for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j) hidden(i, j) = hidden(i, j) || (*opt.key_padding_mask)(b, j);
      const std::size_t kv = hh / (h / hkv);  // query head hh uses kv head floor(hh / g)
      Array<double> qh = xt::view(q.value(), b, hh), kh = xt::view(k.value(), b, kv), vh = xt::view(v.value(), b, kv);
      Array<double> got = xt::view(r.output.value(), b, hh);
      CHECK(max_diff(got, naive_attention(qh, kh, vh, hidden, 0.5)) < 1e-12);
    }
}

TEST_CASE("sdpa: a fully masked row gives zero weights and zero output, and zero gradient") {
  Generator gen(2);
  TensorD q = uniform<double>({1, 1, 2, 2}, -1, 1, gen, true), k = uniform<double>({1, 1, 3, 2}, -1, 1, gen, true);
  TensorD v = uniform<double>({1, 1, 3, 2}, -1, 1, gen, true);
  SdpaOptions<double> opt;
  opt.attn_mask = mask_of({1, 1, 1, 0, 1, 0}, {2, 3});  // row 0 sees nothing
  opt.need_weights = true;
  const auto r = scaled_dot_product_attention(q, k, v, opt);
  CHECK(xt::all(xt::isfinite(r.output.value())));
  for (std::size_t j = 0; j < 3; ++j) CHECK(r.weights.value()(0, 0, 0, j) == 0.0);
  CHECK(r.output.value()(0, 0, 0, 0) == 0.0);
  CHECK(r.output.value()(0, 0, 0, 1) == 0.0);
  sum(r.output).backward();
  CHECK(xt::all(xt::isfinite(q.grad())));
  CHECK(q.grad()(0, 0, 0, 0) == 0.0);
}

TEST_CASE("sdpa: additive bias, explicit scale and (B, h, L, S) masks broadcast") {
  Generator gen(3);
  TensorD q = uniform<double>({2, 2, 2, 2}, -1, 1, gen), k = uniform<double>({2, 2, 2, 2}, -1, 1, gen);
  TensorD v = uniform<double>({2, 2, 2, 2}, -1, 1, gen);
  SdpaOptions<double> a, b;
  a.attn_bias = Array<double>{{0.0, -1e9}, {0.0, 0.0}};  // a huge negative bias acts as a mask
  b.attn_mask = mask_of({0, 1, 0, 0}, {1, 1, 2, 2});
  a.scale = b.scale = 0.3;
  CHECK(max_diff(scaled_dot_product_attention(q, k, v, a).output.value(),
                     scaled_dot_product_attention(q, k, v, b).output.value()) < 1e-12);
}

TEST_CASE("sdpa: bad shapes name the op and the shapes") {
  TensorD q = zeros<double>({1, 4, 2, 3}), k = zeros<double>({1, 3, 2, 3}), v = zeros<double>({1, 3, 2, 3});
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, k, v), doctest::Contains("kv heads must divide"), ShapeError);
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, zeros<double>({1, 4, 2, 5}), zeros<double>({1, 4, 2, 3})),
                       doctest::Contains("[1, 4, 2, 5]"), ShapeError);
  SdpaOptions<double> opt;
  opt.key_padding_mask = MaskArray::from_shape({1, 7});
  CHECK_THROWS_WITH_AS(scaled_dot_product_attention(q, zeros<double>({1, 4, 2, 3}), zeros<double>({1, 4, 2, 3}), opt),
                       doctest::Contains("key_padding_mask of shape [1, 7]"), ShapeError);
}
}  // namespace test_sdpa
