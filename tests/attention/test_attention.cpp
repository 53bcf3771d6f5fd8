// Attention: the module in every variant (float64 gradcheck), the KV cache against full
// recomputation, cost accounting, taps, bad configs, RoPE (SDPA itself: test_sdpa.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <xtensor/xnorm.hpp>
#include <xtensor/xview.hpp>

#include "headlab/attention/attention.hpp"
#include "headlab/headlab.hpp"
#include "test_support.hpp"

namespace test_attention {

using namespace headlab;
using headlab::testing::max_diff;


namespace {

struct Variant {
  std::string name;
  AttentionConfig config;
  bool causal = false;
  bool cross = false;
  bool head_mask = false;
};

std::vector<Variant> variants() {
  auto base = [] {
    AttentionConfig c;
    c.d_model = 8;
    c.num_heads = 2;
    return c;
  };
  std::vector<Variant> v;
  v.push_back({"mha", base()});
  v.push_back({"mha causal", base(), true});
  v.push_back({"cross", base(), false, true});
  { auto c = base(); c.num_heads = 4; c.num_kv_heads = 2; v.push_back({"gqa", c, true}); }
  { auto c = base(); c.num_heads = 4; c.num_kv_heads = 1; v.push_back({"mqa", c, true}); }
  { auto c = base(); c.num_heads = 4; c.num_kv_heads = 2; v.push_back({"gqa cross", c, false, true}); }
  { auto c = base(); c.head_dim = 3; v.push_back({"head_dim 3", c}); }
  { auto c = base(); c.gate = GateKind::headwise; v.push_back({"gate headwise", c, true}); }
  { auto c = base(); c.gate = GateKind::elementwise; c.gate_bias = false; v.push_back({"gate elementwise", c}); }
  v.push_back({"head mask", base(), false, false, true});
  { auto c = base(); c.window = 2; c.sinks = 1; v.push_back({"window + sinks", c}); }
  { auto c = base(); c.rope = true; v.push_back({"rope", c, true}); }
  { auto c = base(); c.bias = false; v.push_back({"no bias", c}); }
  { auto c = base(); c.latent_dim = 3; v.push_back({"mla", c, true}); }
  { auto c = base(); c.latent_dim = 3; c.rope = true; c.rope_dim = 2; v.push_back({"mla + rope", c, true}); }
  { auto c = base(); c.num_heads = 4; c.num_kv_heads = 2; c.gate = GateKind::elementwise; c.rope = true;
    c.window = 3; c.sinks = 1; c.head_dim = 2; v.push_back({"gqa + gate + rope + window", c, true, false, true}); }
  return v;
}

}  // namespace

TEST_CASE("attention module: float64 gradcheck of input and every parameter, in every variant") {
  for (const Variant& var : variants()) {
    CAPTURE(var.name);
    Generator gen(7);
    MultiHeadAttention<double> mha(var.config, gen);
    const std::size_t B = 2, L = 4, S = 3;
    const TensorD x = uniform<double>({B, L, 8}, -1, 1, gen, true);
    const TensorD mem = uniform<double>({B, S, 8}, -1, 1, gen, true);
    const TensorD xi = uniform<double>({var.config.num_heads}, 0.5, 1.5, gen, true);
    const auto named = mha.named_parameters();
    // Backward against central differences on the module's own parameter values
    // (perturbed in place), the input(s) and the head mask.
    AttentionCall<double> call;
    call.causal = var.causal;
    if (var.head_mask) call.head_mask = xi;
    auto loss_of = [&]() {
      const TensorD y = var.cross ? mha.forward(x, mem, call).output : mha.forward(x, call).output;
      return y;
    };
    Generator wgen(99);
    const TensorD y0 = loss_of();
    const Array<double> w = uniform<double>(y0.shape(), -1, 1, wgen).value();
    mha.zero_grad();
    x.zero_grad();
    mem.zero_grad();
    xi.zero_grad();
    y0.backward(w);
    auto numeric = [&](Array<double>& target, std::size_t j) {
      NoGradGuard ng;
      const double eps = 1e-6, keep = target.data()[j];
      target.data()[j] = keep + eps;
      const double lp = xt::sum(loss_of().value() * w)();
      target.data()[j] = keep - eps;
      const double lm = xt::sum(loss_of().value() * w)();
      target.data()[j] = keep;
      return (lp - lm) / (2 * eps);
    };
    std::vector<std::pair<std::string, TensorD>> checked = named;
    checked.emplace_back("x", x);
    if (var.cross) checked.emplace_back("memory", mem);
    if (var.head_mask) checked.emplace_back("head_mask", xi);
    for (auto& named : checked) {  // not a structured binding: CAPTURE's lambda takes `name`
      const std::string& name = named.first;
      auto& t = named.second;
      CAPTURE(name);
      REQUIRE_MESSAGE(t.has_grad(), var.name << ": no gradient reached " << name);
      REQUIRE(t.grad().shape() == t.value().shape());
      const Array<double> analytic = t.grad();
      Array<double>& values = t.node()->value;
      double worst = 0;
      std::size_t worst_j = 0;
      for (std::size_t j = 0; j < values.size(); ++j) {
        const double err = std::abs(analytic.data()[j] - numeric(values, j));
        if (err > worst) worst = err, worst_j = j;
      }
      CHECK_MESSAGE(worst < 1e-6, var.name << ": " << name << " element " << worst_j << " |backward - numeric| = "
                                            << worst);
    }
  }
}

TEST_CASE("attention module: parameter names and shapes follow nn.MultiheadAttention") {
  Generator gen(1);
  AttentionConfig c;
  c.d_model = 16;
  c.num_heads = 4;
  MultiHeadAttention<float> mha(c, gen);
  const auto named = mha.named_parameters();
  REQUIRE(named.size() == 4);
  CHECK(named[0].first == "in_proj_weight");
  CHECK(named[0].second.shape() == Shape{48, 16});
  CHECK(named[1].first == "in_proj_bias");
  CHECK(named[2].first == "out_proj.weight");
  CHECK(named[2].second.shape() == Shape{16, 16});
  CHECK(named[3].first == "out_proj.bias");
  // PyTorch init: xavier_uniform bound sqrt(6 / (3D + D)) on in_proj_weight, zero biases.
  const double bound = std::sqrt(6.0 / 64.0);
  CHECK(xt::amax(xt::abs(named[0].second.value()))() <= bound);
  CHECK(xt::amax(xt::abs(named[0].second.value()))() > 0.8 * bound);
  CHECK(xt::all(xt::equal(named[1].second.value(), 0.0f)));
  CHECK(xt::all(xt::equal(named[3].second.value(), 0.0f)));
}

TEST_CASE("KV cache: one token at a time equals the full causal forward (float32, 1e-5)") {
  for (const Variant& var : variants()) {
    if (var.cross) continue;
    CAPTURE(var.name);
    Generator gen(11);
    AttentionConfig cfg = var.config;
    MultiHeadAttention<float> mha(cfg, gen);
    mha.eval();
    const std::size_t B = 2, T = 7;
    const TensorF x = uniform<float>({B, T, cfg.d_model}, -1, 1, gen);
    AttentionCall<float> call;
    call.causal = true;
    if (var.head_mask) call.head_mask = from_data<float>(std::vector<float>(cfg.num_heads, 0.5f), {cfg.num_heads});
    NoGradGuard no_grad;
    const Array<float> full = mha.forward(x, call).output.value();

    // Token by token.
    KVCache<float> cache;
    std::vector<TensorF> steps;
    for (std::size_t t = 0; t < T; ++t) steps.push_back(mha.forward(narrow(x, 1, t, 1), call, &cache).output);
    CHECK(max_diff(concat(steps, 1).value(), full) < 1e-5);
    CHECK(cache.length() == T);
    const std::size_t expected_stored = cfg.window ? std::min(T, cfg.window + cfg.sinks) : T;
    CHECK(cache.stored_tokens() == expected_stored);
    // The cache holds kv heads only (or the latent): its real storage matches the cost formula.
    CHECK(cache.elements_per_token() == attention_cost(cfg, T).kv_elements_per_token);
    CHECK(cache.stored_elements() == B * expected_stored * cache.elements_per_token());

    // A prefill chunk of 3, then single tokens.
    KVCache<float> chunked;
    std::vector<TensorF> parts{mha.forward(narrow(x, 1, 0, 3), call, &chunked).output};
    for (std::size_t t = 3; t < T; ++t) parts.push_back(mha.forward(narrow(x, 1, t, 1), call, &chunked).output);
    CHECK(max_diff(concat(parts, 1).value(), full) < 1e-5);
  }
}

TEST_CASE("KV cache: a sliding window keeps the sinks plus the newest W entries") {
  Generator gen(5);
  AttentionConfig c;
  c.d_model = 8;
  c.num_heads = 2;
  c.window = 3;
  c.sinks = 2;
  MultiHeadAttention<float> mha(c, gen);
  KVCache<float> cache;
  NoGradGuard ng;
  AttentionCall<float> call;
  call.causal = true;
  for (int t = 0; t < 9; ++t) mha.forward(uniform<float>({1, 1, 8}, -1, 1, gen), call, &cache);
  CHECK(cache.positions() == std::vector<std::int64_t>{0, 1, 6, 7, 8});
  CHECK(cache.first().shape() == Shape{1, 2, 5, 4});
}

TEST_CASE("attention cost: parameter formula matches the module, FLOPs match the paper") {
  for (const Variant& var : variants()) {
    CAPTURE(var.name);
    Generator gen(1);
    MultiHeadAttention<float> mha(var.config, gen);
    CHECK(attention_cost(var.config, 10).parameters == mha.parameter_count());
  }
  AttentionConfig base;
  base.d_model = 512;
  base.num_heads = 8;
  const AttentionCost cost = attention_cost(base, 100);
  CHECK(cost.parameters == 4 * 512 * 512 + 4 * 512);
  CHECK(cost.forward_flops == doctest::Approx(8.0 * 100 * 512 * 512 + 4.0 * 100 * 100 * 512));
  CHECK(cost.kv_elements_per_token == 2 * 8 * 64);
  base.num_kv_heads = 2;
  CHECK(attention_cost(base, 1).kv_elements_per_token == 2 * 2 * 64);
  base.num_kv_heads = 0;
  base.latent_dim = 64;
  base.rope = true;
  base.rope_dim = 16;
  CHECK(attention_cost(base, 1).kv_elements_per_token == 64 + 16);
}

TEST_CASE("attention module: taps hand out weights and gates without changing the output") {
  Generator gen(4);
  AttentionConfig c;
  c.d_model = 8;
  c.num_heads = 2;
  c.gate = GateKind::headwise;
  MultiHeadAttention<float> mha(c, gen);
  const TensorF x = uniform<float>({1, 3, 8}, -1, 1, gen);
  const Array<float> plain = mha.forward(x).output.value();
  mha.set_taps(true);
  const Array<float> tapped = mha.forward(x).output.value();
  CHECK(max_diff(plain, tapped) == 0.0);
  REQUIRE(mha.last_taps().weights.defined());
  CHECK(mha.last_taps().weights.shape() == Shape{1, 2, 3, 3});
  CHECK(mha.last_taps().gate.shape() == Shape{1, 2, 3, 1});
  const Array<float> row_sums = xt::sum(mha.last_taps().weights.value(), {3});
  CHECK(xt::allclose(row_sums, 1.0f));
}

TEST_CASE("attention module: dropout on weights only in training, seeded") {
  Generator gen(6);
  AttentionConfig c;
  c.d_model = 8;
  c.num_heads = 2;
  c.dropout = 0.5;
  MultiHeadAttention<float> mha(c, gen);
  const TensorF x = uniform<float>({2, 5, 8}, -1, 1, gen);
  Generator g1(1), g2(1);
  AttentionCall<float> call;
  call.generator = &g1;
  const Array<float> a = mha.forward(x, call).output.value();
  call.generator = &g2;
  const Array<float> b = mha.forward(x, call).output.value();
  CHECK(max_diff(a, b) == 0.0);
  mha.eval();
  const Array<float> e1 = mha.forward(x).output.value();
  mha.train();
  CHECK(max_diff(a, e1) > 1e-3);
  CHECK_THROWS_AS(mha.forward(x), ValueError);  // training dropout without a generator
}

TEST_CASE("attention config: invalid options are rejected with the field and the reason") {
  auto expect = [](AttentionConfig c, const char* text) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains(text), ValueError);
  };
  AttentionConfig c;
  c.d_model = 8;
  c.num_heads = 0;
  expect(c, "num_heads must be > 0");
  c.num_heads = 3;
  expect(c, "does not divide d_model");
  c.num_heads = 4;
  c.num_kv_heads = 3;
  expect(c, "num_kv_heads 3 does not divide num_heads 4");
  c.num_kv_heads = 0;
  c.sinks = 2;
  expect(c, "sinks need a sliding window");
  c.sinks = 0;
  c.latent_dim = 4;
  c.rope = true;
  expect(c, "MLA with rope needs an even rope_dim");
  c.rope = false;
  c.dropout = 1.0;
  expect(c, "dropout must be in [0, 1)");
  CHECK_THROWS_AS(parse_gate("sometimes"), ValueError);
  Generator gen(1);
  AttentionConfig ok;
  ok.d_model = 8;
  ok.num_heads = 2;
  MultiHeadAttention<float> mha(ok, gen);
  CHECK_THROWS_WITH_AS(mha.forward(zeros<float>({2, 3, 7})), doctest::Contains("[2, 3, 7]"), ShapeError);
  AttentionCall<float> call;
  call.head_mask = ones<float>({3});
  CHECK_THROWS_WITH_AS(mha.forward(zeros<float>({1, 3, 8}), call), doctest::Contains("head_mask [3]"), ShapeError);
}

TEST_CASE("rope: rotation preserves norms, is relative, and passes gradcheck") {
  Generator gen(8);
  const TensorD x = uniform<double>({2, 3, 4}, -1, 1, gen, true);
  const TensorD y = rope(x, {0, 5, 9});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t) {
      Array<double> xr = xt::view(x.value(), b, t), yr = xt::view(y.value(), b, t);
      CHECK(xt::norm_l2(xr)() == doctest::Approx(xt::norm_l2(yr)()));
    }
  // <rope(q, m), rope(k, n)> depends only on m - n.
  const TensorD q = uniform<double>({1, 4}, -1, 1, gen), k = uniform<double>({1, 4}, -1, 1, gen);
  const double a = xt::sum(rope(q, {7}).value() * rope(k, {3}).value())();
  const double b = xt::sum(rope(q, {14}).value() * rope(k, {10}).value())();
  CHECK(a == doctest::Approx(b).epsilon(1e-12));
  CHECK(rope(q, {0}).value() == q.value());
  const GradcheckResult r = gradcheck("rope", [](const std::vector<TensorD>& in) { return rope(in[0], {1, 2, 7}); }, {x});
  CHECK_MESSAGE(r.ok, r.message);
  CHECK_THROWS_AS(rope(zeros<double>({2, 3}), {0, 1, 2}), ShapeError);
}

TEST_CASE("attention: the largest logit per head over visible keys, by hand (GQA, masks)") {
  // q (1, 2, 2, 1), k (1, 1, 3, 1): both heads share the one kv head; scale 1 (given).
  headlab::Array<double> q = headlab::Array<double>::from_shape({1, 2, 2, 1});
  q(0, 0, 0, 0) = 1;  q(0, 0, 1, 0) = -2;  // head 0
  q(0, 1, 0, 0) = 3;  q(0, 1, 1, 0) = 0.5; // head 1
  headlab::Array<double> k = headlab::Array<double>::from_shape({1, 1, 3, 1});
  k(0, 0, 0, 0) = 1;  k(0, 0, 1, 0) = -4;  k(0, 0, 2, 0) = 10;
  // No mask: head 0 max(1 * 10, -2 * -4) = 10; head 1 max(3 * 10) = 30.
  headlab::Array<double> all = headlab::max_attention_logit(q, k, nullptr, nullptr, 1.0);
  CHECK(all(0) == 10);
  CHECK(all(1) == 30);
  // Key 2 hidden from both queries: head 0 max(1, -4, -2, 8) = 8; head 1 max(3, -12, 0.5, -2) = 3.
  headlab::MaskArray hidden = xt::zeros<bool>({std::size_t(2), std::size_t(3)});
  hidden(0, 2) = hidden(1, 2) = true;
  headlab::Array<double> masked = headlab::max_attention_logit(q, k, &hidden, nullptr, 1.0);
  CHECK(masked(0) == 8);
  CHECK(masked(1) == 3);
  // Key 1 padded as well: head 0 max(1, -2) = 1; the default scale 1 / sqrt(1) is the same.
  headlab::MaskArray padding = xt::zeros<bool>({std::size_t(1), std::size_t(3)});
  padding(0, 1) = true;
  CHECK(headlab::max_attention_logit(q, k, &hidden, &padding)(0) == 1);
  // Every key hidden: -inf; wrong shapes refused.
  headlab::MaskArray none = xt::ones<bool>({std::size_t(2), std::size_t(3)});
  CHECK(std::isinf(headlab::max_attention_logit(q, k, &none, nullptr)(1)));
  headlab::Array<double> k3 = headlab::Array<double>::from_shape({1, 3, 3, 1});
  CHECK_THROWS_AS(headlab::max_attention_logit(q, k3, nullptr, nullptr), headlab::ShapeError);
}
}  // namespace test_attention
