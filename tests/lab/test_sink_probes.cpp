// Probes that can see a sink (issue "Sinks, gates and circuits", item 1), proven on models whose
// weights are set by hand so that the answer is known: one head parks every query on <s>, the
// other attends uniformly; the largest attention logit and the largest residual activation are
// computed from the weights on paper.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <xtensor/xview.hpp>

#include "headlab/lab/heads.hpp"
#include "untrained_model.hpp"

using namespace headlab;

namespace {

// A 1-layer attention-only decoder (induction task, d_model 8, 2 heads of 4), post-LN so that the
// attention reads the embedding x_j = E[t_j] sqrt(8) + PE(j) itself (no rope).
TrainOptions sink_model_options() {
  TrainOptions o = TrainOptions::defaults_for(Task::induction);
  o.vocab = 12;
  o.length = 8;  // probe: <s> + 8 + 8 = 17 positions
  o.d_model = 8;
  o.heads = 2;
  o.layers = 1;
  o.attention_only = true;
  o.norm_first = false;
  o.rope = false;  // sinusoidal positions added to x, as the formulas below assume
  o.gate = GateKind::none;
  o.window = 0;
  o.sinks = 0;
  o.progress = "none";
  return o;
}

Tensor<float> param(LoadedModel& m, const std::string& name) {
  for (const auto& [n, t] : m.lm->named_parameters())
    if (n == name) return t;
  FAIL("no parameter " << name);
  return {};
}

// Every attention weight 0; then head 0's query is the constant c e_0 (bias) and its key reads x[0]:
//   logit(i, j) = c x_j[0] / sqrt(4),  x_j[0] = E[t_j][0] sqrt(8) + sin(j).
// <s> (id 1) has E[1][0] = e; every other token 0 there. Head 1's q = 0: all logits 0, uniform.
void plant_sink(LoadedModel& m, float c, float e) {
  param(m, "layers.0.self_attn.in_proj_weight").mutable_value().fill(0.0f);  // (3 D, D)
  param(m, "layers.0.self_attn.in_proj_bias").mutable_value().fill(0.0f);
  param(m, "layers.0.self_attn.in_proj_bias").mutable_value()(0) = c;        // head 0's q = c e_0
  param(m, "layers.0.self_attn.in_proj_weight").mutable_value()(8 + 0, 0) = 1.0f;  // head 0's k_0 = x[0]
  Array<float>& embed = param(m, "embed.weight").mutable_value();            // (V, D)
  for (std::size_t t = 0; t < embed.shape()[0]; ++t) embed(t, 0) = 0.0f;
  embed(1, 0) = e;
}

}  // namespace

TEST_CASE("sink probes: a planted sink head is found, the uniform head sits at the baseline") {
  LoadedModel m = testing::untrained_model(sink_model_options(), 3);
  const float c = 4.0f, e = 3.0f;
  plant_sink(m, c, e);
  const Probe probe = repeated_tokens_probe(m, 16, 0, 5);
  REQUIRE(probe.block == 8);
  for (const char* range : {"all", "first-half", "second-half", "3:12"}) {
    CAPTURE(range);
    const QueryRange q = parse_query_range(range, probe.block);
    const std::vector<HeadRoles> rows = head_roles(m, probe, q);
    REQUIRE(rows.size() == 2);
    // Head 0: e^{c x_0[0] / 2} against at most 16 keys of e^{c / 2}: the mass on <s> is above
    // 1 - 16 e^{-(c (e sqrt 8 - 1) / 2)} > 0.999.
    CHECK(rows[0].sink_mass > 0.999);
    // Head 1 attends uniformly over the visible keys: exactly the baseline of its range.
    CHECK(rows[1].sink_mass == doctest::Approx(rows[1].sink_uniform).epsilon(1e-5));
    // The baseline by hand: the mean of 1 / (i + 1) over the range's queries.
    const std::size_t first = q.first, last = std::min<std::size_t>(q.last, 17);
    double uniform = 0;
    for (std::size_t i = first; i < last; ++i) uniform += 1.0 / double(i + 1) / double(last - first);
    CHECK(rows[0].sink_uniform == doctest::Approx(uniform));
    // The largest logits: head 0 at key <s>, c (e sqrt 8 + sin 0) / sqrt 4; head 1 all 0.
    CHECK(rows[0].max_logit == doctest::Approx(c * e * std::sqrt(8.0) / 2.0).epsilon(1e-5));
    CHECK(rows[1].max_logit == doctest::Approx(0.0));
    CHECK(rows[0].sink_queries == query_range_text(q, 17));
  }
  // The number: first-half queries of a 33-token induction sequence, uniform 0.152.
  CHECK(uniform_sink_mass(33, 33, true, 0, 0, parse_query_range("first-half", 16)) == doctest::Approx(0.1525).epsilon(1e-3));
}

TEST_CASE("sink probes: the largest residual activation is the residual stream's, by hand") {
  // Pre-LN, attention-only, W_O = 0 and b_O = 0: the layer adds nothing, its output is the embedding
  // x_j = E[t_j] sqrt(8) + PE(j). E = 0 but E[1][0] = 10: the largest |x| is 10 sqrt(8) + sin(0)
  // at <s> (every |PE| <= 1 < 10 sqrt 8).
  TrainOptions o = sink_model_options();
  o.norm_first = true;
  LoadedModel m = testing::untrained_model(o, 4);
  param(m, "layers.0.self_attn.out_proj.weight").mutable_value().fill(0.0f);
  param(m, "layers.0.self_attn.out_proj.bias").mutable_value().fill(0.0f);
  Array<float>& embed = param(m, "embed.weight").mutable_value();
  embed.fill(0.0f);
  embed(1, 0) = 10.0f;
  const std::vector<HeadRoles> rows = head_roles(m, repeated_tokens_probe(m, 4, 0, 1));
  REQUIRE(rows.size() == 2);
  for (const auto& r : rows) {
    CHECK(r.max_residual == doctest::Approx(10.0 * std::sqrt(8.0)).epsilon(1e-6));
    CHECK(r.max_abs_output == doctest::Approx(0.0));
  }
}

TEST_CASE("sink probes: query ranges are read strictly") {
  CHECK(parse_query_range("all", 8).first == 1);
  CHECK(parse_query_range("first-half", 8).last == 9);
  CHECK(parse_query_range("second-half", 8).first == 9);
  CHECK(parse_query_range("second-half", 8).last == 17);
  CHECK(parse_query_range("2:", 8).last == std::numeric_limits<std::size_t>::max());
  CHECK(parse_query_range("2:5", 8).last == 5);
  for (const char* bad : {"", "half", "0:4", "5:5", "5:3", "a:b", ":4", "1:-2", "1:99999999999"})
    CHECK_THROWS_AS(parse_query_range(bad, 8), ValueError);
  // A range past the probe holds no query: refused naming the flag.
  LoadedModel m = testing::untrained_model(sink_model_options(), 3);
  const Probe probe = repeated_tokens_probe(m, 2, 0, 1);
  CHECK_THROWS_WITH_AS(head_roles(m, probe, parse_query_range("40:50", 8)), doctest::Contains("--sink-queries"),
                       ValueError);
}
