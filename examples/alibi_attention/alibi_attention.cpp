// examples/alibi_attention: a new attention variant, ALiBi ("Attention with Linear Biases",
// Press et al. 2022), built on headlab's scaled_dot_product_attention and checked four ways.
//
// ALiBi adds no position embedding. Instead each head h = 1..H penalises a key by its distance
// from the query, with a fixed slope m_h:
//     scores[h, i, j] = q_i . k_j / sqrt(d)  -  m_h (i - j),      m_h = 2^(-8 h / H),
// causal (j <= i), then out = softmax(scores) v as usual. (These are the paper's slopes for H a
// power of two.) Head 1 (m = 2^(-8/H), steep) looks mostly at recent tokens, head H (m = 2^-8,
// flat) almost everywhere.
//
// SDPA takes the penalty as an additive float bias (SdpaOptions::attn_bias, broadcast from
// (1, H, L, S) to the scores (B, H, L, S)), so ALiBi is just a bias array. Checks:
//   1. the slopes for H = 8 are 1/2, 1/4, ..., 1/256;
//   2. one forward against a direct computation with loops;
//   3. with all keys equal the weights are exp(-m_h (i - j)) normalised: w[j] / w[j-1] = e^(m_h);
//   4. gradcheck (float64 central differences) of ALiBi SDPA w.r.t. q, k, v, and of a
//      MultiHeadAttention layer called with the ALiBi bias w.r.t. its input x.
// The program exits 1 if any check fails.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "headlab/attention/attention.hpp"
#include "headlab/core/gradcheck.hpp"
#include "headlab/core/random.hpp"
#include "headlab/core/tensor.hpp"

using namespace headlab;

namespace {

// m_h = 2^(-8 h / H) for h = 1..H (index h - 1 in the vector).
std::vector<double> alibi_slopes(std::size_t heads) {
  std::vector<double> m(heads);
  for (std::size_t h = 1; h <= heads; ++h) m[h - 1] = std::exp2(-8.0 * double(h) / double(heads));
  return m;
}

// The bias (1, H, L, S): bias[0, h, i, j] = -m_h (pos_i - j). As SDPA places them, the L queries
// are the last L of the S positions: pos_i = S - L + i. Future keys (j > pos_i) get a positive
// value here, but the causal mask removes them anyway.
template <typename T>
Array<T> alibi_bias(std::size_t heads, std::size_t L, std::size_t S) {
  const std::vector<double> m = alibi_slopes(heads);
  Array<T> bias = Array<T>::from_shape({1, heads, L, S});
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t i = 0; i < L; ++i)
      for (std::size_t j = 0; j < S; ++j) bias(0, h, i, j) = T(-m[h] * (double(S - L + i) - double(j)));
  return bias;
}

// ALiBi attention: q (B, H, L, d), k and v (B, H, S, d) -> out (B, H, L, d), weights (B, H, L, S).
template <typename T>
SdpaResult<T> alibi_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v) {
  SdpaOptions<T> opt;
  opt.causal = true;
  opt.attn_bias = alibi_bias<T>(q.size(1), q.size(2), k.size(2));
  opt.need_weights = true;
  return scaled_dot_product_attention(q, k, v, opt);
}

bool check(bool good, const char* what) {
  std::printf("  %-64s %s\n", what, good ? "ok" : "FAILED");
  return good;
}

}  // namespace

int main() {
  bool ok = true;
  Generator gen(7);

  std::printf("1. slopes m_h = 2^(-8h/H)\n  H = 8:");
  const std::vector<double> m8 = alibi_slopes(8);
  bool slopes_ok = true;
  for (std::size_t h = 0; h < 8; ++h) {
    std::printf(" 1/%g", 1.0 / m8[h]);
    slopes_ok = slopes_ok && m8[h] == std::ldexp(1.0, -int(h + 1));
  }
  std::printf("\n");
  ok &= check(slopes_ok, "H = 8 gives 1/2, 1/4, ..., 1/256");

  // 2. A forward by hand: B = 1, H = 2, T = 5 tokens, d = 3.
  const std::size_t H = 2, T = 5, d = 3;
  const TensorD q = normal<double>({1, H, T, d}, 0.0, 1.0, gen);
  const TensorD k = normal<double>({1, H, T, d}, 0.0, 1.0, gen);
  const TensorD v = normal<double>({1, H, T, d}, 0.0, 1.0, gen);
  const SdpaResult<double> r = alibi_attention(q, k, v);
  std::printf("2. forward: q, k, v %s -> out %s, weights %s\n", shape_str(q.shape()).c_str(),
              shape_str(r.output.shape()).c_str(), shape_str(r.weights.shape()).c_str());
  const std::vector<double> m2 = alibi_slopes(H);
  double max_err = 0;
  for (std::size_t h = 0; h < H; ++h) {
    for (std::size_t i = 0; i < T; ++i) {
      // scores over the visible keys j <= i, softmax, weighted sum of the values.
      std::vector<double> w(i + 1);
      double top = -INFINITY, total = 0;
      for (std::size_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (std::size_t c = 0; c < d; ++c) dot += q.value()(0, h, i, c) * k.value()(0, h, j, c);
        w[j] = dot / std::sqrt(double(d)) - m2[h] * double(i - j);
        top = std::max(top, w[j]);
      }
      for (double& s : w) total += (s = std::exp(s - top));
      for (std::size_t c = 0; c < d; ++c) {
        double out = 0;
        for (std::size_t j = 0; j <= i; ++j) out += w[j] / total * v.value()(0, h, j, c);
        max_err = std::max(max_err, std::fabs(out - r.output.value()(0, h, i, c)));
      }
    }
  }
  std::printf("  max |sdpa - by hand| = %.2e\n", max_err);
  ok &= check(max_err < 1e-12, "SDPA with the ALiBi bias equals the loops");

  // 3. All keys equal (zero), so q . k = 0 and only the bias is left: the last query's weights
  //    fall off geometrically with distance, faster for the steeper head.
  const std::size_t H4 = 4, T8 = 8;
  const TensorD q4 = normal<double>({1, H4, T8, d}, 0.0, 1.0, gen);
  const TensorD k0 = zeros<double>({1, H4, T8, d});
  const TensorD v4 = normal<double>({1, H4, T8, d}, 0.0, 1.0, gen);
  const SdpaResult<double> r4 = alibi_attention(q4, k0, v4);
  const std::vector<double> m4 = alibi_slopes(H4);
  std::printf("3. constant keys, weights of the last query (position %zu) over keys 0..%zu\n", T8 - 1, T8 - 1);
  double ratio_err = 0;
  for (std::size_t h = 0; h < H4; ++h) {
    std::printf("  head %zu (m = %.4f):", h + 1, m4[h]);
    for (std::size_t j = 0; j < T8; ++j) {
      std::printf(" %.3f", r4.weights.value()(0, h, T8 - 1, j));
      if (j > 0) {
        const Array<double>& w = r4.weights.value();
        const double ratio = w(0, h, T8 - 1, j) / w(0, h, T8 - 1, j - 1);
        ratio_err = std::max(ratio_err, std::fabs(ratio - std::exp(m4[h])));
      }
    }
    std::printf("\n");
  }
  ok &= check(ratio_err < 1e-12, "w[j] / w[j-1] = e^(m_h) for every head");

  // 4. Gradients: backward() against central differences, in float64.
  std::printf("4. gradcheck\n");
  const std::vector<TensorD> qkv = {normal<double>({2, H, T, d}, 0.0, 1.0, gen, true),
                                    normal<double>({2, H, T, d}, 0.0, 1.0, gen, true),
                                    normal<double>({2, H, T, d}, 0.0, 1.0, gen, true)};
  const GradcheckResult g1 = gradcheck(
      "alibi_sdpa", [](const std::vector<TensorD>& in) { return alibi_attention(in[0], in[1], in[2]).output; }, qkv);
  std::printf("  alibi_sdpa: max error %.2e %s\n", g1.max_abs_error, g1.message.c_str());
  ok &= check(g1.ok, "d out / d q, k, v of ALiBi SDPA");

  // The same bias through a whole layer: MultiHeadAttention with D = 8, H = 2, causal.
  AttentionConfig config;
  config.d_model = 8;
  config.num_heads = H;
  MultiHeadAttention<double> layer(config, gen);
  AttentionCall<double> call;
  call.causal = true;
  call.attn_bias = alibi_bias<double>(H, T, T);
  const GradcheckResult g2 = gradcheck(
      "alibi_mha", [&](const std::vector<TensorD>& in) { return layer.forward(in[0], call).output; },
      {normal<double>({2, T, 8}, 0.0, 1.0, gen, true)});
  std::printf("  alibi_mha: max error %.2e %s\n", g2.max_abs_error, g2.message.c_str());
  ok &= check(g2.ok, "d out / d x of a MultiHeadAttention layer with the ALiBi bias");

  std::printf("%s\n", ok ? "OK: every ALiBi check passed" : "FAILED: see the lines above");
  return ok ? 0 : 1;
}
