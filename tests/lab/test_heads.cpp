// The head lab: role scores on hand-built attention patterns, standing head masks, the induction
// task, roles on the probe (importance and pruning: test_pruning.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <filesystem>
#include <sstream>

#include <xtensor/xview.hpp>

#include "headlab/lab/heads.hpp"
#include "headlab/core/random.hpp"
#include "untrained_model.hpp"

namespace test_heads {

using namespace headlab;
namespace fs = std::filesystem;

namespace {

// (1, 1, L, L) weights with row i putting weight 1 on key key_of(i) (or on itself if out of range).
template <typename KeyOf>
Array<double> one_hot_pattern(std::size_t L, KeyOf key_of) {
  Array<double> w = xt::zeros<double>({std::size_t(1), std::size_t(1), L, L});
  for (std::size_t i = 0; i < L; ++i) {
    const std::ptrdiff_t j = key_of(i);
    w(0, 0, i, (j >= 0 && std::size_t(j) < L) ? std::size_t(j) : i) = 1.0;
  }
  return w;
}

TrainOptions tiny_induction_options() {
  TrainOptions o = TrainOptions::defaults_for(Task::induction);
  o.vocab = 12;
  o.length = 4;
  o.d_model = 16;
  o.heads = 2;
  o.batch = 8;
  o.eval_sequences = 16;
  o.progress = "none";
  return o;
}

}  // namespace

TEST_CASE("heads: entropy is ln S for uniform rows and 0 for one-hot rows") {
  const std::size_t L = 5;
  Array<double> uniform = xt::ones<double>({std::size_t(2), std::size_t(1), L, L}) / double(L);
  CHECK(attention_entropy(uniform)[0] == doctest::Approx(std::log(double(L))));
  // Causal uniform rows: row i spreads over i + 1 keys, entropy ln(i + 1).
  Array<double> causal = xt::zeros<double>({std::size_t(1), std::size_t(1), L, L});
  double expected = 0;
  for (std::size_t i = 0; i < L; ++i) {
    for (std::size_t j = 0; j <= i; ++j) causal(0, 0, i, j) = 1.0 / double(i + 1);
    expected += std::log(double(i + 1)) / double(L);
  }
  CHECK(attention_entropy(causal)[0] == doctest::Approx(expected));
  CHECK(attention_entropy(one_hot_pattern(L, [](std::size_t) { return std::ptrdiff_t(0); }))[0] == 0.0);
  // A fully masked (all-zero) row is skipped, not counted as entropy 0.
  Array<double> masked = uniform;
  xt::view(masked, 0, 0, 2, xt::all()) = 0.0;
  CHECK(attention_entropy(masked)[0] == doctest::Approx(std::log(double(L))));
}

TEST_CASE("heads: sink, previous-token and induction scores of hand-built heads") {
  const std::size_t T = 4, L = 2 * T + 1;  // [<s>] r1..r4 r1..r4
  const auto sink = one_hot_pattern(L, [](std::size_t) { return std::ptrdiff_t(0); });
  const auto previous = one_hot_pattern(L, [](std::size_t i) { return std::ptrdiff_t(i) - 1; });
  const auto induction = one_hot_pattern(L, [&](std::size_t i) {
    return i > T ? std::ptrdiff_t(i) - std::ptrdiff_t(T) + 1 : std::ptrdiff_t(i);  // else itself
  });
  CHECK(sink_mass(sink)[0] == 1.0);
  CHECK(previous_token_score(sink)[0] == doctest::Approx(1.0 / double(L - 1)));  // only query 1 looks at key 0 = 1 - 1
  CHECK(induction_score(sink, T)[0] == 0.0);

  CHECK(previous_token_score(previous)[0] == 1.0);
  CHECK(sink_mass(previous)[0] == doctest::Approx(1.0 / double(L - 1)));
  CHECK(induction_score(previous, T)[0] == 0.0);

  CHECK(induction_score(induction, T)[0] == 1.0);
  CHECK(previous_token_score(induction)[0] == 0.0);
  CHECK(sink_mass(induction)[0] == 0.0);

  // Several heads and a batch: scores per head, averaged over the batch.
  Array<double> two = xt::zeros<double>({std::size_t(2), std::size_t(2), L, L});
  xt::view(two, 0, 0) = xt::view(previous, 0, 0);
  xt::view(two, 1, 0) = xt::view(induction, 0, 0);
  xt::view(two, xt::all(), 1) = xt::view(induction, 0, 0);
  const std::vector<double> ind = induction_score(two, T);
  CHECK(ind[0] == doctest::Approx(0.5));
  CHECK(ind[1] == 1.0);
  CHECK(previous_token_score(two)[0] == doctest::Approx(0.5));

  // Half of the weight on the induction key gives 0.5.
  Array<double> half = 0.5 * induction + 0.5 * previous;
  CHECK(induction_score(half, T)[0] == doctest::Approx(0.5));
}

TEST_CASE("heads: scores refuse the wrong shapes") {
  CHECK_THROWS_AS(sink_mass(Array<double>(xt::zeros<double>({3, 3}))), ShapeError);
  CHECK_THROWS_AS(induction_score(Array<double>(xt::zeros<double>({1, 1, 6, 6})), 3), ShapeError);  // needs L >= 7
  CHECK_THROWS_AS(induction_score(Array<double>(xt::zeros<double>({1, 1, 9, 9})), 1), ShapeError);
}

TEST_CASE("heads: a standing head mask scales each head, a call's own mask takes precedence") {
  Generator gen(3);
  AttentionConfig c;
  c.d_model = 8;
  c.num_heads = 2;
  MultiHeadAttention<double> mha(c, gen);
  const Tensor<double> x = uniform<double>({2, 3, 8}, -1, 1, gen);
  const Array<double> full = mha.forward(x).output.value();
  mha.set_head_mask(Tensor<double>(Array<double>{0.0, 0.0}));
  const Array<double> none = mha.forward(x).output.value();
  // With every head masked only the output bias is left.
  const Array<double> bias = mha.parameter("out_proj.bias").value();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t d = 0; d < 8; ++d) CHECK(none(b, t, d) == doctest::Approx(bias(d)));
  AttentionCall<double> call;
  call.head_mask = Tensor<double>(Array<double>{1.0, 1.0});
  CHECK(xt::allclose(mha.forward(x, call).output.value(), full));
  mha.set_head_mask(Tensor<double>());
  CHECK(xt::allclose(mha.forward(x).output.value(), full));
  CHECK_THROWS_AS(mha.set_head_mask(Tensor<double>(Array<double>{1.0, 1.0, 1.0})), ShapeError);
}

TEST_CASE("heads: induction sequences repeat their block, and the trainer resumes bit for bit") {
  Generator gen(1);
  const InductionBatch batch = induction_batch(gen, 40, 5, 9);
  const IndexArray& seq = batch.sequences;
  REQUIRE(seq.shape()[1] == 11);
  std::set<std::size_t> lengths;
  for (std::size_t b = 0; b < 40; ++b) {
    const std::size_t k = batch.blocks[b];
    lengths.insert(k);
    CHECK(k >= 3);  // ceil(5 / 2)
    CHECK(k <= 5);
    CHECK(seq(b, 0) == Vocabulary::bos);
    for (std::size_t t = 1; t <= 10; ++t) {
      if (t <= k) CHECK(seq(b, t) == seq(b, t + k));
      CHECK(seq(b, t) >= 2);
      CHECK(seq(b, t) < 9);
    }
  }
  CHECK(lengths.size() == 3);  // every length from 3 to 5 drawn
  Generator again(1);
  const InductionBatch fixed = induction_batch(again, 2, 5, 9, true);
  CHECK(fixed.blocks == std::vector<std::size_t>{5, 5});
  const fs::path a = fs::temp_directory_path() / "headlab_test_induction_a";
  const fs::path b = fs::temp_directory_path() / "headlab_test_induction_b";
  fs::remove_all(a);
  fs::remove_all(b);
  std::ostringstream log;
  TrainOptions o = tiny_induction_options();
  o.steps = 6;
  o.run_dir = a.string();
  const TrainResult straight = train(o, log);
  o.run_dir = b.string();
  o.steps = 3;
  train(o, log);
  o.steps = 6;
  o.resume = true;
  const TrainResult resumed = train(o, log);
  REQUIRE(resumed.losses.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) CHECK(resumed.losses[i] == straight.losses[i]);
  CHECK(fs::exists(a / "summary.json"));
  // The checkpoint loads back as a decoder-only model with its sites.
  LoadedModel m = load_trained_model((a / "checkpoint.safetensors").string());
  REQUIRE(m.lm);
  CHECK(!m.model);
  CHECK(attention_sites(m).size() == 2);
  CHECK(m.options.attention_only);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("heads: the sink mass of uniform attention, by hand, under every mask") {
  // Bidirectional or cross: every query sees all S keys, 1/S.
  CHECK(uniform_sink_mass(4, 5, false, 0, 0) == doctest::Approx(0.2));
  // Causal, 4 queries: (1/2 + 1/3 + 1/4) / 3.
  CHECK(uniform_sink_mass(4, 4, true, 0, 0) == doctest::Approx((1.0 / 2 + 1.0 / 3 + 1.0 / 4) / 3));
  // A window of 2 keys: query 1 sees {0, 1}, queries 2 and 3 no longer see key 0: (1/2) / 3.
  CHECK(uniform_sink_mass(4, 4, true, 2, 0) == doctest::Approx(1.0 / 6));
  // ... with one sink kept: query 2 sees {0, 1, 2}, query 3 {0, 2, 3}: (1/2 + 1/3 + 1/3) / 3.
  CHECK(uniform_sink_mass(4, 4, true, 2, 1) == doctest::Approx(7.0 / 18));
  CHECK(std::isnan(uniform_sink_mass(1, 4, true, 0, 0)));  // no query past the first
}

TEST_CASE("heads: roles on the probe give one row per head with scores in range") {
  TrainOptions o = tiny_induction_options();
  o.gate = GateKind::headwise;
  LoadedModel m = testing::untrained_model(o, 3);
  const Probe probe = repeated_tokens_probe(m, 6, 0, 11);
  CHECK(probe.block == 4);
  REQUIRE(probe.sequences.shape()[1] == 9);
  const std::vector<HeadRoles> rows = head_roles(m, probe);
  REQUIRE(rows.size() == 2 * 2);
  for (const auto& r : rows) {
    CHECK(r.sink_mass >= 0);
    CHECK(r.sink_mass <= 1);
    CHECK(r.induction >= 0);
    CHECK(r.induction <= 1);
    CHECK(r.entropy >= 0);
    CHECK(r.entropy <= std::log(9.0) + 1e-6);
    CHECK(r.gate_mean > 0);
    CHECK(r.gate_mean < 1);
    CHECK(r.max_abs_output > 0);
  }
  // An untrained causal model: query 1 sees keys 0 and 1 only, so the sink score is well above 1/9,
  // near what uniform causal attention gives on 9 queries: (1/8) sum_{i=1}^{8} 1/(i+1).
  CHECK(rows[0].sink_mass > 0.1);
  double uniform = 0;
  for (int i = 1; i <= 8; ++i) uniform += 1.0 / (i + 1) / 8;
  for (const auto& r : rows) CHECK(r.sink_uniform == doctest::Approx(uniform));
  CHECK_THROWS_AS(repeated_tokens_probe(m, 6, 5, 1), ValueError);  // 11 ids > the model's 9
  const std::vector<Array<float>> maps = attention_maps(m, probe.sequences, xt::view(probe.sequences, xt::range(0, 1)));
  REQUIRE(maps.size() == 2);
  CHECK(maps[0].shape()[0] == 2);
  CHECK(maps[0].shape()[1] == 9);
}
}  // namespace test_heads
