// Sampling the next token (temperature, top-k, top-p, greedy) and generation with a KV cache
// against recomputation, across the context-window crop.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "headlab/train/generation.hpp"
#include "headlab/train/sampling.hpp"
#include "headlab/train/token_codec.hpp"

namespace test_generation {

using namespace headlab;

namespace {

// softmax(z / T), written out here rather than taken from the code under test.
std::vector<double> softmax_at(const std::vector<float>& z, double T) {
  double m = -std::numeric_limits<double>::infinity();
  for (float v : z) m = std::max(m, double(v));
  std::vector<double> p;
  double total = 0;
  for (float v : z) total += std::exp((double(v) - m) / T);
  for (float v : z) p.push_back(std::exp((double(v) - m) / T) / total);
  return p;
}

// How often each token is drawn in `draws` samples.
std::vector<double> frequencies(const std::vector<float>& z, const SamplingOptions& o, std::uint64_t seed,
                                std::size_t draws) {
  Generator gen(seed);
  std::vector<double> f(z.size(), 0.0);
  for (std::size_t i = 0; i < draws; ++i) f.at(static_cast<std::size_t>(sample_next_token(z, o, gen))) += 1.0;
  for (double& v : f) v /= double(draws);
  return f;
}

// Each frequency within 5 standard deviations of a binomial proportion, sqrt(p (1 - p) / N), of its
// probability (a false alarm about once in 10^6 tokens checked), plus a small floor for p near 0 or 1.
void check_frequencies_match(const std::vector<double>& freq, const std::vector<double>& p, std::size_t draws) {
  REQUIRE(freq.size() == p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double bound = 5.0 * std::sqrt(p[i] * (1.0 - p[i]) / double(draws)) + 1e-9;
    INFO("token " << i << ": frequency " << freq[i] << ", probability " << p[i] << ", bound " << bound);
    CHECK(std::abs(freq[i] - p[i]) <= bound);
  }
}

std::vector<float> random_logits(std::uint64_t seed, std::size_t V, double scale = 2.0) {
  Generator gen(seed);
  std::vector<float> z;
  for (std::size_t i = 0; i < V; ++i) z.push_back(static_cast<float>(scale * gen.normal()));
  return z;
}

std::size_t argmax_of(const std::vector<float>& z) {
  return static_cast<std::size_t>(std::max_element(z.begin(), z.end()) - z.begin());
}

TransformerConfig lm_config(std::size_t max_len) {
  TransformerConfig c;
  c.d_model = 16;
  c.ff_dim = 32;
  c.decoder_layers = 2;
  c.dropout = 0.0;
  c.attention.num_heads = 2;
  c.src_vocab = c.tgt_vocab = 11;
  c.max_len = max_len;
  return c;
}

// What the model sees at each step, computed here: the full causal forward over the last
// min(n, max_len) tokens of the sequence, its last row.
std::vector<float> reference_logits(DecoderOnlyLM<float>& lm, const std::vector<std::int64_t>& sequence) {
  const std::size_t max_len = lm.config().max_len;
  const std::size_t start = sequence.size() > max_len ? sequence.size() - max_len : 0;
  IndexArray ids = IndexArray::from_shape({1, sequence.size() - start});
  for (std::size_t i = start; i < sequence.size(); ++i) ids(0, i - start) = sequence[i];
  NoGradGuard no_grad;
  const Array<float> z = lm.forward(ids, nullptr).value();
  const std::size_t T = z.shape()[1], V = z.shape()[2];
  return std::vector<float>(z.data() + (T - 1) * V, z.data() + T * V);
}

struct Run {
  std::vector<std::int64_t> tokens;
  std::vector<std::vector<float>> logits;  // per generated token
};

Run run_generation(DecoderOnlyLM<float>& lm, const std::vector<std::int64_t>& prompt, std::size_t n,
                   const SamplingOptions& o, std::uint64_t seed, ContextPath path) {
  Run r;
  Generator gen(seed);
  r.tokens = generate(lm, prompt, n, o, gen,
                      [&](const GeneratedToken& t) {
                        r.logits.push_back(*t.logits);
                        return true;
                      },
                      path);
  return r;
}

void check_close(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t v = 0; v < a.size(); ++v) CHECK(a[v] == doctest::Approx(b[v]).epsilon(1e-4));
}

}  // namespace

TEST_CASE("sample_next_token: temperature 0 is the argmax (lowest id on ties) and draws no random number") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> z = random_logits(seed, 9);
    Generator gen(7), untouched(7);
    SamplingOptions greedy;
    greedy.temperature = 0.0;
    CHECK(sample_next_token(z, greedy, gen) == std::int64_t(argmax_of(z)));
    CHECK(gen.next_u64() == untouched.next_u64());
  }
  Generator gen(1);
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  CHECK(sample_next_token({0.5f, 2.0f, -1.0f, 2.0f}, greedy, gen) == 1);
}

TEST_CASE("sample_next_token: top-k 1 and a tiny top-p are greedy at any temperature") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<float> z = random_logits(seed, 9, 0.3);  // flat: plain sampling would wander
    Generator gen(seed);
    SamplingOptions top1, nucleus;
    top1.temperature = nucleus.temperature = 2.0;
    top1.top_k = 1;
    nucleus.top_p = 1e-9;
    for (int draw = 0; draw < 20; ++draw) {
      CHECK(sample_next_token(z, top1, gen) == std::int64_t(argmax_of(z)));
      CHECK(sample_next_token(z, nucleus, gen) == std::int64_t(argmax_of(z)));
    }
  }
}

TEST_CASE("sample_next_token: frequencies over many draws match softmax(z / T)") {
  const std::vector<float> z = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, -2.0f};
  const std::size_t draws = 40000;
  for (double T : {1.0, 0.5, 3.0}) {
    INFO("temperature " << T);
    SamplingOptions o;
    o.temperature = T;
    check_frequencies_match(frequencies(z, o, 11, draws), softmax_at(z, T), draws);
  }
}

TEST_CASE("sample_next_token: top-k and top-p never draw a filtered-out token, and renormalise the rest") {
  // Probabilities 0.5, 0.3, 0.15, 0.05 at T = 1 (logits are their logs).
  const std::vector<float> z = {std::log(0.3f), std::log(0.05f), std::log(0.5f), std::log(0.15f)};
  const std::size_t draws = 40000;
  SUBCASE("top-k 2 keeps tokens 2 and 0") {
    SamplingOptions o;
    o.top_k = 2;
    check_frequencies_match(frequencies(z, o, 3, draws), {0.375, 0.0, 0.625, 0.0}, draws);
  }
  SUBCASE("top-p 0.7 keeps 0.5 + 0.3, the fewest that reach it") {
    SamplingOptions o;
    o.top_p = 0.7;
    check_frequencies_match(frequencies(z, o, 4, draws), {0.375, 0.0, 0.625, 0.0}, draws);
  }
  SUBCASE("top-p 0.9 keeps 0.5 + 0.3 + 0.15") {
    SamplingOptions o;
    o.top_p = 0.9;
    check_frequencies_match(frequencies(z, o, 5, draws), {0.3 / 0.95, 0.0, 0.5 / 0.95, 0.15 / 0.95}, draws);
  }
  SUBCASE("top-k 3 then top-p 0.6 of what it left: 0.5 / 0.95 < 0.6 <= 0.8 / 0.95") {
    SamplingOptions o;
    o.top_k = 3;
    o.top_p = 0.6;
    check_frequencies_match(frequencies(z, o, 6, draws), {0.375, 0.0, 0.625, 0.0}, draws);
  }
  SUBCASE("ties are ranked by id: top-k 2 of four equal logits keeps ids 0 and 1") {
    SamplingOptions o;
    o.top_k = 2;
    const std::vector<double> p = next_token_probabilities({1.0f, 1.0f, 1.0f, 1.0f}, o);
    // (Element by element: GCC 12.2 at -O2 -march=native with AVX-512 builds the constant
    // std::vector<double>{0.5, 0.5, 0.0, 0.0} as four times 0.5.)
    REQUIRE(p.size() == 4);
    CHECK(p[0] == 0.5);
    CHECK(p[1] == 0.5);
    CHECK(p[2] == 0.0);
    CHECK(p[3] == 0.0);
  }
  SUBCASE("top-k beyond the vocabulary keeps every token") {
    SamplingOptions o;
    o.top_k = 100;
    const std::vector<double> p = next_token_probabilities(z, o), all = softmax_at(z, 1.0);
    for (std::size_t i = 0; i < z.size(); ++i) CHECK(p[i] == doctest::Approx(all[i]).epsilon(1e-12));
  }
}

TEST_CASE("sample_next_token: the same seed draws the same tokens, another seed others") {
  const std::vector<float> z = random_logits(2, 16, 0.5);
  auto draws = [&](std::uint64_t seed) {
    Generator gen(seed);
    std::vector<std::int64_t> out;
    for (int i = 0; i < 30; ++i) out.push_back(sample_next_token(z, SamplingOptions{}, gen));
    return out;
  };
  CHECK(draws(5) == draws(5));
  CHECK(draws(5) != draws(6));
}

TEST_CASE("sample_next_token: bad options and non-finite logits are refused") {
  Generator gen(1);
  const std::vector<float> z = {0.0f, 1.0f};
  SamplingOptions o;
  o.temperature = -0.5;
  CHECK_THROWS_WITH_AS(sample_next_token(z, o, gen), doctest::Contains("temperature must be >= 0"), ValueError);
  o.temperature = std::nan("");
  CHECK_THROWS_AS(sample_next_token(z, o, gen), ValueError);
  o = SamplingOptions{};
  for (double p : {0.0, 1.5, -0.1, std::nan("")}) {
    o.top_p = p;
    CHECK_THROWS_WITH_AS(sample_next_token(z, o, gen), doctest::Contains("top_p must be in (0, 1]"), ValueError);
  }
  o = SamplingOptions{};
  CHECK_THROWS_WITH_AS(sample_next_token({0.0f, std::nanf("")}, o, gen), doctest::Contains("token 1"), ValueError);
  CHECK_THROWS_AS(sample_next_token({}, o, gen), ValueError);
}

TEST_CASE("generate: the KV cache gives the logits and tokens of recomputation, across the context crop") {
  // max_len 8: a prompt of 3 and 14 new tokens pass the window after 5, so the window slides 9 times.
  struct Variant {
    const char* name;
    bool rope;
    std::size_t kv_heads, window, sinks = 0, latent_dim = 0, rope_dim = 0;
  };
  for (const Variant& variant :
       {Variant{"sinusoidal positions", false, 0, 0}, Variant{"rope, one kv head", true, 1, 0},
        Variant{"sliding window 3", false, 0, 3}, Variant{"sliding window 3 and 1 sink", true, 0, 3, 1},
        Variant{"latent K/V 8 with a rotary key of 4", true, 0, 0, 0, 8, 4},
        Variant{"latent K/V 8 under a window of 4 and 2 sinks", false, 0, 4, 2, 8}}) {
    INFO(std::string(variant.name));
    TransformerConfig c = lm_config(8);
    c.attention.rope = variant.rope;
    c.attention.num_kv_heads = variant.kv_heads;
    c.attention.window = variant.window;
    c.attention.sinks = variant.sinks;
    c.attention.latent_dim = variant.latent_dim;
    c.attention.rope_dim = variant.rope_dim;
    Generator init(3);
    DecoderOnlyLM<float> lm(c, init);
    const std::vector<std::int64_t> prompt = {1, 4, 7};
    for (double T : {1.0, 0.0}) {
      SamplingOptions o;
      o.temperature = T;
      const Run cached = run_generation(lm, prompt, 14, o, 9, ContextPath::kv_cache);
      const Run recomputed = run_generation(lm, prompt, 14, o, 9, ContextPath::recompute);
      REQUIRE(cached.tokens.size() == 14);
      CHECK(cached.tokens == recomputed.tokens);
      std::vector<std::int64_t> sequence = prompt;
      for (std::size_t i = 0; i < cached.tokens.size(); ++i) {
        INFO("token " << i << ", sequence length " << sequence.size());
        check_close(cached.logits[i], recomputed.logits[i]);
        check_close(cached.logits[i], reference_logits(lm, sequence));  // the window as generation.hpp defines it
        sequence.push_back(cached.tokens[i]);
      }
    }
  }
}

TEST_CASE("generate: a prompt longer than max_len is read as its last max_len tokens") {
  Generator init(4);
  DecoderOnlyLM<float> lm(lm_config(6), init);
  const std::vector<std::int64_t> long_prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const std::vector<std::int64_t> its_end(long_prompt.end() - 6, long_prompt.end());
  for (ContextPath path : {ContextPath::kv_cache, ContextPath::recompute}) {
    const Run a = run_generation(lm, long_prompt, 5, SamplingOptions{}, 2, path);
    const Run b = run_generation(lm, its_end, 5, SamplingOptions{}, 2, path);
    CHECK(a.tokens == b.tokens);
    for (std::size_t i = 0; i < a.logits.size(); ++i) check_close(a.logits[i], b.logits[i]);
  }
}

TEST_CASE("generate: the same seed gives the same tokens, another seed others") {
  Generator init(5);
  DecoderOnlyLM<float> lm(lm_config(16), init);
  SamplingOptions o;
  o.temperature = 1.5;
  auto tokens = [&](std::uint64_t seed) { return run_generation(lm, {1}, 24, o, seed, ContextPath::kv_cache).tokens; };
  CHECK(tokens(1) == tokens(1));
  CHECK(tokens(1) != tokens(2));
}

TEST_CASE("generate: the callback sees each token as it is drawn and can stop the generation") {
  Generator init(6);
  DecoderOnlyLM<float> lm(lm_config(16), init);
  lm.train();
  std::vector<std::size_t> seen;
  Generator gen(1);
  const std::vector<std::int64_t> out = generate(lm, {1, 2}, 10, SamplingOptions{}, gen, [&](const GeneratedToken& t) {
    seen.push_back(t.index);
    return seen.size() < 3;
  });
  CHECK(out.size() == 3);
  const std::vector<std::size_t> in_order = {0, 1, 2};
  CHECK(seen == in_order);
  CHECK(lm.is_training());  // the mode is given back
}

TEST_CASE("generate: an empty prompt or an id outside the vocabulary is refused") {
  Generator init(7), gen(1);
  DecoderOnlyLM<float> lm(lm_config(8), init);
  CHECK_THROWS_WITH_AS(generate(lm, {}, 3, SamplingOptions{}, gen), doctest::Contains("prompt is empty"), ValueError);
  CHECK_THROWS_WITH_AS(generate(lm, {1, 11}, 3, SamplingOptions{}, gen),
                       doctest::Contains("prompt token 1 is 11, not an id in [0, 11)"), ValueError);
  CHECK_THROWS_AS(generate(lm, {1, -1}, 3, SamplingOptions{}, gen), ValueError);
}

TEST_CASE("token_codec: an induction checkpoint holds no text: ids in decimal, separated by spaces") {
  LoadedModel m;
  m.options.task = Task::induction;
  const TokenCodec codec = token_codec(m);
  CHECK_FALSE(codec.has_text());
  CHECK(codec.decode(12) == "12");
  CHECK(codec.separator == " ");
}

TEST_CASE("generate: keep_first holds the first token at position 0 of every context, cached or recomputed") {
  // max_len 6, a prompt <s> 4 7 and 10 new tokens: the window slides from the 4th new token on, and
  // every context is then <s> followed by the last 5 tokens.
  Generator init(5);
  DecoderOnlyLM<float> lm(lm_config(6), init);
  const std::vector<std::int64_t> prompt = {1, 4, 7};
  SamplingOptions o;
  o.temperature = 1.0;
  Run runs[2];
  for (ContextPath path : {ContextPath::kv_cache, ContextPath::recompute}) {
    Generator gen(11);
    Run& r = runs[path == ContextPath::kv_cache ? 0 : 1];
    r.tokens = generate(lm, prompt, 10, o, gen,
                        [&](const GeneratedToken& t) {
                          r.logits.push_back(*t.logits);
                          return true;
                        },
                        path, /*keep_first=*/true);
  }
  REQUIRE(runs[0].tokens.size() == 10);
  CHECK(runs[0].tokens == runs[1].tokens);
  std::vector<std::int64_t> sequence = prompt;
  for (std::size_t i = 0; i < 10; ++i) {
    INFO("token " << i << ", sequence length " << sequence.size());
    // The context by hand: the whole sequence while it fits, else <s> and the last 5 tokens.
    std::vector<std::int64_t> context = sequence;
    if (context.size() > 6) {
      context = {sequence[0]};
      context.insert(context.end(), sequence.end() - 5, sequence.end());
    }
    check_close(runs[0].logits[i], runs[1].logits[i]);
    check_close(runs[0].logits[i], reference_logits(lm, context));
    sequence.push_back(runs[0].tokens[i]);
  }
  // Without keep_first the sliding contexts lose <s>: other logits once the window slides.
  const Run plain = run_generation(lm, prompt, 10, o, 11, ContextPath::kv_cache);
  CHECK(plain.logits.back() != runs[0].logits.back());
}
}  // namespace test_generation
