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

namespace test_sink_probes {

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

Tensor<float> param(LoadedModel& m, const std::string& name) { return testing::lm_parameter(m, name); }

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
    // Uniform attention's previous-token and induction scores, the same for both heads: head 1 sits on
    // them; by hand, the mean of 1 / (i + 1) over queries 1..16 and over the second copy 9..16.
    double previous_uniform = 0, induction_uniform = 0;
    for (std::size_t i = 1; i < 17; ++i) previous_uniform += 1.0 / double(i + 1) / 16.0;
    for (std::size_t i = 9; i < 17; ++i) induction_uniform += 1.0 / double(i + 1) / 8.0;
    for (const HeadRoles& r : rows) {
      CHECK(r.previous_token_uniform == doctest::Approx(previous_uniform));
      CHECK(r.induction_uniform == doctest::Approx(induction_uniform));
    }
    CHECK(rows[1].previous_token == doctest::Approx(rows[1].previous_token_uniform).epsilon(1e-5));
    CHECK(rows[1].induction == doctest::Approx(rows[1].induction_uniform).epsilon(1e-5));
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
  // One that runs past it is refused too (it was cut to the probe's end without a word); "A:" is the rest.
  const std::size_t L = probe.sequences.shape()[1];
  const std::string has_l = "the probe has " + std::to_string(L) + " positions";
  CHECK_THROWS_WITH_AS(head_roles(m, probe, parse_query_range("1:99999", 8)), doctest::Contains(has_l.c_str()), ValueError);
  CHECK(head_roles(m, probe, parse_query_range("1:", 8)).size() > 0);
  CHECK(head_roles(m, probe, parse_query_range("1:" + std::to_string(L), 8)).size() > 0);
}

TEST_CASE("text probes: the delimiter score reads the latest space or newline before each query, by hand") {
  // ids: a ' ' b c '\n' with ' ' = 5, '\n' = 6. Queries 2, 3, 4 have a delimiter before them, at 1
  // each time (the newline is query 4 itself, not before it); queries 0 and 1 have none.
  IndexArray ids = IndexArray::from_shape({1, 5});
  const std::int64_t row[] = {7, 5, 8, 9, 6};
  for (std::size_t i = 0; i < 5; ++i) ids(0, i) = row[i];
  Array<double> w = xt::zeros<double>({std::size_t(1), std::size_t(2), std::size_t(5), std::size_t(5)});
  for (std::size_t i = 0; i < 5; ++i) {
    w(0, 0, i, std::min<std::size_t>(i, 1)) = 1.0;  // head 0: always the key at 1 (from query 1 on)
    w(0, 1, i, i == 0 ? 0 : i - 1) = 1.0;          // head 1: the previous token
  }
  const std::vector<double> score = delimiter_score(w, ids, {5, 6});
  CHECK(score[0] == doctest::Approx(1.0));
  CHECK(score[1] == doctest::Approx(1.0 / 3.0));  // only query 2's previous token is the space
  CHECK(std::isnan(delimiter_score(w, ids, {42})[0]));  // no delimiter: no query counts
  CHECK_THROWS_AS(delimiter_score(w, IndexArray::from_shape({2, 5}), {5}), ShapeError);
}

TEST_CASE("text probes: windows of the model's context cut from the text, delimiters from its vocabulary") {
  const std::string text = "in the beginning\nwas the word and the word was\nwith god ";
  LoadedModel m;
  m.options = TrainOptions::defaults_for(Task::lm);
  m.lm_vocab = LmVocabulary::build(LmTokenizer::characters, text);
  TransformerConfig c = m.options.model_config();
  c.tgt_vocab = m.lm_vocab.size();
  c.max_len = 8;
  c.d_model = 8;
  c.attention.num_heads = 2;
  Generator gen(1);
  m.lm = std::make_unique<DecoderOnlyLM<float>>(c, gen);
  m.lm->eval();
  const std::vector<std::int64_t> ids = m.lm_vocab.encode(text);
  const Probe probe = text_probe(m, ids, 6, 3);
  REQUIRE(probe.sequences.shape()[0] == 6);
  REQUIRE(probe.sequences.shape()[1] == 8);
  CHECK(probe.block == 0);
  for (std::size_t b = 0; b < 6; ++b) {  // each row is a contiguous slice of the text's ids
    bool found = false;
    for (std::size_t start = 0; start + 8 <= ids.size() && !found; ++start) {
      bool same = true;
      for (std::size_t t = 0; t < 8; ++t) same = same && probe.sequences(b, t) == ids[start + t];
      found = same;
    }
    CHECK(found);
  }
  REQUIRE(probe.delimiters.size() == 2);
  CHECK(m.lm_vocab.token(probe.delimiters[0]) == " ");
  CHECK(m.lm_vocab.token(probe.delimiters[1]) == "\n");
  const std::vector<HeadRoles> rows = head_roles(m, probe);
  REQUIRE(rows.size() == 2 * m.lm->layers());
  for (const auto& r : rows) {
    CHECK(std::isnan(r.induction));  // no repeated block in a text
    CHECK(r.delimiter >= 0);
    CHECK(r.delimiter <= 1);
  }
  // The uniform baseline by hand: mean over the queries with a delimiter before them of 1 / (i + 1).
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t b = 0; b < 6; ++b) {
    bool seen = false;
    for (std::size_t i = 0; i < 8; ++i) {
      if (seen) sum += 1.0 / double(i + 1), ++n;
      seen = seen || probe.sequences(b, i) == probe.delimiters[0] || probe.sequences(b, i) == probe.delimiters[1];
    }
  }
  REQUIRE(n > 0);
  for (const auto& r : rows) CHECK(r.delimiter_uniform == doctest::Approx(sum / double(n)));
  CHECK_THROWS_WITH_AS(text_probe(m, std::vector<std::int64_t>(ids.begin(), ids.begin() + 5), 2, 1),
                       doctest::Contains("fewer than one window"), ValueError);
  CHECK_THROWS_WITH_AS(parse_query_range("first-half", 0), doctest::Contains("on a text probe"), ValueError);
}

TEST_CASE("sink probes: the mean gate over a query range, by hand") {
  // gate (B 2, h 2, L 5, 1): head 0's gate at query i is i / 10, head 1's is 1 - i / 10.
  Array<double> gate = xt::zeros<double>({2, 2, 5, 1});
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t i = 0; i < 5; ++i) {
      gate(b, 0, i, 0) = double(i) / 10.0;
      gate(b, 1, i, 0) = 1.0 - double(i) / 10.0;
    }
  std::vector<double> all = gate_mean_over(gate, parse_query_range("all", 2));  // queries 1..4
  CHECK(all[0] == doctest::Approx(0.25));
  CHECK(all[1] == doctest::Approx(0.75));
  std::vector<double> late = gate_mean_over(gate, parse_query_range("3:", 2));  // queries 3, 4
  CHECK(late[0] == doctest::Approx(0.35));
  CHECK(late[1] == doctest::Approx(0.65));
  CHECK(std::isnan(gate_mean_over(gate, parse_query_range("7:9", 2))[0]));  // no query in range
  CHECK_THROWS_AS(gate_mean_over(Array<double>(xt::zeros<double>({2, 5, 1}))), ShapeError);
}

TEST_CASE("sink probes: heads reports each head's gate over the chosen queries") {
  // Headwise gate with W = 0: head h's gate is sigmoid(b_h) at every query, whatever the range.
  TrainOptions o = sink_model_options();
  o.gate = GateKind::headwise;
  LoadedModel m = testing::untrained_model(o, 3);
  param(m, "layers.0.self_attn.gate_proj.weight").mutable_value().fill(0.0f);  // (h, D)
  Array<float>& bias = param(m, "layers.0.self_attn.gate_proj.bias").mutable_value();
  bias(0) = -2.0f;
  bias(1) = 1.5f;
  const Probe probe = repeated_tokens_probe(m, 4, 0, 1);
  for (const char* range : {"first-half", "second-half"}) {
    const std::vector<HeadRoles> rows = head_roles(m, probe, parse_query_range(range, probe.block));
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].gate_queries == doctest::Approx(1.0 / (1.0 + std::exp(2.0))).epsilon(1e-6));
    CHECK(rows[1].gate_queries == doctest::Approx(1.0 / (1.0 + std::exp(-1.5))).epsilon(1e-6));
  }
  LoadedModel plain = testing::untrained_model(sink_model_options(), 3);
  const std::vector<HeadRoles> ungated = head_roles(plain, probe);
  CHECK(std::isnan(ungated[0].gate_queries));
}
}  // namespace test_sink_probes
