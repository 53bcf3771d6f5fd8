// tutorials/01_attention_walkthrough.cpp: one multi-head self-attention layer, by hand.
//
// In the spirit of The Annotated Transformer, this file is meant to be read
// from top to bottom; it also runs (`tutorial_attention_walkthrough`, and the
// ctest `tutorial.attention_walkthrough`). We take a tiny layer
//
//     D = 16 (d_model), h = 4 heads, d_k = D / h = 4,  B = 2 sequences of T = 5 tokens,
//
// and rebuild its forward pass from the plain autograd ops of headlab/ops/ops.hpp,
// printing the shape of every intermediate. The path is the one of Vaswani et
// al. 2017, section 3.2:
//
//     X (B,T,D) -> fused projection D x 3D -> split -> (B,h,T,d_k) ->
//     scores (B,h,T,T) -> softmax -> weights @ V (B,h,T,d_k) -> concat (B,T,D) -> W_O
//
// Then we check that the hand-built result is what MultiHeadAttention<float>
// computes with the same parameters, run a backward pass, and compare the
// cost accounting with the textbook formulas. The program exits with status 1
// if any of these checks fails.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/attention/attention.hpp"
#include "headlab/headlab.hpp"
#include "tutorial_threads.hpp"

#include "tutorial_table.hpp"

using namespace headlab;

namespace {

// ---- Printing helpers -----------------------------------------------------

void section(const std::string& title) { std::cout << "\n== " << title << " ==\n\n"; }

}  // namespace

int main() {
  use_tutorial_threads();
  bool ok = true;

  // ---- 0. The layer and its input -------------------------------------------
  // AttentionConfig describes the layer; every field not set here keeps its
  // default (biases on, no gate, h_kv = h, no window, no rope, no latent).
  const std::size_t D = 16, h = 4, B = 2, T = 5;
  AttentionConfig config;
  config.d_model = D;
  config.num_heads = h;
  const std::size_t dk = config.dim_head();  // D / h = 4

  Generator gen(2017);
  MultiHeadAttention<float> mha(config, gen);
  mha.eval();  // no dropout anyway; eval makes the intent plain

  // PyTorch initialises the projection biases to zero. Give them random values
  // so that the comparison below would notice a bias applied in the wrong place.
  // parameter() returns a handle: editing its value edits the module.
  mha.parameter("in_proj_bias").mutable_value() = normal<float>({3 * D}, 0.f, 0.1f, gen).value();
  mha.parameter("out_proj.bias").mutable_value() = normal<float>({D}, 0.f, 0.1f, gen).value();

  const TensorF X = normal<float>({B, T, D}, 0.f, 1.f, gen, /*requires_grad=*/true);

  section("1. The forward pass by hand (D = 16, h = 4, d_k = 4, B = 2, T = 5)");
  ShapeTable table;
  table.add("X", "the input, batch first", "(B, T, D)", X.shape());

  // ---- 1. One fused projection ------------------------------------------------
  // PyTorch (and headlab) keep W_Q, W_K, W_V stacked by rows in one matrix
  // in_proj_weight of shape (3D, D). linear(x, W, b) = x W^T + b, so a single
  // matrix product gives all of Q, K and V side by side on the last axis.
  const TensorF W_in = mha.parameter("in_proj_weight");  // (3D, D) = [W_Q; W_K; W_V]
  const TensorF b_in = mha.parameter("in_proj_bias");    // (3D)
  const TensorF proj = linear(X, W_in, b_in);
  table.add("proj", "X W_in^T + b_in   (W_in: 3D x D)", "(B, T, 3D)", proj.shape());

  // ---- 2. Split into Q, K, V --------------------------------------------------
  const std::vector<TensorF> qkv = split(proj, {D, D, D}, -1);
  table.add("q, k, v", "split(proj, {D, D, D}, -1)", "(B, T, D) each", qkv[0].shape());

  // ---- 3. Split the heads -----------------------------------------------------
  // Head i owns columns i d_k .. (i+1) d_k - 1 of q, k and v. Reshape exposes
  // that as an axis of size h; permute brings the heads next to the batch, so
  // that every later matmul runs over the batch axes (B, h) at once.
  auto heads_of = [&](const TensorF& t) {
    return permute(reshape(t, {std::ptrdiff_t(B), std::ptrdiff_t(T), std::ptrdiff_t(h), std::ptrdiff_t(dk)}),
                   {0, 2, 1, 3});
  };
  const TensorF q_bthd = reshape(qkv[0], {std::ptrdiff_t(B), std::ptrdiff_t(T), std::ptrdiff_t(h), std::ptrdiff_t(dk)});
  table.add("q", "reshape(q, {B, T, h, d_k})", "(B, T, h, d_k)", q_bthd.shape());
  const TensorF q = heads_of(qkv[0]), k = heads_of(qkv[1]), v = heads_of(qkv[2]);
  table.add("q, k, v", "permute(.., {0, 2, 1, 3})", "(B, h, T, d_k)", q.shape());

  // ---- 4. Scores: every query against every key, per head ---------------------
  // scores[b, i, s, t] = q_s . k_t / sqrt(d_k). The 1/sqrt(d_k) keeps the dot
  // products at unit scale whatever d_k is, so the softmax does not saturate.
  const TensorF kT = transpose(k, -2, -1);
  table.add("k^T", "transpose(k, -2, -1)", "(B, h, d_k, T)", kT.shape());
  const TensorF scores = matmul(q, kT) * (1.0f / std::sqrt(float(dk)));
  table.add("scores", "q @ k^T / sqrt(d_k)", "(B, h, T, T)", scores.shape());

  // ---- 5. The causal mask -----------------------------------------------------
  // A decoder may not look ahead: query s sees keys t <= s. headlab masks
  // follow PyTorch's bool convention, true = NOT allowed. masked_fill writes
  // -inf there, which the softmax turns into a weight of exactly 0. The (T, T)
  // mask broadcasts over (B, h).
  MaskArray causal = MaskArray::from_shape({T, T});
  for (std::size_t s = 0; s < T; ++s)
    for (std::size_t t = 0; t < T; ++t) causal(s, t) = t > s;
  const TensorF masked = masked_fill(scores, causal, -std::numeric_limits<float>::infinity());
  table.add("masked", "masked_fill(scores, t > s, -inf)", "(B, h, T, T)", masked.shape());

  // ---- 6. Softmax over the keys -----------------------------------------------
  const TensorF weights = softmax(masked, -1);
  table.add("weights", "softmax(masked, -1)", "(B, h, T, T)", weights.shape());

  // ---- 7. Weighted sum of the values ------------------------------------------
  const TensorF heads = matmul(weights, v);
  table.add("heads", "weights @ v", "(B, h, T, d_k)", heads.shape());

  // ---- 8. Merge the heads (the "Concat") --------------------------------------
  // The inverse of step 3: heads back behind the tokens, then flattened, so the
  // (B, T, D) row of token s is [head_0(s), head_1(s), ..., head_{h-1}(s)].
  const TensorF back = permute(heads, {0, 2, 1, 3});
  table.add("heads", "permute(heads, {0, 2, 1, 3})", "(B, T, h, d_k)", back.shape());
  const TensorF concat_heads = reshape(back, {std::ptrdiff_t(B), std::ptrdiff_t(T), std::ptrdiff_t(D)});
  table.add("concat", "reshape(.., {B, T, D})", "(B, T, D)", concat_heads.shape());

  // ---- 9. The output projection W_O -------------------------------------------
  const TensorF hand = linear(concat_heads, mha.parameter("out_proj.weight"), mha.parameter("out_proj.bias"));
  table.add("out", "concat W_O^T + b_O   (W_O: D x D)", "(B, T, D)", hand.shape());
  table.print();

  // A visual check: the weights of sequence 0, head 0. Above the diagonal they
  // are exactly 0 (the future is masked); every row sums to 1.
  std::cout << "\n  weights[0, 0] (query s down, key t across):\n";
  const Array<float>& w = weights.value();
  for (std::size_t s = 0; s < T; ++s) {
    std::cout << "    ";
    float row = 0;
    for (std::size_t t = 0; t < T; ++t) {
      std::cout << std::fixed << std::setprecision(3) << std::setw(7) << w(0, 0, s, t);
      row += w(0, 0, s, t);
    }
    std::cout << "   sum " << std::setprecision(3) << row << "\n";
  }

  // ---- 10. The module computes the same thing ---------------------------------
  section("2. The same layer through MultiHeadAttention<float>::forward");
  AttentionCall<float> call;
  call.causal = true;
  const TensorF out = mha.forward(X, call).output;
  const double diff = max_abs_diff(hand.value(), out.value());
  std::cout << "  module output " << shape_str(out.shape()) << ", max |hand - module| = " << std::scientific
            << std::setprecision(2) << diff << (diff <= 1e-5 ? "  (<= 1e-5: same)" : "  (> 1e-5: DIFFERENT)")
            << "\n";
  ok = ok && diff <= 1e-5;

  // ---- 11. Backward -----------------------------------------------------------
  // A simple scalar loss, L = mean(out^2). One backward fills the gradient of
  // every parameter (named as in PyTorch's state dict) and of the input X.
  // We do it for the hand-built graph first, keep those gradients, then for the
  // module's graph: they must agree too.
  section("3. Backward from L = mean(out^2)");
  const auto params = mha.named_parameters();
  const TensorF hand_loss = mean(hand * hand);
  hand_loss.backward();
  std::vector<Array<float>> hand_grads;
  for (const auto& [name, p] : params) hand_grads.push_back(p.grad());
  const Array<float> hand_dx = X.grad();
  mha.zero_grad();
  X.zero_grad();

  const TensorF loss = mean(out * out);
  loss.backward();
  std::cout << "  L = " << std::fixed << std::setprecision(6) << loss.item() << "\n\n";
  std::cout << "  " << std::left << std::setw(16) << "tensor" << std::setw(12) << "value" << std::setw(12) << "grad"
            << "max |grad hand - grad module|\n";
  auto grad_row = [&](const std::string& name, const TensorF& p, const Array<float>& hand_grad) {
    const double g = max_abs_diff(hand_grad, p.grad());
    std::cout << "  " << std::left << std::setw(16) << name << std::setw(12) << shape_str(p.shape()) << std::setw(12)
              << shape_str(shape_of(p.grad())) << std::scientific << std::setprecision(2) << g << "\n";
    ok = ok && g <= 1e-5 && shape_of(p.grad()) == p.shape();
  };
  for (std::size_t i = 0; i < params.size(); ++i) grad_row(params[i].first, params[i].second, hand_grads[i]);
  grad_row("X (input)", X, hand_dx);

  // ---- 12. What it costs --------------------------------------------------------
  // For standard multi-head attention the parameters are 4 D^2 + 4 D (W_Q, W_K,
  // W_V, W_O and their biases), whatever h is: more heads only cut each head
  // thinner. The forward FLOPs for T tokens are 8 T D^2 (the four projections)
  // + 4 T^2 D (scores and the weighted sum), counting multiply and add as 2.
  section("4. Cost (attention_cost)");
  const AttentionCost cost = attention_cost(config, T);
  const std::size_t formula_params = 4 * D * D + 4 * D;
  const double formula_flops = 8.0 * T * D * D + 4.0 * T * T * D;
  std::cout << std::fixed << std::setprecision(0);
  std::cout << "  parameters    " << cost.parameters << "   4 D^2 + 4 D = " << formula_params
            << "   module.parameter_count() = " << mha.parameter_count() << "\n";
  std::cout << "  forward FLOPs " << cost.forward_flops << "   8 T D^2 + 4 T^2 D = " << formula_flops << "\n";
  std::cout << "  KV cache      " << cost.kv_elements_per_token << " scalars per token (2 h d_k = " << 2 * h * dk
            << ")\n";
  ok = ok && cost.parameters == formula_params && mha.parameter_count() == formula_params &&
       cost.forward_flops == formula_flops && cost.kv_elements_per_token == 2 * h * dk;

  std::cout << "\n" << (ok ? "all checks passed" : "SOME CHECK FAILED") << "\n";
  return ok ? 0 : 1;
}
