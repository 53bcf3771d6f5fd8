// The causal tools proven on a planted circuit: a two-layer attention-only model whose weights are
// set by hand to solve the induction task with a previous-token head (layer 0, head 1) and an
// induction head (layer 1, head 2) among distractor heads with small random weights. Patching,
// direct logit attribution and composition must each name the planted heads and not the others.
// (The planted recall circuit: test_circuits_recall.cpp.)
//
// The model (d_model 24, 3 heads of 16 per layer, RoPE base 15241, so that rotary pairs 0-3 turn by
// 1, 0.3, 0.09, 0.027 rad per position and pairs 4-7 by under 0.01): the stream has three blocks of 8
// dims, one per token id: A (the token), B (the previous token), C (the token to predict).
//   embedding        token t -> e_A(t)
//   prev-token head  q, k constant (biases) in pairs 0-3, k turned one position back: the score
//                    peaks at key i-1; v copies A, W_O writes it to B
//   induction head   q reads A, k reads B, in the slow pairs 4-7 (content, nearly unrotated): query i
//                    attends to the key whose previous token is its own token; v copies A, W_O
//                    writes to C
//   unembedding      token t <- 10 e_C(t)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <map>
#include <tuple>

#include <xtensor/xview.hpp>

#include "headlab/core/random.hpp"
#include "headlab/lab/circuit_probe.hpp"
#include "headlab/lab/composition.hpp"
#include "headlab/lab/logit_attribution.hpp"
#include "headlab/lab/patching.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/train/trainer.hpp"
#include "circuit_test_models.hpp"
#include "test_support.hpp"

namespace test_circuits {

using namespace headlab;
using headlab::testing::blank_planted_model;
using headlab::testing::clean_accuracy;
using headlab::testing::kHeadDim;
using headlab::testing::kHeads;
using headlab::testing::param;

namespace {

constexpr std::size_t kVocab = 8, kD = 24, kPrevHead = 1, kInductionHead = 2;

// Content dims of a head: rotary pairs 4-7 are dims 4-7 and 12-15 (pair k = dims k and k + 8).
std::size_t content_dim(std::size_t id) { return id < 4 ? 4 + id : 8 + id; }

std::unique_ptr<DecoderOnlyLM<float>> planted_induction_model(bool distractors = true) {
  Generator gen(5);
  auto m = blank_planted_model(kD, 2, 15241.0, kVocab, gen);  // 15241 = 0.3^-8: pair 1 turns 0.3 rad per position
  Array<float>& embed = param(*m, "embed.weight").mutable_value();  // (V, D)
  for (std::size_t t = 0; t < kVocab; ++t) embed(t, t) = 1.0f;
  Array<float>& unembed = param(*m, "lm_head.weight").mutable_value();  // (V, D)
  for (std::size_t t = 0; t < kVocab; ++t) unembed(t, 16 + t) = 10.0f;
  const std::size_t q0 = 0, k0 = kHeads * kHeadDim, v0 = 2 * kHeads * kHeadDim;  // in_proj row blocks
  // Layer 0, previous-token head: q = (12, 0) and k = 12 (cos th, sin th) in each fast pair k < 4.
  {
    Array<float>& b = param(*m, "layers.0.self_attn.in_proj_bias").mutable_value();
    Array<float>& w = param(*m, "layers.0.self_attn.in_proj_weight").mutable_value();
    Array<float>& o = param(*m, "layers.0.self_attn.out_proj.weight").mutable_value();  // (D, h d)
    const std::size_t h = kPrevHead * kHeadDim;
    for (std::size_t k = 0; k < 4; ++k) {
      const double theta = std::pow(15241.0, -2.0 * double(k) / double(kHeadDim));
      b(q0 + h + k) = 12.0f;
      b(k0 + h + k) = float(12.0 * std::cos(theta));
      b(k0 + h + k + 8) = float(12.0 * std::sin(theta));
    }
    for (std::size_t id = 0; id < kVocab; ++id) {
      w(v0 + h + id, id) = 1.0f;      // v: the token (block A)
      o(8 + id, h + id) = 1.0f;       // written to block B
    }
  }
  // Layer 1, induction head: q reads A, k reads B (content dims), v reads A, written to C.
  {
    Array<float>& w = param(*m, "layers.1.self_attn.in_proj_weight").mutable_value();
    Array<float>& o = param(*m, "layers.1.self_attn.out_proj.weight").mutable_value();
    const std::size_t h = kInductionHead * kHeadDim;
    for (std::size_t id = 0; id < kVocab; ++id) {
      w(q0 + h + content_dim(id), id) = 3.0f;
      w(k0 + h + content_dim(id), 8 + id) = 3.0f;
      w(v0 + h + id, id) = 1.0f;
      o(16 + id, h + id) = 1.0f;
    }
  }
  if (distractors) {  // the other heads: small random weights everywhere they have any
    for (std::size_t l = 0; l < 2; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".self_attn.";
      Array<float>& w = param(*m, p + "in_proj_weight").mutable_value();
      Array<float>& o = param(*m, p + "out_proj.weight").mutable_value();
      const std::size_t planted = l == 0 ? kPrevHead : kInductionHead;
      for (std::size_t h = 0; h < kHeads; ++h) {
        if (h == planted) continue;
        for (std::size_t part = 0; part < 3; ++part)
          for (std::size_t r = 0; r < kHeadDim; ++r)
            for (std::size_t j = 0; j < kD; ++j) w(part * kHeads * kHeadDim + h * kHeadDim + r, j) = float(0.5 * gen.normal());
        for (std::size_t j = 0; j < kD; ++j)
          for (std::size_t r = 0; r < kHeadDim; ++r) o(j, h * kHeadDim + r) = float(0.02 * gen.normal());
      }
    }
  }
  return m;
}

TrainOptions induction_options() {
  TrainOptions o = TrainOptions::defaults_for(Task::induction);
  o.vocab = kVocab;
  o.length = 6;
  return o;
}

// Accuracy of the argmax at the probe's position on the clean rows.

}  // namespace

TEST_CASE("circuit probe: induction corruptions keep the query's earlier copy and change the answer") {
  const TrainOptions o = induction_options();
  const CircuitProbe p = make_circuit_probe(o, {32, 3, 0, ""});
  const std::size_t T = o.length;
  REQUIRE(p.clean.shape() == Shape{32, 2 * T});
  CHECK(p.position == 2 * T - 1);
  for (std::size_t b = 0; b < 32; ++b) {
    CHECK(p.clean(b, 0) == 1);
    for (std::size_t t = 1; t < T; ++t) CHECK(p.clean(b, t + T) == p.clean(b, t));  // the copy
    for (std::size_t t = 1; t <= T; ++t)
      if (t != T - 1) CHECK(p.clean(b, t) != p.clean(b, T - 1));  // one earlier copy of the query
    CHECK(p.corrupted(b, T - 1) == p.clean(b, T - 1));
    CHECK(p.clean_answer[b] == p.clean(b, T));
    CHECK(p.corrupted_answer[b] == p.corrupted(b, T));
    CHECK(p.corrupted_answer[b] != p.clean_answer[b]);
    for (std::size_t t = T + 1; t < 2 * T; ++t) CHECK(p.corrupted(b, t) == p.clean(b, t));  // second half kept
  }
  CHECK_THROWS_WITH_AS(make_circuit_probe(TrainOptions::defaults_for(Task::translate)), doctest::Contains("vocabularies"), ValueError);
  CHECK_THROWS_WITH_AS(make_circuit_probe(TrainOptions::defaults_for(Task::lm)), doctest::Contains("lm"), ValueError);
}

TEST_CASE("planted induction circuit: the model solves the task, and only with both planted heads") {
  auto m = planted_induction_model();
  const CircuitProbe probe = make_circuit_probe(induction_options(), {64, 1, 0, ""});
  CHECK(clean_accuracy(*m, probe) >= 0.95);
  // The patterns: layer 0 head 1 reads the previous position; layer 1 head 2 at the last query reads
  // position T, the one after the earlier copy of its token.
  HookPoints<float> hooks;
  hooks.set_caching(true);
  m->set_hooks(&hooks);
  clean_accuracy(*m, probe);
  m->set_hooks(nullptr);
  const Array<float> prev = hooks.cached("blocks.0.attn.hook_pattern").value(), ind = hooks.cached("blocks.1.attn.hook_pattern").value();
  double on_previous = 0, on_match = 0;
  const std::size_t B = probe.clean_answer.size(), L = probe.clean.shape()[1];
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t i = 1; i < L; ++i) on_previous += prev(b, kPrevHead, i, i - 1) / double(B * (L - 1));
    on_match += ind(b, kInductionHead, L - 1, 6) / double(B);
  }
  CHECK(on_previous > 0.95);
  CHECK(on_match > 0.95);
  for (auto [layer, head] : {std::pair<std::size_t, std::size_t>{0, kPrevHead}, {1, kInductionHead}}) {
    Array<float> mask = xt::ones<float>({kHeads});
    mask(head) = 0.0f;
    m->layer(layer).self_attn.set_head_mask(Tensor<float>(mask));
    CHECK(clean_accuracy(*m, probe) < 0.5);  // a planted head removed: the task fails
    m->layer(layer).self_attn.set_head_mask(Tensor<float>());
  }
}

TEST_CASE("planted induction circuit: patching, attribution and composition name the planted heads") {
  LoadedModel m;
  m.options = induction_options();
  m.lm = planted_induction_model();
  const CircuitProbe probe = make_circuit_probe(m.options, {64, 2, 0, ""});
  const std::size_t T = 6;

  SUBCASE("patching: the induction head restores the answer; the rest do not") {
    const PatchingResult r = activation_patching(m, probe);
    CHECK(r.modules == std::vector<std::string>{"blocks.0.attn", "blocks.1.attn"});
    CHECK(r.residual_points == std::vector<std::string>{"blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre", "blocks.1.hook_resid_post"});
    CHECK(r.clean_difference > 5.0);
    CHECK(r.corrupted_difference < -5.0);
    for (std::size_t l = 0; l < 2; ++l)
      for (std::size_t h = 0; h < kHeads; ++h) {
        CAPTURE(l);
        CAPTURE(h);
        if (l == 1 && h == kInductionHead) CHECK(r.heads[l][h] > 0.9);
        else CHECK(std::abs(r.heads[l][h]) < 0.1);
      }
    // The residual: the answer lives at position T (the token after the earlier copy) until the
    // induction head moves it to the last position.
    REQUIRE(r.residual.size() == 3);
    for (std::size_t point = 0; point < 2; ++point)
      for (std::size_t t = 0; t < 2 * T; ++t) {
        CAPTURE(point);
        CAPTURE(t);
        if (t == T) CHECK(r.residual[point][t] > 0.9);
        else CHECK(std::abs(r.residual[point][t]) < 0.1);
      }
    CHECK(r.residual[2][2 * T - 1] > 0.99);  // the final stream at the answer position is the answer
    // Noising: the clean run with the corrupted induction head loses the answer.
    const PatchingResult noise = activation_patching(m, probe, PatchDirection::noise);
    CHECK(noise.heads[1][kInductionHead] < 0.1);
    CHECK(noise.heads[0][kPrevHead] > 0.9);  // the previous token at T is the same in both runs
  }
  SUBCASE("direct logit attribution: exact, and the induction head writes the answer") {
    const LogitAttribution a = direct_logit_attribution(m, probe);
    CHECK(a.max_sum_error < 1e-3);
    const auto top = std::max_element(a.components.begin(), a.components.end(),
                                      [](const LogitComponent& x, const LogitComponent& y) { return x.mean < y.mean; });
    CHECK(top->name == "blocks.1.attn.head2");
    double rest = 0;
    for (const LogitComponent& c : a.components)
      if (c.name != top->name) rest = std::max(rest, std::abs(c.mean));
    CHECK(top->mean > 5.0 * rest);
    // Logit lens: the answer is nowhere in the stream before layer 1, first after it.
    const std::vector<LensLayer> lens = logit_lens(m, probe);
    REQUIRE(lens.size() == 3);
    CHECK(lens[2].top1 >= 0.95);
    CHECK(lens[1].top1 < 0.5);
  }
  SUBCASE("composition: the previous-token head is the induction head's K-writer") {
    const std::vector<CompositionScore> scores = composition_scores(m);
    const CompositionScore* top = nullptr;
    for (const CompositionScore& s : scores)
      if (!top || s.k > top->k) top = &s;
    CHECK(top->writer_head == kPrevHead);
    CHECK(top->reader_head == kInductionHead);
  }
}

// An encoder-decoder: the copy probe, and the tools on an untrained pre-LN copy model, where no head
// is planted: the attribution is still exact, and the patching tables have the model's shape.
TEST_CASE("circuit tools on an encoder-decoder: the copy probe, exact attribution, the tables' shape") {
  TrainOptions o = TrainOptions::defaults_for(Task::copy);
  o.vocab = 11;
  o.length = 7;
  o.d_model = 16;
  o.heads = 2;
  o.layers = 2;
  o.norm_first = true;
  const CircuitProbe p = make_circuit_probe(o, {16, 4, 0, ""});
  REQUIRE(p.clean_source.shape() == Shape{16, 7});
  REQUIRE(p.clean.shape() == Shape{16, 6});
  CHECK(p.position == 5);
  for (std::size_t b = 0; b < 16; ++b) {
    for (std::size_t t = 0; t < 6; ++t) {
      CHECK(p.clean(b, t) == p.clean_source(b, t));  // the decoder reads the source up to x_{n-2}
      CHECK(p.corrupted_source(b, t) == p.clean_source(b, t));
    }
    CHECK(p.clean_answer[b] == p.clean_source(b, 6));
    CHECK(p.corrupted_answer[b] == p.corrupted_source(b, 6));
    CHECK(p.corrupted_answer[b] != p.clean_answer[b]);
  }
  LoadedModel m;
  m.options = o;
  Generator gen(3);
  m.model = std::make_unique<Transformer<float>>(o.model_config(), gen);
  for (auto& [name, t] : m.model->named_parameters())
    for (auto& v : t.mutable_value()) v = float(0.3 * gen.normal());
  m.model->eval();
  const LogitAttribution a = direct_logit_attribution(m, p);
  CHECK(a.max_sum_error < 1e-3);
  std::vector<std::string> names;
  for (const LogitComponent& c : a.components) names.push_back(c.name);
  for (const char* n : {"embed", "decoder.0.attn.head0", "decoder.0.cross_attn.head1", "decoder.1.cross_attn.bias", "decoder.1.mlp"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), n) != names.end(), n);
  const PatchingResult r = activation_patching(m, p);
  CHECK(r.modules == std::vector<std::string>{"encoder.0.attn", "encoder.1.attn", "decoder.0.attn", "decoder.0.cross_attn",
                                              "decoder.1.attn", "decoder.1.cross_attn"});
  REQUIRE(r.residual.size() == 5);
  CHECK(r.residual[0].size() == 7);  // encoder positions
  CHECK(r.residual[4].size() == 6);  // decoder positions
  // Patching the whole source-side stream entering the encoder at the changed position restores
  // everything; no other source position matters.
  CHECK(r.residual[0][6] == doctest::Approx(1.0).epsilon(1e-4));
  for (std::size_t t = 0; t < 6; ++t) CHECK(r.residual[0][t] == doctest::Approx(0.0).epsilon(1e-4));
  o.norm_first = false;
  LoadedModel post;
  post.options = o;
  post.model = std::make_unique<Transformer<float>>(o.model_config(), gen);
  CHECK_THROWS_WITH_AS(direct_logit_attribution(post, p), doctest::Contains("post-LN"), ValueError);
}

TEST_CASE("circuit probe: translate replaces an aligned source word, and the tools take rows of their own lengths") {
  testing::TempDir dir("circuit_translate");
  const std::filesystem::path tsv = dir.write("aligned.tsv",
      "w9 w0 w9 w10\tv9 v0 v9 v10 .\t0-0 1-1 2-2 3-3\n"  // w10 (-> v10) replaced by w9 (-> v9)
      "w1 w1\tv1 v1 .\t0-0 1-1\n"                         // nothing to exchange: one spelling
      "w4 w2 w7\tv4 v2 v7 .\t0-0 1-1 2-2\n"              // w7 replaced by w2
      "w3 w5\tv3 v5 .\n"                                 // no gold links: skipped
      "w3 w5\tv3 v4 v5 .\t0-0 0-1 1-2\n");              // w3 linked twice: nothing one-to-one to exchange
  TrainOptions o = TrainOptions::defaults_for(Task::translate);
  o.train_file = o.valid_file = tsv.string();
  o.tokenizer = "word";
  o.min_freq = 1;
  o.d_model = 16;
  o.heads = 2;
  o.ff_dim = 32;
  o.layers = 1;
  o.steps = 2;
  o.eval_every = 2;
  o.progress = "none";
  o.run_dir = (dir.path / "run").string();
  std::ostringstream log;
  train(o, log);
  LoadedModel m = load_trained_model((dir.path / "run" / "checkpoint.safetensors").string());
  const CircuitProbe p = make_circuit_probe(m, {8, 1, 0, ""});  // the run's --valid file
  REQUIRE(p.clean_answer.size() == 2);
  CHECK(p.row_positions == std::vector<std::size_t>{3, 2});  // <s> v9 v0 v9 | <s> v4 v2
  auto word = [&](std::int64_t id) { return m.tgt_vocab.token(id); };
  CHECK(word(p.clean_answer[0]) == "v10");
  CHECK(word(p.corrupted_answer[0]) == "v9");
  CHECK(word(p.clean_answer[1]) == "v7");
  CHECK(word(p.corrupted_answer[1]) == "v2");
  CHECK(m.src_vocab.token(p.corrupted_source(0, 3)) == "w9");  // w10 replaced by w9
  CHECK(m.src_vocab.token(p.corrupted_source(1, 2)) == "w2");  // w7 replaced by w2
  for (std::size_t k = 0; k < 3; ++k) CHECK(p.corrupted_source(0, k) == p.clean_source(0, k));
  for (std::size_t k : {0, 1, 3}) CHECK(p.corrupted_source(1, k) == p.clean_source(1, k));
  REQUIRE(p.source_padding);
  CHECK((*p.source_padding)(1, 4));    // row 1: 3 words + </s>, then padding
  CHECK(!(*p.source_padding)(1, 3));
  CHECK(p.clean(1, 3) == Vocabulary::pad);  // after its read position
  const LogitAttribution a = direct_logit_attribution(m, p);
  CHECK(a.max_sum_error < 1e-3);
  const PatchingResult r = activation_patching(m, p);
  CHECK(r.residual[0].size() == 5);  // encoder positions (the longest row)
  // A padded row reads as it would alone: row 1 (3 words + </s>, decoder <s> v4 v2) by itself.
  const Array<float> batch = probe_logits(m, p, false);
  IndexArray source = xt::view(p.corrupted_source, xt::range(1, 2), xt::range(0, 4));
  IndexArray decoder = xt::view(p.corrupted, xt::range(1, 2), xt::range(0, 3));
  m.model->eval();
  const Array<float> alone = m.model->forward(source, decoder, Masks{}, nullptr).value();
  for (std::size_t v = 0; v < alone.shape()[2]; ++v) CHECK(batch(1, 2, v) == doctest::Approx(alone(0, 2, v)).epsilon(1e-5));
  CHECK_THROWS_WITH_AS(make_circuit_probe(m, {8, 1, 0, (dir.path / "missing.tsv").string()}), doctest::Contains("missing.tsv"), IOError);
  CHECK_THROWS_WITH_AS(make_circuit_probe(TrainOptions::defaults_for(Task::induction), {8, 1, 0, tsv.string()}),
                       doctest::Contains("data file"), ValueError);
}
}  // namespace test_circuits
