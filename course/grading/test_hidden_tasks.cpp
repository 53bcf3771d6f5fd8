// The instructor's hidden tests (docs/course.md, "Grading"): more cases per task, named
// "task <id>: hidden: ...", with the same rules as tests/course/test_course_tasks.cpp (each runs
// only its task's code and its prerequisites', expected values from the definitions, random inputs
// from seed(), which HEADLAB_COURSE_SEED moves). Students never see them: `headlab course grade
// --instructor` runs them next to the public ones.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "course/course_checks.hpp"
#include "headlab/data/batching.hpp"
#include "headlab/data/bleu.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/train/decoding.hpp"

TEST_CASE("task 0.1: hidden: a leaf used by three paths and twice by one op") {
  Generator gen(seed(1001));
  TensorD x = uniform<double>({3}, -1, 1, gen, true);
  const TensorD y = sum((x + x) * 2.0 + tanh(x) + exp(x) * 0.5);  // dy/dx = 4 + (1 - tanh^2) + exp / 2
  y.backward();
  for (std::size_t i = 0; i < 3; ++i) {
    const double v = x.value()(i), t = std::tanh(v);
    CHECK(x.grad()(i) == doctest::Approx(4 + (1 - t * t) + std::exp(v) / 2).epsilon(1e-12));
  }
  CHECK_THROWS_AS(y.backward(), AutogradError);
}

TEST_CASE("task 0.2: hidden: a wrong third input is reported, the right ones are not") {
  const GradcheckFn wrong = [](const std::vector<TensorD>& in) {
    const Array<double> y = in[0].value() + in[1].value() + in[2].value() * in[2].value();
    return make_result<double>("wrong_square", y, {in[0], in[1], in[2]}, [](Node<double>& out) {
      accumulate_grad(*out.inputs[0], Array<double>(out.grad), "wrong_square");
      accumulate_grad(*out.inputs[1], Array<double>(out.grad), "wrong_square");
      accumulate_grad(*out.inputs[2], Array<double>(out.grad * 3.0 * out.inputs[2]->value), "wrong_square");
    });
  };
  Generator gen(seed(1002));
  std::vector<TensorD> in;
  for (int i = 0; i < 3; ++i) in.push_back(uniform<double>({2}, 0.5, 1, gen, true));
  const GradcheckResult r = gradcheck("wrong_square", wrong, in);
  CHECK(!r.ok);
  CHECK(r.message.find("input 2") != std::string::npos);
  CHECK(r.message.find("input 0") == std::string::npos);
  CHECK(r.message.find("input 1") == std::string::npos);
}

TEST_CASE("task 0.3: hidden: mul broadcasting on both sides at once") {
  const GradcheckFn f = [](const std::vector<TensorD>& in) { return in[0] * in[1]; };
  check_gradients("mul (2, 1, 3, 1) * (1, 4, 1, 5)", f, {{2, 1, 3, 1}, {1, 4, 1, 5}}, -1, 1, 1003);
  check_gradients("mul (1, 1) * (3, 1)", f, {{1, 1}, {3, 1}}, -1, 1, 1004);
}

TEST_CASE("task 0.4: hidden: div broadcasting on both sides, and x / x") {
  const GradcheckFn f = [](const std::vector<TensorD>& in) { return in[0] / in[1]; };
  check_gradients("div (3, 1) / (1, 4)", f, {{3, 1}, {1, 4}}, 0.5, 1.5, 1005);
  check_gradients("div x / x", [](const std::vector<TensorD>& in) { return in[0] / in[0]; }, {{2, 2}}, 0.5, 1.5, 1006);
}

TEST_CASE("task 0.5: hidden: matmul with vectors as matrices and a two-axis broadcast batch") {
  const GradcheckFn f = [](const std::vector<TensorD>& in) { return matmul(in[0], in[1]); };
  check_gradients("matmul (1, 3) @ (3, 1)", f, {{1, 3}, {3, 1}}, -1, 1, 1007);
  check_gradients("matmul (2, 2, 2, 3) @ (2, 1, 3, 4)", f, {{2, 2, 2, 3}, {2, 1, 3, 4}}, -1, 1, 1008);
  check_gradients("matmul (2, 3, 4) @ (4, 1)", f, {{2, 3, 4}, {4, 1}}, -1, 1, 1009);
}

TEST_CASE("task 0.6: hidden: softmax over the third axis of four, of a freed input, and over an axis of one") {
  check_gradients("softmax axis 2 of 4", [](const std::vector<TensorD>& in) { return softmax(in[0] * 3.0, 2); },
                  {{2, 2, 3, 2}}, -1, 1, 1010);
  Generator gen(seed(1011));
  TensorD x = uniform<double>({3, 1}, -1, 1, gen, true);
  Array<double> dy = xt::zeros<double>({3, 1});
  dy(0, 0) = 1.0;
  dy(1, 0) = -2.0;
  dy(2, 0) = 3.0;
  softmax(x, 1).backward(dy);  // y = 1 everywhere: dx = 0
  for (std::size_t i = 0; i < 3; ++i) CHECK(x.grad()(i, 0) == doctest::Approx(0.0).scale(1.0).epsilon(1e-14));
}

TEST_CASE("task 0.7: hidden: log_softmax over the first axis of a freed input") {
  check_gradients("log_softmax axis 0", [](const std::vector<TensorD>& in) { return log_softmax(in[0] - 1.0, 0); },
                  {{4, 2, 3}}, -2, 2, 1012);
}

TEST_CASE("task 1.1: hidden: split into heads of one channel") {
  Generator gen(seed(1013));
  const TensorD x = uniform<double>({1, 2, 3}, -1, 1, gen);
  const TensorD y = split_heads(x, 3);
  REQUIRE(y.shape() == Shape{1, 3, 2, 1});
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t t = 0; t < 2; ++t) CHECK(y.value()(0, i, t, 0) == x.value()(0, t, i));
}

TEST_CASE("task 1.2: hidden: merge of one token and of one head") {
  Generator gen(seed(1014));
  const TensorD x = uniform<double>({3, 2, 1, 2}, -1, 1, gen);
  const TensorD y = merge_heads(x);
  REQUIRE(y.shape() == Shape{3, 1, 4});
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t i = 0; i < 2; ++i)
      for (std::size_t c = 0; c < 2; ++c) CHECK(y.value()(b, 0, i * 2 + c) == x.value()(b, i, 0, c));
  const TensorD one = uniform<double>({2, 1, 3, 4}, -1, 1, gen);
  CHECK(max_diff(merge_heads(one).value(), xt::view(one.value(), xt::all(), 0)) == 0.0);
}

TEST_CASE("task 2.1: hidden: three query heads per kv head, a (B, h, L, S) bias") {
  Generator gen(seed(1015));
  const std::size_t B = 2, h = 6, hkv = 2, L = 2, S = 3, d = 2, dv = 2;
  const TensorD q = attention_input({B, h, L, d}, gen), k = attention_input({B, hkv, S, d}, gen),
                v = attention_input({B, hkv, S, dv}, gen);
  SdpaOptions<double> opt;
  opt.attn_bias = uniform<double>({1, 1, L, S}, -1, 1, gen).value();
  const Array<double> bias = xt::view(*opt.attn_bias, 0, 0);
  check_sdpa_against_loops(q, k, v, opt, [&](std::size_t) { return MaskArray(xt::zeros<bool>({L, S})); }, bias,
                           1 / std::sqrt(double(d)));
  // Dropout configured but not training: exactly the formula, and no weights unless asked.
  Generator drop(seed(1016));
  opt.dropout = 0.9;
  opt.generator = &drop;
  check_sdpa_against_loops(q, k, v, opt, [&](std::size_t) { return MaskArray(xt::zeros<bool>({L, S})); }, bias,
                           1 / std::sqrt(double(d)));
  CHECK_FALSE(scaled_dot_product_attention(q, k, v, opt).weights.defined());
}

TEST_CASE("task 2.2: hidden: a window of one, two sinks, and a window without causal") {
  // Window 1: each query sees itself and the sinks 0 and 1.
  CHECK(position_mask({3}, {0, 1, 2, 3}, false, 1, 2) == mask_of({0, 0, 1, 0}, {1, 4}));
  // A window implies causal: key 5 is ahead of query 4.
  CHECK(position_mask({4}, {3, 4, 5}, false, 2, 0) == mask_of({0, 0, 1}, {1, 3}));
  // Sinks larger than every position: nothing outside the causal mask is hidden.
  CHECK(position_mask({2}, {0, 1, 2}, true, 1, 5) == mask_of({0, 0, 0}, {1, 3}));
}

TEST_CASE("task 2.3: hidden: causal with L = S and a padding mask that hides all but one key") {
  Generator gen(seed(1017));
  const std::size_t B = 2, h = 1, L = 3, S = 3, d = 2;
  const TensorD q = attention_input({B, h, L, d}, gen), k = attention_input({B, h, S, d}, gen),
                v = attention_input({B, h, S, d}, gen);
  SdpaOptions<double> opt;
  opt.causal = true;
  opt.key_padding_mask = mask_of({0, 1, 1,  //
                                  0, 0, 0},
                                 {B, S});
  check_sdpa_against_loops(q, k, v, opt, [&](std::size_t b) {
    MaskArray m = MaskArray::from_shape({L, S});
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t j = 0; j < S; ++j) m(i, j) = j > i || (*opt.key_padding_mask)(b, j);
    return m;
  }, xt::zeros<double>({L, S}), 1 / std::sqrt(double(d)));
}

TEST_CASE("task 3.1: hidden: layer norm backward on a wide row, through a freed input") {
  check_gradients(
      "layer_norm (3, 9)", [](const std::vector<TensorD>& in) { return layer_norm(in[0] * 2.0, in[1], in[2], 1e-5); },
      {{3, 9}, {9}, {9}}, -1, 1, 1018);
}

TEST_CASE("task 4.1: hidden: another ignore_index, two ignored rows, strong smoothing") {
  Generator gen(seed(1019));
  const IndexArray targets = {2, -1, 0, -1, 1};
  for (double eps : {0.3, 1.0}) {
    CAPTURE(eps);
    check_gradients(
        "cross_entropy", [&](const std::vector<TensorD>& in) { return cross_entropy(in[0], targets, -1, eps); },
        {{5, 3}}, -3, 3, 1020);
  }
  // Huge logits: the row maximum must be subtracted before exp.
  const TensorD big(Array<double>{{1000.0, 0.0}}, true);
  const double loss = cross_entropy(big, IndexArray{0}, -100, 0.0).value()();
  CHECK(std::isfinite(loss));
  CHECK(loss == doctest::Approx(0.0).scale(1.0));
}

TEST_CASE("task 4.2: hidden: AdamW without weight decay is Adam, over five steps") {
  Generator gen(seed(1021));
  TensorD p = uniform<double>({4}, -1, 1, gen, true), q(p.value(), true);
  AdamOptions o;
  o.lr = 0.05;
  Adam<double> adam({p}, o);
  AdamW<double> adamw({q}, o);
  for (int t = 0; t < 5; ++t) {
    const Array<double> g = uniform<double>({4}, -1, 1, gen).value();
    adam.zero_grad();
    adamw.zero_grad();
    accumulate_grad(*p.node(), Array<double>(g), "test");
    accumulate_grad(*q.node(), Array<double>(g), "test");
    adam.step();
    adamw.step();
  }
  CHECK(max_diff(p.value(), q.value()) < 1e-15);
  // The first step of Adam moves every element by lr (m_hat / sqrt(v_hat) = sign(g)), up to eps.
  TensorD r = from_data<double>({0.0, 0.0}, {2}, true);
  Adam<double> one({r}, o);
  accumulate_grad(*r.node(), Array<double>{0.5, -2.0}, "test");
  one.step();
  CHECK(r.value()(0) == doctest::Approx(-0.05).epsilon(1e-6));
  CHECK(r.value()(1) == doctest::Approx(0.05).epsilon(1e-6));
}

TEST_CASE("task 4.3: hidden: the Noam schedule with a warmup of one step") {
  const NoamSchedule noam(64, 1, 1.0);
  for (std::size_t s : {std::size_t(1), std::size_t(2), std::size_t(9)})
    CHECK(noam.lr(s) == doctest::Approx(std::pow(64.0, -0.5) / std::sqrt(double(s))).epsilon(1e-12));
}

TEST_CASE("task 4.4: hidden: window 2 with two sinks, one kv head per query head, a prefill of 3") {
  AttentionConfig cfg;
  cfg.d_model = 8;
  cfg.num_heads = 2;
  cfg.window = 2;
  cfg.sinks = 2;
  Generator gen(seed(1022));
  MultiHeadAttention<double> mha(cfg, gen);
  const TensorD x = uniform<double>({1, 7, cfg.d_model}, -1, 1, gen);
  AttentionCall<double> call;
  call.causal = true;
  NoGradGuard no_grad;
  const Array<double> full = mha.forward(x, call).output.value();
  KVCache<double> cache;
  std::vector<TensorD> parts{mha.forward(narrow(x, 1, 0, 3), call, &cache).output};
  for (std::size_t t = 3; t < 7; ++t) parts.push_back(mha.forward(narrow(x, 1, t, 1), call, &cache).output);
  CHECK(max_diff(concat(parts, 1).value(), full) < 1e-12);
  CHECK(cache.positions() == std::vector<std::int64_t>{0, 1, 5, 6});
}

TEST_CASE("task 5.1: hidden: every hypothesis's score is its log-probability over the length penalty") {
  auto model = small_transformer<double>(6, seed(1023));
  const SourceBatch batch = make_source_batch({{3, 4, 5, 2}, {5, 2}, {4, 4, 2}});
  DecodeOptions o;
  o.beam = 3;
  o.length_penalty = 0.6;
  const auto out = beam_search(*model, batch, o);
  REQUIRE(out.size() == 3);
  for (const auto& hyp : out) {
    REQUIRE(!hyp.tokens.empty());
    CHECK(hyp.score == doctest::Approx(hyp.log_prob / gnmt_length_penalty(hyp.tokens.size(), 0.6)).epsilon(1e-12));
    CHECK(hyp.log_prob <= 0.0);
  }
  o.beam = 1;
  o.length_penalty = 0;
  const auto greedy = greedy_translate(*model, batch, o);
  const auto beam1 = beam_search(*model, batch, o);
  for (std::size_t b = 0; b < 3; ++b) CHECK(beam1[b].tokens == greedy[b].tokens);
}

TEST_CASE("task 5.2: hidden: a perfect corpus scores 1, an empty hypothesis has no brevity") {
  using Sentences = std::vector<std::vector<std::string>>;
  const Sentences same = {{"a", "b", "c", "d", "e"}, {"f", "g", "h", "i"}};
  const BleuScore s = corpus_bleu(same, same);
  CHECK(s.bleu == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(s.brevity_penalty == 1.0);
  const BleuScore empty = corpus_bleu(Sentences{{"a", "b"}}, Sentences{{}});
  CHECK(empty.brevity_penalty == 0.0);
  CHECK(empty.bleu == 0.0);
  CHECK(empty.totals == std::array<std::size_t, 4>{1, 1, 1, 1});
}

TEST_CASE("task 6.1: hidden: every elementwise gate value against its formula") {
  AttentionConfig c;
  c.d_model = 4;
  c.num_heads = 2;
  c.gate = GateKind::elementwise;
  Generator gen(seed(1024));
  MultiHeadAttention<double> mha(c, gen);
  const TensorD x = uniform<double>({1, 3, c.d_model}, -1, 1, gen);
  NoGradGuard no_grad;
  const Array<double> gate = mha.forward(x).gate.value();  // (1, h, T, d)
  const Array<double> w = mha.parameter("gate_proj.weight").value(), b = mha.parameter("gate_proj.bias").value();
  REQUIRE(gate.shape() == Shape{1, 2, 3, 2});
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t ch = 0; ch < 2; ++ch) {
        double s = b(i * 2 + ch);
        for (std::size_t e = 0; e < c.d_model; ++e) s += x.value()(0, t, e) * w(i * 2 + ch, e);
        CHECK(gate(0, i, t, ch) == doctest::Approx(sigmoid_of(s)).epsilon(1e-12));
      }
}

TEST_CASE("task 6.2: hidden: a site the loss never reaches scores 0, and the mean is over three batches") {
  AttentionConfig c;
  c.d_model = 6;
  c.num_heads = 3;
  Generator gen(seed(1025));
  MultiHeadAttention<float> used(c, gen), unused(c, gen);
  std::vector<AttentionSite> sites{{"used", "self", 0, &used}, {"unused", "self", 1, &unused}};
  std::vector<Tensor<float>> xs;
  for (int b = 0; b < 3; ++b) xs.push_back(uniform<float>({1, 4, 6}, -1, 1, gen));
  const auto loss = [&](std::size_t b) { return sum(used.forward(xs[b]).output); };
  const HeadMask mask = {{1.0f, 0.0f, 0.5f}, {1.0f, 1.0f, 1.0f}};
  const HeadImportance imp = head_importance(sites, mask, xs.size(), loss);
  for (std::size_t h = 0; h < 3; ++h) {
    CHECK(imp.raw[1][h] == 0.0);
    CHECK(imp.normalised[1][h] == 0.0);
  }
  // Each batch's |dL/dxi_h| by differences on constant masks (the loss is linear in xi_h).
  NoGradGuard no_grad;
  for (std::size_t h = 0; h < 3; ++h) {
    double total = 0;
    for (std::size_t b = 0; b < 3; ++b) {
      HeadMask up = mask, down = mask;
      up[0][h] += 0.25f;
      down[0][h] -= 0.25f;
      apply_head_mask(sites, up);
      const double l_up = loss(b).value()();
      apply_head_mask(sites, down);
      total += std::abs((l_up - loss(b).value()()) / 0.5);
    }
    CAPTURE(h);
    CHECK(imp.raw[0][h] == doctest::Approx(total / 3).epsilon(1e-3).scale(1e-1));
  }
}
