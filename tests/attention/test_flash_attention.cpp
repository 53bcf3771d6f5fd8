// The tiled (flash) attention kernel against the composed SDPA: values and gradients in float32
// and float64, every mask it supports, GQA, partial blocks; gradcheck; the module's switch.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "headlab/attention/attention.hpp"
#include "headlab/core/gradcheck.hpp"
#include "headlab/ops/ops.hpp"
#include "test_support.hpp"
#include "headlab/core/random.hpp"

namespace test_flash_attention {

using namespace headlab;
using headlab::testing::max_diff;

namespace {

struct Case {
  std::string name;
  std::size_t B, h, hkv, L, S, d, dv;
  bool causal = false;
  std::size_t window = 0, sinks = 0;
  bool padding = false;
  std::size_t block = 3;
};

template <typename T>
SdpaOptions<T> options_of(const Case& c) {
  SdpaOptions<T> o;
  o.causal = c.causal;
  o.window = c.window;
  o.sinks = c.sinks;
  if (c.padding) {  // batch 0 hides its last two keys; the last batch hides every key
    MaskArray m = xt::zeros<bool>({c.B, c.S});
    for (std::size_t j = c.S - 2; j < c.S; ++j) m(0, j) = true;
    for (std::size_t j = 0; j < c.S; ++j) m(c.B - 1, j) = true;
    o.key_padding_mask = m;
  }
  return o;
}

const Case cases[] = {
    {"plain, L = S", 2, 2, 2, 7, 7, 4, 4},
    {"causal, L != S (bottom-right aligned)", 2, 2, 2, 5, 9, 4, 3, true},
    {"key padding with a fully hidden batch", 3, 2, 2, 6, 8, 4, 4, false, 0, 0, true},
    {"GQA, 4 query heads on 2 kv heads, causal", 2, 4, 2, 8, 8, 5, 4, true},
    {"multi-query, window 3 + 1 sink", 1, 4, 1, 10, 10, 4, 4, true, 3, 1},
    {"one block bigger than the sequence", 1, 2, 1, 4, 6, 3, 3, true, 0, 0, true, 64},
};

// Runs both paths on the same inputs and upstream gradient; returns the largest differences.
template <typename T>
void compare(const Case& c, double value_tol, double grad_tol) {
  Generator gen(7);
  Tensor<T> q = uniform<T>({c.B, c.h, c.L, c.d}, -1, 1, gen, true), k = uniform<T>({c.B, c.hkv, c.S, c.d}, -1, 1, gen, true),
            v = uniform<T>({c.B, c.hkv, c.S, c.dv}, -1, 1, gen, true);
  const Tensor<T> w = uniform<T>({c.B, c.h, c.L, c.dv}, -1, 1, gen);  // upstream gradient
  const SdpaOptions<T> o = options_of<T>(c);
  const Tensor<T> ref = scaled_dot_product_attention(q, k, v, o).output;
  sum(ref * w).backward();
  const Array<T> gq = q.grad(), gk = k.grad(), gv = v.grad();
  q.zero_grad();
  k.zero_grad();
  v.zero_grad();
  const Tensor<T> got = flash_attention(q, k, v, o, c.block).output;
  sum(got * w).backward();
  CAPTURE(c.name);
  CHECK(max_diff(got.value(), ref.value()) < value_tol);
  CHECK(max_diff(q.grad(), gq) < grad_tol);
  CHECK(max_diff(k.grad(), gk) < grad_tol);
  CHECK(max_diff(v.grad(), gv) < grad_tol);
}

}  // namespace

TEST_CASE("flash attention: equals the composed SDPA to 1e-5 in float32, values and gradients") {
  for (const Case& c : cases) compare<float>(c, 1e-5, 1e-5);
}

TEST_CASE("flash attention: equals the composed SDPA to 1e-12 in float64") {
  for (const Case& c : cases) compare<double>(c, 1e-12, 1e-12);
}

TEST_CASE("flash attention: float64 gradcheck with causal masks, padding, GQA and partial blocks") {
  for (const Case& c : cases) {
    Generator gen(3);
    const TensorD q = uniform<double>({c.B, c.h, c.L, c.d}, -1, 1, gen, true),
                  k = uniform<double>({c.B, c.hkv, c.S, c.d}, -1, 1, gen, true),
                  v = uniform<double>({c.B, c.hkv, c.S, c.dv}, -1, 1, gen, true);
    const SdpaOptions<double> o = options_of<double>(c);
    const GradcheckResult r = gradcheck(
        "flash_attention", [&](const std::vector<TensorD>& in) { return flash_attention(in[0], in[1], in[2], o, c.block).output; },
        {q, k, v});
    CAPTURE(c.name);
    CHECK_MESSAGE(r.ok, r.message);
  }
}

TEST_CASE("flash attention: a fully hidden row gives zeros, unsupported options and bad shapes are refused") {
  Generator gen(1);
  const TensorD q = uniform<double>({1, 1, 3, 2}, -1, 1, gen), k = uniform<double>({1, 1, 3, 2}, -1, 1, gen);
  SdpaOptions<double> o;
  o.key_padding_mask = MaskArray(xt::ones<bool>({std::size_t(1), std::size_t(3)}));
  CHECK(xt::all(xt::equal(flash_attention(q, k, k, o).output.value(), 0.0)));
  SdpaOptions<double> with_mask;
  with_mask.attn_mask = MaskArray(xt::zeros<bool>({std::size_t(3), std::size_t(3)}));
  CHECK_THROWS_AS(flash_attention(q, k, k, with_mask), ValueError);
  SdpaOptions<double> with_weights;
  with_weights.need_weights = true;
  CHECK_THROWS_AS(flash_attention(q, k, k, with_weights), ValueError);
  CHECK_THROWS_AS(flash_attention(q, uniform<double>({1, 1, 3, 3}, -1, 1, gen), k), ShapeError);
  CHECK_THROWS_AS(flash_attention(q, k, k, {}, 0), ValueError);
}

TEST_CASE("flash attention: MultiHeadAttention with flash = true matches the composed module") {
  Generator gen_a(5), gen_b(5);
  AttentionConfig c;
  c.d_model = 8;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.window = 3;
  c.sinks = 1;
  AttentionConfig cf = c;
  cf.flash = true;
  MultiHeadAttention<double> composed(c, gen_a), tiled(cf, gen_b);
  Generator gen(9);
  const TensorD x = uniform<double>({2, 6, 8}, -1, 1, gen);
  const TensorD a = composed.forward(x).output, b = tiled.forward(x).output;
  CHECK(max_diff(a.value(), b.value()) < 1e-12);
  sum(a * a).backward();
  sum(b * b).backward();
  CHECK(max_diff(composed.parameter("in_proj_weight").grad(), tiled.parameter("in_proj_weight").grad()) < 1e-12);
}
}  // namespace test_flash_attention
