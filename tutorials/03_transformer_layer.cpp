// tutorials/03_transformer_layer.cpp: one Transformer encoder layer, taken apart.
//
// Chapter 3 of the course. Chapters 1 and 2 built the attention sub-layer; a
// Transformer layer wraps it with a residual connection, a LayerNorm and a
// position-wise feed-forward network (Vaswani et al. 2017, section 3.1 and
// 3.3). In the original "post-LN" arrangement, which is nn.Transformer's default,
//
//     y   = LayerNorm_1(x + SelfAttention(x))
//     out = LayerNorm_2(y + FeedForward(y)),     FeedForward(y) = linear2(relu(linear1(y)))
//
// This program builds a TransformerEncoderLayer<float> (headlab/models/transformer.hpp) with
// D = 16, h = 4 heads, a feed-forward width of F = 32 and no dropout, lists
// its parameters, recomputes its forward pass by hand from those parameters
// (printing the shape after every sub-layer) and checks the result against
// layer.forward. Then it shows the "pre-LN" variant (norm_first), which
// computes something else, and compares the gradients of both. It runs as
// `tutorial_transformer_layer` and as the ctest `tutorial.transformer_layer`,
// and exits with status 1 if any check fails.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "headlab/headlab.hpp"
#include "tutorial_threads.hpp"
#include "headlab/models/transformer.hpp"

#include "tutorial_table.hpp"

using namespace headlab;

namespace {

// ---- Printing helpers -----------------------------------------------------

// The Frobenius norm sqrt(sum a^2), accumulated in double.
double norm(const Array<float>& a) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a.data()[i]) * double(a.data()[i]);
  return std::sqrt(s);
}

// Per-token statistics of a LayerNorm's normalised output: undo the affine part,
// z = (a - bias) / weight over the last axis (D), and collect each token's mean
// and (biased) standard deviation of z.
struct TokenStats {
  double max_abs_mean = 0, min_std = std::numeric_limits<double>::infinity(), max_std = 0;
};
TokenStats normalised_stats(const Array<float>& a, const Array<float>& weight, const Array<float>& bias) {
  const std::size_t D = weight.size(), tokens = a.size() / D;
  TokenStats st;
  std::vector<double> z(D);
  for (std::size_t t = 0; t < tokens; ++t) {
    double m = 0, v = 0;
    for (std::size_t i = 0; i < D; ++i) m += z[i] = (double(a.data()[t * D + i]) - bias.data()[i]) / weight.data()[i];
    m /= double(D);
    for (std::size_t i = 0; i < D; ++i) v += (z[i] - m) * (z[i] - m);
    const double sd = std::sqrt(v / double(D));
    st.max_abs_mean = std::max(st.max_abs_mean, std::fabs(m));
    st.min_std = std::min(st.min_std, sd);
    st.max_std = std::max(st.max_std, sd);
  }
  return st;
}

void section(const std::string& title) { std::cout << "\n== " << title << " ==\n\n"; }

}  // namespace

int main() {
  use_tutorial_threads();
  bool ok = true;
  const std::size_t D = 16, h = 4, F = 32, B = 2, T = 5;

  // ---- 0. The layer -------------------------------------------------------------
  // TransformerConfig describes a whole model; a single encoder layer reads
  // d_model, ff_dim, dropout, activation, norm_first, layer_norm_eps and the
  // attention settings (here only the number of heads).
  TransformerConfig config;
  config.d_model = D;
  config.ff_dim = F;
  config.dropout = 0.0;  // no randomness: the forward pass is a plain function
  config.activation = Activation::relu;
  config.norm_first = false;  // post-LN, as in the paper
  config.attention.num_heads = h;

  Generator gen(1706);
  TransformerEncoderLayer<float> layer(config, gen);

  // LayerNorms start as the identity affine map (weight 1, bias 0) and the
  // attention biases at 0. Perturb them so that a parameter used in the wrong
  // place (norm1's instead of norm2's, say) would change the result below.
  for (auto& [name, p] : layer.named_parameters()) {
    const bool is_norm_weight = name.rfind("norm", 0) == 0 && name.find("weight") != std::string::npos;
    if (is_norm_weight) p.mutable_value() = normal<float>(p.shape(), 1.f, 0.1f, gen).value();
    if (name.find("bias") != std::string::npos) p.mutable_value() = normal<float>(p.shape(), 0.f, 0.1f, gen).value();
  }

  // ---- 1. Its parameters ---------------------------------------------------------------
  // named_parameters() lists (name, tensor) in registration order, with
  // PyTorch's names, so that a state dict lines up with nn.TransformerEncoderLayer.
  section("1. The parameters of TransformerEncoderLayer<float> (D = 16, h = 4, F = 32)");
  std::cout << "  " << std::left << std::setw(26) << "name" << std::setw(10) << "shape" << std::right << std::setw(8)
            << "scalars"
            << "\n";
  for (const auto& [name, p] : layer.named_parameters())
    std::cout << "  " << std::left << std::setw(26) << name << std::setw(10) << shape_str(p.shape()) << std::right
              << std::setw(8) << p.numel() << "\n";
  // attention 4 D^2 + 4 D, linear1 F D + F, linear2 D F + D, two LayerNorms 2 D each.
  const std::size_t formula = (4 * D * D + 4 * D) + (F * D + F) + (D * F + D) + 4 * D;
  std::cout << "  " << std::left << std::setw(36) << "total (parameter_count())" << std::right << std::setw(8)
            << layer.parameter_count() << "   = (4 D^2 + 4 D) + (F D + F) + (D F + D) + 4 D = " << formula << "\n";
  ok = ok && layer.parameter_count() == formula;

  // ---- 2. The forward pass by hand --------------------------------------------------
  // Each step uses the layer's own parameters, fetched by name. The attention
  // sub-layer is called as a whole (chapter 1 takes it apart).
  section("2. The post-LN forward pass by hand (B = 2, T = 5, D = 16)");
  const TensorF x = normal<float>({B, T, D}, 0.f, 1.f, gen, /*requires_grad=*/true);
  const AttentionCall<float> call;  // no mask: an encoder sees the whole sentence
  const float eps = float(config.layer_norm_eps);
  // P("linear1.weight") is layer.parameter("linear1.weight"): a handle to the
  // module's own tensor, so gradients through it land in the layer.
  auto P = [&](const std::string& name) { return layer.parameter(name); };

  ShapeTable table;
  table.add("x", "the input, batch first", "(B, T, D)", x.shape());
  // Sub-layer 1: self-attention, residual, LayerNorm.
  const TensorF attn = layer.self_attn.forward(x, call).output;
  table.add("attn", "layer.self_attn.forward(x)", "(B, T, D)", attn.shape());
  const TensorF res1 = x + attn;
  table.add("res1", "x + attn   (residual)", "(B, T, D)", res1.shape());
  const TensorF y = layer_norm(res1, P("norm1.weight"), P("norm1.bias"), eps);
  table.add("y", "layer_norm(res1, norm1.*)", "(B, T, D)", y.shape());
  // Sub-layer 2: the position-wise feed-forward network, residual, LayerNorm.
  // "Position-wise": the same two linear maps applied to every token alone.
  const TensorF hidden = linear(y, P("linear1.weight"), P("linear1.bias"));
  table.add("hidden", "y W1^T + b1   (linear1)", "(B, T, F)", hidden.shape());
  const TensorF act = relu(hidden);
  table.add("act", "relu(hidden)", "(B, T, F)", act.shape());
  const TensorF ff = linear(act, P("linear2.weight"), P("linear2.bias"));
  table.add("ff", "act W2^T + b2   (linear2)", "(B, T, D)", ff.shape());
  const TensorF res2 = y + ff;
  table.add("res2", "y + ff   (residual)", "(B, T, D)", res2.shape());
  const TensorF hand = layer_norm(res2, P("norm2.weight"), P("norm2.bias"), eps);
  table.add("out", "layer_norm(res2, norm2.*)", "(B, T, D)", hand.shape());
  table.print();

  // ---- 3. The module computes the same thing -------------------------------------
  section("3. The same through layer.forward");
  const TensorF out = layer.forward(x, call, /*dropout_gen=*/nullptr);  // no dropout: no generator needed
  const double diff = max_abs_diff(hand.value(), out.value());
  std::cout << "  layer.forward(x) " << shape_str(out.shape()) << ", max |hand - module| = " << std::scientific
            << std::setprecision(2) << diff << (diff <= 1e-5 ? "  (<= 1e-5: same)" : "  (> 1e-5: DIFFERENT)") << "\n";
  ok = ok && diff <= 1e-5;

  // ---- 4. Pre-LN ---------------------------------------------------------------------
  // norm_first = true moves each LayerNorm to the input of its sub-layer and
  // leaves the residual path untouched (GPT-2 and most later models):
  //     y   = x + SelfAttention(LayerNorm_1(x))
  //     out = y + FeedForward(LayerNorm_2(y))
  // Same parameters, a different function. We copy every parameter over, so
  // the only difference is the arrangement.
  section("4. Pre-LN (TransformerConfig::norm_first = true)");
  TransformerConfig pre_config = config;
  pre_config.norm_first = true;
  TransformerEncoderLayer<float> pre_layer(pre_config, gen);
  {
    const auto src = layer.named_parameters();
    auto dst = pre_layer.named_parameters();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i].second.mutable_value() = src[i].second.value();
  }
  const TensorF pre_out = pre_layer.forward(x, call, nullptr);
  // And by hand, from pre_layer's own attention module and parameters:
  auto PP = [&](const std::string& name) { return pre_layer.parameter(name); };
  const TensorF pre_y =
      x + pre_layer.self_attn.forward(layer_norm(x, PP("norm1.weight"), PP("norm1.bias"), eps), call).output;
  const TensorF pre_n2 = layer_norm(pre_y, PP("norm2.weight"), PP("norm2.bias"), eps);
  const TensorF pre_hand =
      pre_y + linear(relu(linear(pre_n2, PP("linear1.weight"), PP("linear1.bias"))), PP("linear2.weight"),
                     PP("linear2.bias"));
  const double pre_diff = max_abs_diff(pre_hand.value(), pre_out.value());
  const double post_vs_pre = max_abs_diff(out.value(), pre_out.value());
  std::cout << "  max |pre-LN by hand - pre-LN module| = " << std::scientific << std::setprecision(2) << pre_diff
            << (pre_diff <= 1e-5 ? "  (same)" : "  (DIFFERENT)") << "\n";
  std::cout << "  max |post-LN out - pre-LN out|       = " << post_vs_pre
            << (post_vs_pre > 1e-2 ? "  (a different function, as expected)" : "  (suspiciously equal)") << "\n";
  ok = ok && pre_diff <= 1e-5 && post_vs_pre > 1e-2;
  // Post-LN ends in a LayerNorm: undo norm2's affine map and every token has
  // mean 0 and standard deviation 1 over its D features (1 / sqrt(1 + eps / var),
  // to be exact). Pre-LN's output is the residual stream itself, x plus what the
  // sub-layers added, with no such constraint; models that use it put one final
  // LayerNorm after the last layer (nn.TransformerEncoder's `norm`).
  auto stats_line = [&](const std::string& what, const Array<float>& a) {
    const TokenStats st = normalised_stats(a, P("norm2.weight").value(), P("norm2.bias").value());
    std::cout << "  " << std::left << std::setw(8) << what << std::right << "(out - norm2.bias) / norm2.weight:"
              << "  max |token mean| " << std::fixed << std::setprecision(5) << st.max_abs_mean << ",  token std in ["
              << st.min_std << ", " << st.max_std << "]\n";
    return st;
  };
  const TokenStats post_stats = stats_line("post-LN", out.value());
  stats_line("pre-LN", pre_out.value());
  ok = ok && post_stats.max_abs_mean <= 1e-5 && post_stats.min_std >= 0.999 && post_stats.max_std <= 1.0 + 1e-5;

  // ---- 5. Backward ---------------------------------------------------------------------
  // L = mean(out^2) for both arrangements; one backward each fills the gradient
  // of every parameter. We also run the hand-built post-LN graph and check that
  // it gives the module's gradients. Compare the two columns: in post-LN every
  // gradient that reaches a sub-layer's weights has first gone back through
  // norm2 (and, for attention, norm1), while in pre-LN the residual path
  // carries it to each sub-layer untouched (Xiong et al. 2020, "On Layer
  // Normalization in the Transformer Architecture", study what this does to training).
  section("5. Backward from L = mean(out^2): gradient norms per parameter");
  const auto params = layer.named_parameters();
  mean(hand * hand).backward();
  std::vector<Array<float>> hand_grads;
  for (const auto& [name, p] : params) hand_grads.push_back(p.grad());
  layer.zero_grad();
  x.zero_grad();
  mean(out * out).backward();
  const double dx_post = norm(x.grad());
  x.zero_grad();
  mean(pre_out * pre_out).backward();
  const double dx_pre = norm(x.grad());
  const auto pre_params = pre_layer.named_parameters();

  std::cout << "  " << std::left << std::setw(26) << "parameter" << std::setw(10) << "shape" << std::right
            << std::setw(14) << "|grad| post-LN" << std::setw(16) << "|grad| pre-LN"
            << "   max |hand - module| (post)\n";
  double worst = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    const double g_post = norm(p.grad()), g_pre = norm(pre_params[i].second.grad());
    const double d_hand = max_abs_diff(hand_grads[i], p.grad());
    worst = std::max(worst, d_hand);
    std::cout << "  " << std::left << std::setw(26) << name << std::setw(10) << shape_str(p.shape()) << std::right
              << std::fixed << std::setprecision(5) << std::setw(14) << g_post << std::setw(16) << g_pre
              << "   " << std::scientific << std::setprecision(2) << d_hand << "\n";
    ok = ok && shape_of(p.grad()) == p.shape() && std::isfinite(g_post) && std::isfinite(g_pre) && g_post > 0;
  }
  std::cout << "  " << std::left << std::setw(36) << "x (the input)" << std::right << std::fixed
            << std::setprecision(5) << std::setw(14) << dx_post << std::setw(16) << dx_pre << "\n";
  std::cout << "\n  max |hand - module| over all gradients = " << std::scientific << std::setprecision(2) << worst
            << (worst <= 1e-5 ? "  (<= 1e-5: same)" : "  (> 1e-5: DIFFERENT)") << "\n";
  ok = ok && worst <= 1e-5;

  std::cout << "\n" << (ok ? "all checks passed" : "SOME CHECK FAILED") << "\n";
  return ok ? 0 : 1;
}
