// Composition scores (Elhage et al. 2021) proven on a planted circuit: head 0 of layer 0 copies
// x[0] into x[5], and head 1 of layer 1 keys on x[5]; every other weight is 0. The K-composition of
// that pair is known on paper, every other score is 0.
#include <doctest/doctest.h>

#include <cmath>

#include "headlab/lab/composition.hpp"
#include "untrained_model.hpp"

namespace test_composition {

using namespace headlab;

namespace {

Tensor<float> param(LoadedModel& m, const std::string& name) { return testing::lm_parameter(m, name); }

// 2 attention-only layers, d_model 8, 2 heads of 4, pre-LN (norm1 gamma = `gamma`), all attention weights 0.
LoadedModel blank_two_layer_model(float gamma) {
  TrainOptions o = TrainOptions::defaults_for(Task::induction);
  o.vocab = 12;
  o.length = 4;
  o.d_model = 8;
  o.heads = 2;
  o.layers = 2;
  o.attention_only = true;
  o.norm_first = true;
  o.gate = GateKind::none;
  o.progress = "none";
  LoadedModel m = testing::untrained_model(o, 7);
  for (int l : {0, 1}) {
    const std::string p = "layers." + std::to_string(l) + ".";
    param(m, p + "self_attn.in_proj_weight").mutable_value().fill(0.0f);  // (3 D, D): q, k, v rows of head 0, 1
    param(m, p + "self_attn.out_proj.weight").mutable_value().fill(0.0f);  // (D, h d)
    param(m, p + "norm1.weight").mutable_value().fill(gamma);
  }
  return m;
}

// Layer 0 head 0: v_0 = x[0] (in_proj row 16), written to x[5] (out_proj[5, 0]): W_OV = e_0 e_5^T.
// Layer 1 head 1: q_0 = x[1] (row 4), k_0 = x[5] (row 12): W_QK = e_1 e_5^T.
void plant_previous_to_key_circuit(LoadedModel& m) {
  param(m, "layers.0.self_attn.in_proj_weight").mutable_value()(16, 0) = 1.0f;
  param(m, "layers.0.self_attn.out_proj.weight").mutable_value()(5, 0) = 1.0f;
  param(m, "layers.1.self_attn.in_proj_weight").mutable_value()(4, 1) = 1.0f;
  param(m, "layers.1.self_attn.in_proj_weight").mutable_value()(12, 5) = 1.0f;
}

}  // namespace

TEST_CASE("composition score: the Frobenius ratio by hand") {
  const Array<double> e00 = {{1.0, 0.0}, {0.0, 0.0}}, e11 = {{0.0, 0.0}, {0.0, 1.0}}, eye = {{1.0, 0.0}, {0.0, 1.0}};
  CHECK(composition_score(e00, e11) == doctest::Approx(0.0));      // disjoint subspaces
  CHECK(composition_score(e00, e00) == doctest::Approx(1.0));      // one direction, read exactly
  CHECK(composition_score(eye, eye) == doctest::Approx(std::sqrt(2.0) / 2.0));  // ||I|| / (||I|| ||I||)
  CHECK(composition_score(e00, Array<double>(xt::zeros<double>({2, 2}))) == 0.0);
  CHECK_THROWS_AS(composition_score(e00, Array<double>(xt::zeros<double>({3, 2}))), ShapeError);
}

TEST_CASE("composition scores: a planted K-composition is found, and only it") {
  for (float gamma : {1.0f, 3.0f}) {  // LayerNorm's scale cancels in the ratio
    CAPTURE(gamma);
    LoadedModel m = blank_two_layer_model(gamma);
    plant_previous_to_key_circuit(m);
    const std::vector<CompositionScore> scores = composition_scores(m);
    REQUIRE(scores.size() == 4);  // 2 writer heads x 2 reader heads
    for (const CompositionScore& s : scores) {
      CAPTURE(s.writer_head);
      CAPTURE(s.reader_head);
      CHECK(s.writer_layer == 0);
      CHECK(s.reader_layer == 1);
      CHECK(s.v == doctest::Approx(0.0));
      if (s.writer_head == 0 && s.reader_head == 1) {
        // Layer 1 reads P x (P = I - 11^T/8, the mean removed): W_QK = (P e_1)(P e_5)^T, ||P e_i|| = sqrt(7/8).
        // K: W_OV W_QK^T = e_0 (e_5 . P e_5)(P e_1)^T, e_5 . P e_5 = 7/8: K = (7/8) / (7/8)^(1/2) = sqrt(7/8).
        // Q: W_OV W_QK = e_0 (e_5 . P e_1)(P e_5)^T, e_5 . P e_1 = -1/8: Q = (1/8) / sqrt(7/8), what the
        // mean removal leaks; small beside K.
        CHECK(s.k == doctest::Approx(std::sqrt(7.0 / 8.0)).epsilon(1e-6));
        CHECK(s.q == doctest::Approx(0.125 / std::sqrt(7.0 / 8.0)).epsilon(1e-6));
      } else {
        CHECK(s.k == doctest::Approx(0.0));
        CHECK(s.q == doctest::Approx(0.0));
      }
    }
  }
}

TEST_CASE("composition scores: the random baseline, and models they are not for") {
  const CompositionBaseline small = random_composition_baseline(8, 4, 50, 1), wide = random_composition_baseline(64, 4, 50, 1);
  for (double v : {small.q, small.k, small.v}) {
    CHECK(v > 0.0);
    CHECK(v < 1.0);
  }
  CHECK(wide.k < small.k);  // random directions compose less in a wider stream
  CHECK(random_composition_baseline(8, 4, 50, 1).k == small.k);  // seeded
  TrainOptions copy = TrainOptions::defaults_for(Task::copy);
  copy.d_model = 8;
  copy.heads = 2;
  copy.progress = "none";
  LoadedModel encoder_decoder = testing::untrained_model(copy, 1);
  CHECK_THROWS_WITH_AS(composition_scores(encoder_decoder), doctest::Contains("decoder-only"), ValueError);
}
}  // namespace test_composition
