// The standard layer's fast path, attention with the heads read in place from the projections
// (attention/kernels/in_place_heads.hpp), against the composed steps (split, split_heads, sdpa,
// merge_heads): the module's output and every gradient, self- and cross-attention, each mask it
// covers, in float32 and float64; the op's float64 gradcheck; what it refuses; when the module
// takes it and when it must not.
#include <doctest/doctest.h>

#include <cmath>
#include <deque>
#include <limits>
#include <set>
#include <string>

#include "attention/kernels/in_place_heads.hpp"
#include "headlab/attention/attention.hpp"
#include "headlab/core/gradcheck.hpp"
#include "headlab/core/random.hpp"
#include "headlab/nn/hooks.hpp"
#include "headlab/ops/kernel_choice.hpp"
#include "headlab/ops/ops.hpp"
#include "test_support.hpp"

namespace test_in_place_heads {

using namespace headlab;
using headlab::testing::max_diff;

namespace {

// Whether the graph that produced t has a node of op `op`.
template <typename T>
bool graph_has(const Tensor<T>& t, const std::string& op) {
  std::deque<const Node<T>*> todo{t.node().get()};
  std::set<const Node<T>*> seen;
  while (!todo.empty()) {
    const Node<T>* n = todo.front();
    todo.pop_front();
    if (!n || !seen.insert(n).second) continue;
    if (n->op == op) return true;
    for (const auto& in : n->inputs) todo.push_back(in.get());
  }
  return false;
}

struct Case {
  std::string name;
  std::size_t B, h, L, S, d;
  bool cross = false, causal = false, padding = false;
  std::size_t window = 0, sinks = 0;
  std::size_t d_model = 0;  // 0: h d; else head_dim = d is set apart from it
  bool bias = true;
};

const Case cases[] = {
    {"self, no mask", 2, 2, 5, 5, 3},
    {"self, causal", 2, 4, 7, 7, 2, false, true},
    {"self, causal with key padding and a fully hidden batch", 3, 2, 6, 6, 4, false, true, true},
    {"self, window 3 with 1 sink", 2, 2, 9, 9, 2, false, false, false, 3, 1},
    {"cross, L != S, key padding", 3, 2, 4, 6, 3, true, false, true},
    // A head of 17 runs the SIMD body and the tail of every row loop (SSE, AVX2 or AVX-512 width).
    {"self, causal, one sequence, heads of 17 apart from d_model 6, no biases", 1, 2, 5, 5, 17, false, true, false, 0,
     0, 6, false},
    {"cross, heads of 17, no biases", 2, 2, 3, 4, 17, true, false, false, 0, 0, 0, false},
};

template <typename T>
AttentionCall<T> call_of(const Case& c) {
  AttentionCall<T> call;
  call.causal = c.causal;
  if (c.padding) {  // batch 0 hides its last two keys, the last batch every key
    MaskArray m = xt::zeros<bool>({c.B, c.S});
    for (std::size_t j = c.S - 2; j < c.S; ++j) m(0, j) = true;
    for (std::size_t j = 0; j < c.S; ++j) m(c.B - 1, j) = true;
    call.key_padding_mask = m;
  }
  return call;
}

// Output and gradients (of x, memory and every parameter) of one forward and backward.
template <typename T>
struct Run {
  Array<T> out;
  std::vector<Array<T>> grads;
  bool in_place = false;
};

template <typename T>
Run<T> run(const Case& c, bool need_weights) {
  Generator gen(11);
  AttentionConfig config;
  const std::size_t D = c.d_model ? c.d_model : c.h * c.d;
  config.d_model = D;
  config.head_dim = c.d_model ? c.d : 0;
  config.num_heads = c.h;
  config.window = c.window;
  config.sinks = c.sinks;
  config.bias = c.bias;
  MultiHeadAttention<T> mha(config, gen);
  const Tensor<T> x = uniform<T>({c.B, c.L, D}, -1, 1, gen, true);
  const Tensor<T> memory = uniform<T>({c.B, c.S, D}, -1, 1, gen, true);
  const Tensor<T> w = uniform<T>({c.B, c.L, D}, -1, 1, gen);  // upstream gradient
  AttentionCall<T> call = call_of<T>(c);
  call.need_weights = need_weights;  // weights wanted: the composed path
  const Tensor<T> out = c.cross ? mha.forward(x, memory, call).output : mha.forward(x, call).output;
  Run<T> r;
  r.in_place = graph_has(out, "attention_in_place");  // before backward() frees the graph
  sum(out * w).backward();
  r.out = out.value();
  r.grads.push_back(x.grad());
  if (c.cross) r.grads.push_back(memory.grad());
  for (const auto& [name, p] : mha.named_parameters()) r.grads.push_back(p.grad());
  return r;
}

template <typename T>
void compare_with_composed(double tol) {
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Run<T> fast = run<T>(c, false), composed = run<T>(c, true);
    CHECK(fast.in_place);
    CHECK_FALSE(composed.in_place);
    CHECK(max_diff(fast.out, composed.out) <= tol);
    REQUIRE(fast.grads.size() == composed.grads.size());
    for (std::size_t i = 0; i < fast.grads.size(); ++i) {
      CAPTURE(i);
      CHECK(max_diff(fast.grads[i], composed.grads[i]) <= tol);
    }
  }
}

}  // namespace

TEST_CASE("heads read in place: attention module output and gradients equal the composed path, float32") {
  compare_with_composed<float>(1e-6);
}

TEST_CASE("heads read in place: attention module output and gradients equal the composed path, float64") {
  compare_with_composed<double>(1e-13);
}

TEST_CASE("heads read in place: attention_in_place float64 gradcheck, self and cross, with masks") {
  Generator gen(4);
  const std::size_t B = 2, h = 2, L = 4, S = 5, d = 3;
  MaskArray positions = position_mask({0, 1, 2, 3}, {0, 1, 2, 3}, true, 0, 0);
  MaskArray padding = xt::zeros<bool>({B, S});
  padding(1, 4) = true;
  SUBCASE("self-attention, causal, columns in the order v, q, k") {
    const TensorD src = uniform<double>({B, L, 3 * h * d}, -1, 1, gen, true);
    ScoreMask hide;
    hide.positions = &positions;
    const GradcheckResult r = gradcheck(
        "attention_in_place",
        [&](const std::vector<TensorD>& in) {
          InPlaceHeads<double> heads{in[0], TensorD(), h * d, 2 * h * d, 0, h, d};
          return attention_in_place(heads, hide, 0.7);
        },
        {src});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("cross-attention with key padding and a column no head reads") {
    const TensorD q = uniform<double>({B, L, h * d + 1}, -1, 1, gen, true);
    const TensorD kv = uniform<double>({B, S, 2 * h * d}, -1, 1, gen, true);
    ScoreMask hide;
    hide.padding = &padding;
    const GradcheckResult r = gradcheck(
        "attention_in_place",
        [&](const std::vector<TensorD>& in) {
          InPlaceHeads<double> heads{in[0], in[1], 1, 0, h * d, h, d};
          return attention_in_place(heads, hide, 0.5);
        },
        {q, kv});
    CHECK_MESSAGE(r.ok, r.message);
  }
}

TEST_CASE("heads read in place: attention_in_place refuses overlapping or outlying columns and bad masks") {
  Generator gen(2);
  const TensorD src = uniform<double>({2, 3, 12}, -1, 1, gen);
  auto heads = [&](std::size_t q_col, std::size_t k_col, std::size_t v_col) {
    return InPlaceHeads<double>{src, TensorD(), q_col, k_col, v_col, 2, 2};
  };
  CHECK_NOTHROW(attention_in_place(heads(0, 4, 8), {}, 1.0));
  CHECK_THROWS_AS(attention_in_place(heads(0, 2, 8), {}, 1.0), ShapeError);   // q and k overlap
  CHECK_THROWS_AS(attention_in_place(heads(0, 4, 10), {}, 1.0), ShapeError);  // v runs past the row
  MaskArray wrong = xt::zeros<bool>({2, 4});
  ScoreMask padding;
  padding.padding = &wrong;
  CHECK_THROWS_AS(attention_in_place(heads(0, 4, 8), padding, 1.0), ShapeError);
  MaskArray any = xt::zeros<bool>({3, 3});
  ScoreMask mask;
  mask.mask = &any;
  CHECK_THROWS_AS(attention_in_place(heads(0, 4, 8), mask, 1.0), ValueError);
}

TEST_CASE("heads read in place: the attention module keeps the composed path where the fast one does not apply") {
  Generator gen(3);
  AttentionConfig config;
  config.d_model = 8;
  config.num_heads = 2;
  const TensorD x = uniform<double>({2, 5, 8}, -1, 1, gen, true);
  const TensorD memory = uniform<double>({2, 4, 8}, -1, 1, gen, true);
  // Whether one forward (self-attention, or cross-attention on `memory`) took the fast path.
  auto in_place = [&](const AttentionConfig& c, const AttentionCall<double>& call, bool cross = false,
                      bool training = true) {
    Generator g(5);
    MultiHeadAttention<double> mha(c, g);
    mha.train(training);
    return graph_has(cross ? mha.forward(x, memory, call).output : mha.forward(x, call).output, "attention_in_place");
  };
  CHECK(in_place(config, {}));
  CHECK(in_place(config, {}, true));
  AttentionConfig off = config;
  off.heads_in_place = false;
  CHECK_FALSE(in_place(off, {}));
  AttentionConfig gqa = config;
  gqa.num_kv_heads = 1;
  CHECK_FALSE(in_place(gqa, {}));
  AttentionConfig rope = config;
  rope.rope = true;
  CHECK_FALSE(in_place(rope, {}));
  AttentionConfig latent = config;
  latent.latent_dim = 4;
  CHECK_FALSE(in_place(latent, {}));
  AttentionConfig gated = config;
  gated.gate = GateKind::headwise;
  CHECK_FALSE(in_place(gated, {}));
  AttentionConfig tiled = config;
  tiled.flash = true;
  CHECK_FALSE(in_place(tiled, {}));
  AttentionCall<double> causal;
  causal.causal = true;
  CHECK(in_place(config, causal));
  CHECK_FALSE(in_place(config, causal, true));  // causal cross-attention: positions the kernel does not take
  AttentionConfig with_dropout = config;
  with_dropout.dropout = 0.5;
  Generator drops(8);
  AttentionCall<double> dropping;
  dropping.generator = &drops;
  CHECK_FALSE(in_place(with_dropout, dropping));                    // training: dropout on the weights
  CHECK(in_place(with_dropout, dropping, false, /*training=*/false));  // eval: no dropout
  AttentionCall<double> masked;
  masked.attn_mask = MaskArray(xt::zeros<bool>({std::size_t(5), std::size_t(5)}));
  CHECK_FALSE(in_place(config, masked));
  AttentionCall<double> biased;
  biased.attn_bias = Array<double>(xt::zeros<double>({std::size_t(5), std::size_t(5)}));
  CHECK_FALSE(in_place(config, biased));
  AttentionCall<double> weights;
  weights.need_weights = true;
  CHECK_FALSE(in_place(config, weights));
  AttentionCall<double> head_mask;
  head_mask.head_mask = ones<double>({2});
  CHECK_FALSE(in_place(config, head_mask));
  {
    KernelChoiceScope course(KernelChoice::course);  // the course tasks' regions must run
    CHECK_FALSE(in_place(config, {}));
  }
  Generator g(5);
  MultiHeadAttention<double> watched(config, g);
  HookPoints<double> hooks;
  watched.set_hooks(&hooks, "layer.");
  CHECK_FALSE(graph_has(watched.forward(x).output, "attention_in_place"));
  watched.set_hooks(nullptr, "");
  watched.set_taps(true);
  CHECK_FALSE(graph_has(watched.forward(x).output, "attention_in_place"));
  KVCache<double> cache;
  MultiHeadAttention<double> cached(config, g);
  CHECK_FALSE(graph_has(cached.forward(x, {}, &cache).output, "attention_in_place"));
}
}  // namespace test_in_place_heads
