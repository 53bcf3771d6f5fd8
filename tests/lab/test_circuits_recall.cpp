// The causal tools proven on a planted recall circuit (the planted induction circuit and the
// encoder-decoder and translate cases: test_circuits.cpp).
#include <doctest/doctest.h>

#include <cmath>

#include "circuit_test_models.hpp"
#include "headlab/core/random.hpp"
#include "headlab/lab/circuit_probe.hpp"
#include "headlab/lab/logit_attribution.hpp"
#include "headlab/lab/patching.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/train/recall_task.hpp"
#include "headlab/train/trainer.hpp"
#include "test_support.hpp"

namespace test_circuits_recall {

using namespace headlab;
using headlab::testing::blank_planted_model;
using headlab::testing::clean_accuracy;
using headlab::testing::kHeadDim;
using headlab::testing::kHeads;
using headlab::testing::param;

// ---- A planted recall circuit ------------------------------------------------------------------
// One attention-only layer over the recall task (4 keys, 4 values, 2 keys per query, 4 pairs):
// head 0 retrieves the value of the query's first key, head 2 that of its second key, head 1 is a
// distractor with small random weights. Stream (d_model 26): blocks of 4 dims KEY, VAL (a pair
// token's key and value), QA, QB (a query token's first and second key), OA, OB (what heads 0 and 2
// write), and 2 spare dims. RoPE base 1e12 leaves the content dims (rotary pairs 2-7 of heads of 16)
// all but unrotated, and there are no additive positions to blur them.
namespace {

constexpr std::size_t kKeys = 4, kValues = 4, kRecallD = 26, kKey = 0, kVal = 4, kQa = 8, kQb = 12, kOa = 16, kOb = 20;

TrainOptions recall_options() {
  TrainOptions o = TrainOptions::defaults_for(Task::recall);
  o.keys = kKeys;
  o.values = kValues;
  o.relations = 2;
  o.length = 4;
  return o;
}

// Content dims of a head of 16: rotary pairs 2-7 (pair k = dims k and k + 8).
std::size_t slow_dim(std::size_t i) { return i < 6 ? 2 + i : 10 + (i - 6); }

LoadedModel planted_recall_model() {
  const TrainOptions o = recall_options();
  const RecallLayout layout = recall_layout(o);
  Generator gen(8);
  LoadedModel m;
  m.options = o;
  m.lm = blank_planted_model(kRecallD, 1, 1e12, layout.vocab(), gen);
  Array<float>& embed = param(*m.lm, "embed.weight").mutable_value();
  Array<float>& unembed = param(*m.lm, "lm_head.weight").mutable_value();
  embed(1, 24) = 1.0f;  // <s>
  for (std::size_t k = 0; k < kKeys; ++k)
    for (std::size_t v = 0; v < kValues; ++v) {
      const auto pair = std::size_t(layout.pair_token(k, v));
      embed(pair, kKey + k) = embed(pair, kVal + v) = 1.0f;
      const auto query = std::size_t(layout.query_token({k, v}));  // v as the second key
      embed(query, kQa + k) = embed(query, kQb + v) = 1.0f;
      const auto answer = std::size_t(layout.answer_token({k, v}));  // values (k, v)
      unembed(answer, kOa + k) = unembed(answer, kOb + v) = 10.0f;
    }
  Array<float>& w = param(*m.lm, "layers.0.self_attn.in_proj_weight").mutable_value();
  Array<float>& out = param(*m.lm, "layers.0.self_attn.out_proj.weight").mutable_value();
  const std::size_t q0 = 0, k0 = kHeads * kHeadDim, v0 = 2 * kHeads * kHeadDim;
  for (auto [head, query_block, out_block] : {std::tuple<std::size_t, std::size_t, std::size_t>{0, kQa, kOa}, {2, kQb, kOb}}) {
    const std::size_t h = head * kHeadDim;
    for (std::size_t i = 0; i < 4; ++i) {
      w(q0 + h + slow_dim(i), query_block + i) = 3.0f;  // the query's key ...
      w(k0 + h + slow_dim(i), kKey + i) = 3.0f;         // ... against each pair's key
      w(v0 + h + i, kVal + i) = 1.0f;                   // read that pair's value
      out(out_block + i, h + i) = 1.0f;                 // and write it to OA or OB
    }
  }
  for (std::size_t part = 0; part < 3; ++part)  // head 1: a distractor
    for (std::size_t r = 0; r < kHeadDim; ++r)
      for (std::size_t j = 0; j < kRecallD; ++j) w(part * kHeads * kHeadDim + kHeadDim + r, j) = float(0.5 * gen.normal());
  for (std::size_t j = 0; j < kRecallD; ++j)
    for (std::size_t r = 0; r < kHeadDim; ++r) out(j, kHeadDim + r) = float(0.02 * gen.normal());
  return m;
}

}  // namespace

TEST_CASE("planted recall circuit: each key's head found by patching and attribution, and needed") {
  LoadedModel m = planted_recall_model();
  for (std::size_t slot : {0, 1}) {
    CAPTURE(slot);
    const std::size_t planted = slot == 0 ? 0 : 2, other = slot == 0 ? 2 : 0;
    const CircuitProbe probe = make_circuit_probe(m.options, {64, 11, slot, ""});
    CHECK(clean_accuracy(*m.lm, probe) >= 0.95);
    const PatchingResult r = activation_patching(m, probe);
    CHECK(r.heads[0][planted] > 0.9);
    CHECK(std::abs(r.heads[0][other]) < 0.1);
    CHECK(std::abs(r.heads[0][1]) < 0.1);
    // The changed value's head removed: the answer is lost.
    Array<float> mask = xt::ones<float>({kHeads});
    mask(planted) = 0.0f;
    m.lm->layer(0).self_attn.set_head_mask(Tensor<float>(mask));
    CHECK(clean_accuracy(*m.lm, probe) < 0.5);
    m.lm->layer(0).self_attn.set_head_mask(Tensor<float>());
  }
  // Attribution: the two planted heads write the answer's logit, about equally; the distractor not.
  const LogitAttribution a = direct_logit_attribution(m, make_circuit_probe(m.options, {64, 12, 0, ""}));
  CHECK(a.max_sum_error < 1e-3);
  std::map<std::string, double> term;
  for (const LogitComponent& c : a.components) term[c.name] = c.mean;
  CHECK(term["blocks.0.attn.head0"] > 5.0);
  CHECK(term["blocks.0.attn.head2"] > 5.0);
  CHECK(std::abs(term["blocks.0.attn.head1"]) < 0.2 * term["blocks.0.attn.head0"]);
}

// The translate rule on a tiny word-level model of the toy corpus (wK -> vK) with gold links i-i:
// each row replaces a source word by another and is read where the decoder predicts its translation.
}  // namespace test_circuits_recall
