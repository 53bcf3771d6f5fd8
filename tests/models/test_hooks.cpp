// Hook points (headlab/nn/hooks.hpp): the names and shapes docs/circuits.md lists, a cache that holds
// what a plain forward computes, edits that change the forward, and nothing when no hooks are set.
#include <doctest/doctest.h>

#include <algorithm>

#include <xtensor/xview.hpp>

#include "headlab/core/random.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/ops/ops.hpp"
#include "test_support.hpp"

namespace test_hooks {

using namespace headlab;

namespace {

// A decoder-only model in double, d_model 8, 2 layers, weights N(0, 0.5^2) so that patterns are sharp.
TransformerConfig lm_config(bool norm_first, std::size_t heads, std::size_t kv_heads, GateKind gate) {
  TransformerConfig c;
  c.d_model = 8;
  c.ff_dim = 16;
  c.decoder_layers = 2;
  c.dropout = 0.0;
  c.norm_first = norm_first;
  c.attention.num_heads = heads;
  c.attention.num_kv_heads = kv_heads;
  c.attention.gate = gate;
  c.src_vocab = c.tgt_vocab = 11;
  c.max_len = 16;
  return c;
}

std::unique_ptr<DecoderOnlyLM<double>> sharp_lm(const TransformerConfig& c, std::uint64_t seed) {
  Generator gen(seed);
  auto m = std::make_unique<DecoderOnlyLM<double>>(c, gen);
  for (auto& [name, p] : m->named_parameters())
    for (auto& v : p.mutable_value()) v = 0.5 * gen.normal();
  m->eval();
  return m;
}

IndexArray some_ids(std::size_t B, std::size_t T, std::size_t vocab, std::uint64_t seed) {
  Generator gen(seed);
  IndexArray ids = IndexArray::from_shape({B, T});
  for (auto& v : ids) v = static_cast<std::int64_t>(gen.below(vocab));
  return ids;
}

// max |a - b| of two arrays (or expressions) of one shape; +infinity when a difference is not finite.
double max_abs_diff(const Array<double>& a, const Array<double>& b) { return headlab::testing::max_diff(a, b); }

}  // namespace

TEST_CASE("hooks: every point of a decoder-only model, named and shaped as documented") {
  const std::size_t B = 2, T = 5, D = 8;
  for (bool norm_first : {true, false}) {
    CAPTURE(norm_first);
    auto m = sharp_lm(lm_config(norm_first, 2, 1, GateKind::none), 3);  // GQA: 2 query heads, 1 kv head
    HookPoints<double> hooks;
    hooks.set_caching(true);
    m->set_hooks(&hooks);
    m->forward(some_ids(B, T, 11, 1), nullptr);
    std::vector<std::string> expected = {"hook_embed"};
    for (const std::string l : {"blocks.0.", "blocks.1."}) {
      for (const char* n : {"hook_resid_pre", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_pattern",
                            "attn.hook_z", "attn.hook_result", "hook_attn_out", "hook_resid_mid", "hook_mlp_out",
                            "hook_resid_post"})
        expected.push_back(l + n);
    }
    expected.push_back("ln_final.hook_normalized");
    CHECK(hooks.names_seen() == expected);
    auto shape = [&](const std::string& n) { return hooks.cached(n).shape(); };
    CHECK(shape("hook_embed") == Shape{B, T, D});
    CHECK(shape("blocks.1.attn.hook_q") == Shape{B, 2, T, 4});
    CHECK(shape("blocks.1.attn.hook_k") == Shape{B, 1, T, 4});
    CHECK(shape("blocks.1.attn.hook_v") == Shape{B, 1, T, 4});
    CHECK(shape("blocks.1.attn.hook_pattern") == Shape{B, 2, T, T});
    CHECK(shape("blocks.1.attn.hook_z") == Shape{B, 2, T, 4});
    CHECK(shape("blocks.1.attn.hook_result") == Shape{B, T, 2, D});
    for (const char* n : {"blocks.0.hook_resid_pre", "blocks.0.hook_attn_out", "blocks.0.hook_resid_mid",
                          "blocks.0.hook_mlp_out", "blocks.0.hook_resid_post", "ln_final.hook_normalized"})
      CHECK(shape(n) == Shape{B, T, D});
    CHECK_THROWS_WITH_AS(hooks.cached("blocks.9.hook_resid_pre"), doctest::Contains("blocks.9.hook_resid_pre"), ValueError);
  }
}

TEST_CASE("hooks: the cache holds what a plain forward computes") {
  const IndexArray ids = some_ids(2, 6, 11, 4);
  for (GateKind gate : {GateKind::none, GateKind::headwise}) {
    CAPTURE(gate_name(gate));
    auto m = sharp_lm(lm_config(true, 2, 0, gate), 5);
    for (std::size_t l = 0; l < 2; ++l) m->layer(l).set_taps(true), m->layer(l).self_attn.set_taps(true);
    const Array<double> plain = m->forward(ids, nullptr).value();  // no hooks: the reference
    std::vector<Array<double>> layer_out, weights;
    for (std::size_t l = 0; l < 2; ++l) {
      layer_out.push_back(m->layer(l).last_output().value());
      weights.push_back(m->layer(l).self_attn.last_taps().weights.value());
    }
    HookPoints<double> hooks;
    hooks.set_caching(true);
    m->set_hooks(&hooks);
    const Array<double> hooked = m->forward(ids, nullptr).value();
    // hook_result sums the heads' outputs in another order than the fused W_O: rounding only.
    CHECK(max_abs_diff(plain, hooked) < 1e-12);
    for (std::size_t l = 0; l < 2; ++l) {
      const std::string b = "blocks." + std::to_string(l) + ".";
      CHECK(max_abs_diff(hooks.cached(b + "hook_resid_post").value(), layer_out[l]) < 1e-12);
      CHECK(max_abs_diff(hooks.cached(b + "attn.hook_pattern").value(), weights[l]) < 1e-12);
      // Pre-LN: resid_mid = resid_pre + attn_out, resid_post = resid_mid + mlp_out, attn_out = sum_h result + b_O.
      const Array<double> pre = hooks.cached(b + "hook_resid_pre").value(), mid = hooks.cached(b + "hook_resid_mid").value();
      CHECK(max_abs_diff(pre + hooks.cached(b + "hook_attn_out").value(), mid) == 0.0);
      CHECK(max_abs_diff(mid + hooks.cached(b + "hook_mlp_out").value(), hooks.cached(b + "hook_resid_post").value()) == 0.0);
      const Array<double> heads_sum = xt::sum(hooks.cached(b + "attn.hook_result").value(), {2});
      const Array<double> bias = m->layer(l).self_attn.parameter("out_proj.bias").value();
      CHECK(max_abs_diff(heads_sum + bias, hooks.cached(b + "hook_attn_out").value()) < 1e-12);
    }
    CHECK(max_abs_diff(m->unembed().forward(hooks.cached("ln_final.hook_normalized")).value(), plain) < 1e-12);
  }
}

TEST_CASE("hooks: edits change the forward, per head and per position") {
  const IndexArray ids = some_ids(2, 6, 11, 6);
  auto m = sharp_lm(lm_config(true, 2, 0, GateKind::none), 7);
  HookPoints<double> hooks;
  m->set_hooks(&hooks);
  SUBCASE("zeroing head 1's z is the head mask (0 on head 1)") {
    hooks.set_edit("blocks.0.attn.hook_z", [](const Tensor<double>& z) {
      Array<double> v = z.value();
      xt::view(v, xt::all(), 1, xt::all(), xt::all()) = 0.0;
      return Tensor<double>(v);
    });
    const Array<double> edited = m->forward(ids, nullptr).value();
    hooks.clear_edits();
    m->layer(0).self_attn.set_head_mask(Tensor<double>(Array<double>{1.0, 0.0}));
    const Array<double> masked = m->forward(ids, nullptr).value();
    m->layer(0).self_attn.set_head_mask(Tensor<double>());
    const Array<double> plain = m->forward(ids, nullptr).value();
    CHECK(max_abs_diff(edited, masked) < 1e-12);
    CHECK(max_abs_diff(edited, plain) > 1e-3);
  }
  SUBCASE("a pattern edited to itself gives the same output; a changed pattern changes it") {
    const Array<double> plain = m->forward(ids, nullptr).value();
    hooks.set_edit("blocks.1.attn.hook_pattern", [](const Tensor<double>& p) { return Tensor<double>(p.value()); });
    CHECK(max_abs_diff(m->forward(ids, nullptr).value(), plain) < 1e-12);
    hooks.set_edit("blocks.1.attn.hook_pattern", [](const Tensor<double>& p) {  // every query reads key 0 only
      Array<double> v = xt::zeros<double>(p.shape());
      xt::view(v, xt::all(), xt::all(), xt::all(), 0) = 1.0;
      return Tensor<double>(v);
    });
    hooks.set_caching(true);
    const Array<double> edited = m->forward(ids, nullptr).value();
    CHECK(max_abs_diff(edited, plain) > 1e-3);
    // Then z of every query of layer 1 is the value at key 0.
    const Array<double> z = hooks.cached("blocks.1.attn.hook_z").value(), v = hooks.cached("blocks.1.attn.hook_v").value();
    for (std::size_t i = 0; i < 6; ++i)
      CHECK(max_abs_diff(xt::view(z, xt::all(), xt::all(), i, xt::all()), xt::view(v, xt::all(), xt::all(), 0, xt::all())) < 1e-12);
  }
  SUBCASE("a residual edited at one position changes only that position and later ones") {
    const Array<double> plain = m->forward(ids, nullptr).value();
    hooks.set_edit("blocks.1.hook_resid_pre", [](const Tensor<double>& x) {
      Array<double> v = x.value();
      for (std::size_t j = 0; j < 8; ++j) v(0, 3, j) += double(j), v(1, 3, j) += double(j);  // not a constant: LN removes those
      return Tensor<double>(v);
    });
    const Array<double> edited = m->forward(ids, nullptr).value();
    CHECK(max_abs_diff(xt::view(edited, xt::all(), xt::range(0, 3), xt::all()),
                       xt::view(plain, xt::all(), xt::range(0, 3), xt::all())) == 0.0);  // causal: earlier ones untouched
    CHECK(max_abs_diff(xt::view(edited, xt::all(), 3, xt::all()), xt::view(plain, xt::all(), 3, xt::all())) > 1e-3);
  }
  SUBCASE("an edit of the wrong shape is refused, naming the point") {
    hooks.set_edit("blocks.0.hook_mlp_out", [](const Tensor<double>&) { return Tensor<double>(Array<double>(xt::zeros<double>({1, 1}))); });
    CHECK_THROWS_WITH_AS(m->forward(ids, nullptr), doctest::Contains("blocks.0.hook_mlp_out"), ShapeError);
  }
}

TEST_CASE("hooks: the encoder-decoder's points, and none once removed") {
  TransformerConfig c = lm_config(true, 2, 0, GateKind::none);
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  Generator gen(2);
  Transformer<double> model(c, gen);
  model.eval();
  const IndexArray src = some_ids(2, 5, 11, 8), tgt = some_ids(2, 4, 11, 9);
  const Array<double> plain = model.forward(src, tgt, Masks{}, nullptr).value();
  HookPoints<double> hooks;
  hooks.set_caching(true);
  model.set_hooks(&hooks);
  CHECK(max_abs_diff(model.forward(src, tgt, Masks{}, nullptr).value(), plain) < 1e-12);
  const auto& seen = hooks.names_seen();
  for (const char* n : {"encoder.hook_embed", "encoder.0.attn.hook_pattern", "encoder.ln_final.hook_normalized",
                        "decoder.hook_embed", "decoder.0.hook_resid_mid", "decoder.0.cross_attn.hook_z",
                        "decoder.0.hook_cross_attn_out", "decoder.0.hook_resid_mid_cross", "decoder.0.hook_resid_post",
                        "decoder.ln_final.hook_normalized"})
    CHECK_MESSAGE(std::find(seen.begin(), seen.end(), n) != seen.end(), n);
  CHECK(hooks.cached("decoder.0.cross_attn.hook_pattern").shape() == Shape{2, 2, 4, 5});
  model.set_hooks(nullptr);
  hooks.clear_cache();
  model.forward(src, tgt, Masks{}, nullptr);
  CHECK(hooks.cache().empty());
  CHECK(hooks.names_seen().empty());
}

TEST_CASE("hooks: a pattern edit under GQA reads each query head's kv head, and is refused in training with dropout") {
  const IndexArray ids = some_ids(2, 6, 11, 10);
  auto m = sharp_lm(lm_config(true, 2, 1, GateKind::none), 11);  // 2 query heads share 1 kv head
  HookPoints<double> hooks;
  hooks.set_caching(true);
  m->set_hooks(&hooks);
  hooks.set_edit("blocks.1.attn.hook_pattern", [](const Tensor<double>& p) {  // every query reads its own position
    Array<double> v = xt::zeros<double>(p.shape());
    for (std::size_t i = 0; i < p.shape()[2]; ++i) xt::view(v, xt::all(), xt::all(), i, i) = 1.0;
    return Tensor<double>(v);
  });
  m->forward(ids, nullptr);
  const Array<double> z = hooks.cached("blocks.1.attn.hook_z").value(), v = hooks.cached("blocks.1.attn.hook_v").value();
  for (std::size_t h = 0; h < 2; ++h)
    for (std::size_t i = 0; i < 6; ++i)
      CHECK(max_abs_diff(xt::view(z, xt::all(), h, i, xt::all()), xt::view(v, xt::all(), 0, i, xt::all())) < 1e-12);
  TransformerConfig c = lm_config(true, 2, 0, GateKind::none);
  c.dropout = 0.1;
  auto dropping = sharp_lm(c, 12);
  dropping->train();
  dropping->set_hooks(&hooks);
  Generator gen(3);
  CHECK_THROWS_WITH_AS(dropping->forward(ids, &gen), doctest::Contains("blocks.1.attn.hook_pattern"), ValueError);
  dropping->eval();
  CHECK_NOTHROW(dropping->forward(ids, nullptr));
}
}  // namespace test_hooks
