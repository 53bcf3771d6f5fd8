// tutorials/02_one_head_by_hand.cpp: one attention head, small enough to follow every number.
//
// Chapter 2 of the course (chapter 1, 01_attention_walkthrough.cpp, follows the
// shapes of a whole multi-head layer; this one zooms in on a single head). It
// is meant to be read from top to bottom and also runs
// (`tutorial_one_head`, and the ctest `tutorial.one_head`).
//
// A "sentence" of T = 4 tokens, "the cat sat down", each with a hand-picked
// query, key and value of size d = 2, chosen so that the dot products are small
// integers. One head computes (Vaswani et al. 2017, eq. 1)
//
//     Attention(Q, K, V) = softmax(Q K^T / sqrt(d)) V
//
// and we do it step by step, printing each matrix: the scores, the softmax row
// by row, the weighted sum of the values. Then masks: the causal mask, masking
// one key, and a query that can see no key at all (headlab gives it zero
// weights and a zero output where PyTorch gives NaN). Every variant is checked
// against scaled_dot_product_attention, and finally we run backward through the
// head and check dL/dq against the formula for the softmax's gradient. The
// program exits with status 1 if any check fails.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "headlab/attention/attention.hpp"
#include "headlab/headlab.hpp"
#include "tutorial_threads.hpp"

#include "tutorial_table.hpp"

using namespace headlab;

namespace {

// ---- Printing helpers -----------------------------------------------------

// max |a - b| over all elements of two arrays of the same number of elements
// (the shapes may differ by size-1 axes, e.g. (4, 2) and (1, 1, 4, 2)).
double max_abs_diff_same_size(const Array<float>& a, const Array<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a.data()[i]) - double(b.data()[i])));
  return m;
}

void section(const std::string& title) { std::cout << "\n== " << title << " ==\n\n"; }

const std::vector<std::string> kTokens{"the", "cat", "sat", "down"};
const std::vector<std::string> kCoords{"x", "y"};

// A matrix (any array with R * C elements, read row-major) with labelled rows and columns.
void print_matrix(const std::string& title, const Array<float>& a, const std::vector<std::string>& rows,
                  const std::vector<std::string>& cols, int precision = 3) {
  std::cout << "  " << title << "\n      " << std::setw(6) << "";
  for (const auto& c : cols) std::cout << std::right << std::setw(9) << c;
  std::cout << "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::cout << "      " << std::left << std::setw(6) << rows[r] << std::right;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const float v = a.data()[r * cols.size() + c];
      if (std::isinf(v)) {
        std::cout << std::setw(9) << (v < 0 ? "-inf" : "inf");
      } else {
        std::cout << std::setw(9) << std::fixed << std::setprecision(precision) << v;
      }
    }
    std::cout << "\n";
  }
  std::cout << "\n";
}

// A bool (T, T) mask as a grid: x = masked (not allowed), . = visible.
void print_mask(const std::string& title, const MaskArray& m) {
  std::cout << "  " << title << "  (x = masked, . = visible)\n      " << std::setw(6) << "";
  for (const auto& c : kTokens) std::cout << std::right << std::setw(5) << c;
  std::cout << "\n";
  for (std::size_t r = 0; r < kTokens.size(); ++r) {
    std::cout << "      " << std::left << std::setw(6) << kTokens[r] << std::right;
    for (std::size_t c = 0; c < kTokens.size(); ++c) std::cout << std::setw(5) << (m(r, c) ? "x" : ".");
    std::cout << "\n";
  }
  std::cout << "\n";
}

// The head by hand: scores = q k^T / sqrt(d), masked entries set to -inf,
// weights = softmax over the keys, out = weights @ v. All (T, d) / (T, T).
struct Head {
  TensorF scores, masked, weights, out;
};
Head head_by_hand(const TensorF& q, const TensorF& k, const TensorF& v, const MaskArray* mask) {
  Head hd;
  const float scale = 1.0f / std::sqrt(float(q.size(-1)));
  hd.scores = matmul(q, transpose(k, 0, 1)) * scale;
  hd.masked = mask ? masked_fill(hd.scores, *mask, -std::numeric_limits<float>::infinity()) : hd.scores;
  hd.weights = softmax(hd.masked, -1);
  hd.out = matmul(hd.weights, v);
  return hd;
}

}  // namespace

int main() {
  use_tutorial_threads();
  bool ok = true;
  const std::size_t T = 4, d = 2;

  // ---- 1. Queries, keys and values ---------------------------------------------
  // In a real layer q, k, v are learned projections of the token embeddings
  // (chapter 1). Here we pick them by hand. Read the keys as "what I am" and
  // the queries as "what I look for":
  //   - "the" and "cat" look for a determiner (the y direction, where "the"'s key points),
  //   - "sat" looks for a noun doing the sitting (the x direction: "cat", and less so "sat"),
  //   - "down" looks at both directions.
  // The values are what each token hands over when it is attended to.
  section("1. The sentence \"the cat sat down\": q, k, v by hand (T = 4, d = 2)");
  const TensorF q = from_data<float>({0, 1, /**/ 0, 2, /**/ 2, 0, /**/ 1, 1}, {T, d}, /*requires_grad=*/true);
  const TensorF k = from_data<float>({0, 1, /**/ 2, 0, /**/ 1, 0, /**/ 0, -1}, {T, d}, true);
  const TensorF v = from_data<float>({1, 0, /**/ 0, 1, /**/ 1, 1, /**/ -1, 0}, {T, d}, true);
  print_matrix("q (a query per token)", q.value(), kTokens, kCoords, 0);
  print_matrix("k (a key per token)", k.value(), kTokens, kCoords, 0);
  print_matrix("v (a value per token)", v.value(), kTokens, kCoords, 0);

  // ---- 2. Scores ---------------------------------------------------------------
  // scores[i, j] = q_i . k_j / sqrt(d): how well query i matches key j. Row i
  // belongs to query token i; column j to key token j. The raw dot products
  // are the integers we designed; 1/sqrt(d) = 0.707 keeps their size
  // independent of d (for random unit-variance q and k, q . k has variance d).
  section("2. Scores: q k^T / sqrt(d)");
  const Head plain = head_by_hand(q, k, v, nullptr);
  {
    NoGradGuard no_grad;
    print_matrix("q k^T (dot products)", matmul(q, transpose(k, 0, 1)).value(), kTokens, kTokens, 0);
  }
  print_matrix("scores = q k^T / sqrt(2)", plain.scores.value(), kTokens, kTokens);

  // ---- 3. Softmax, row by row -----------------------------------------------------
  // Each query distributes one unit of attention over the keys:
  //   weights[i, j] = exp(s_ij - m_i) / sum_j' exp(s_ij' - m_i),  m_i = max_j s_ij.
  // Subtracting the row max changes nothing mathematically and keeps exp() from
  // overflowing. We do it in plain arithmetic here and compare with softmax().
  section("3. Softmax over the keys, one row at a time");
  const Array<float>& s = plain.scores.value();
  const Array<float>& w = plain.weights.value();
  double softmax_err = 0;
  for (std::size_t i = 0; i < T; ++i) {
    double m = s(i, 0);
    for (std::size_t j = 1; j < T; ++j) m = std::max(m, double(s(i, j)));
    std::vector<double> e(T);
    double total = 0;
    for (std::size_t j = 0; j < T; ++j) total += e[j] = std::exp(double(s(i, j)) - m);
    std::cout << "  " << std::left << std::setw(5) << kTokens[i] << std::right << " exp(s - " << std::fixed
              << std::setprecision(3) << m << ") = [";
    for (std::size_t j = 0; j < T; ++j) std::cout << (j ? ", " : "") << std::setw(5) << e[j];
    std::cout << "]  sum " << std::setw(5) << total << "  ->  weights [";
    for (std::size_t j = 0; j < T; ++j) {
      std::cout << (j ? ", " : "") << std::setw(5) << e[j] / total;
      softmax_err = std::max(softmax_err, std::fabs(e[j] / total - double(w(i, j))));
    }
    std::cout << "]\n";
  }
  std::cout << "\n";
  print_matrix("weights = softmax(scores, -1)   (each row sums to 1)", w, kTokens, kTokens);
  std::cout << "  max |by hand - softmax()| = " << std::scientific << std::setprecision(2) << softmax_err << "\n";
  ok = ok && softmax_err <= 1e-6;
  // "sat" found its subject: most of its weight is on "cat".
  const bool sat_on_cat = w(2, 1) > 0.5f && w(2, 1) == *std::max_element(&w(2, 0), &w(2, 0) + T);
  std::cout << "  \"sat\" puts " << std::fixed << std::setprecision(3) << w(2, 1) << " of its attention on \"cat\"\n";
  ok = ok && sat_on_cat;

  // ---- 4. Weighted sum of the values -----------------------------------------------
  // out_i = sum_j weights[i, j] v_j: each token's output is an average of the
  // values, weighted by how well its query matched each key.
  section("4. out = weights @ v");
  print_matrix("out (one row per query token)", plain.out.value(), kTokens, kCoords);
  std::cout << "  out[sat] = " << std::setprecision(3);
  for (std::size_t j = 0; j < T; ++j)
    std::cout << (j ? " + " : "") << w(2, j) << " v[" << kTokens[j] << "]";
  std::cout << "\n";

  ShapeTable table;
  table.add("q, k, v", "by hand", "(T, d)", q.shape());
  table.add("scores", "matmul(q, transpose(k, 0, 1)) / sqrt(d)", "(T, T)", plain.scores.shape());
  table.add("weights", "softmax(scores, -1)", "(T, T)", plain.weights.shape());
  table.add("out", "matmul(weights, v)", "(T, d)", plain.out.shape());
  std::cout << "\n";
  table.print();

  // ---- 5. The causal mask --------------------------------------------------------
  // A decoder predicts the next token, so token i may only look at tokens
  // j <= i. headlab masks are bool with PyTorch's convention: true = NOT
  // allowed. masked_fill puts -inf there; exp(-inf) = 0, so those keys get
  // exactly zero weight and the rest of the row renormalises.
  section("5. The causal mask");
  MaskArray causal = MaskArray::from_shape({T, T});
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j) causal(i, j) = j > i;
  print_mask("causal mask (key j > query i)", causal);
  const Head causal_head = head_by_hand(q, k, v, &causal);
  print_matrix("masked scores", causal_head.masked.value(), kTokens, kTokens);
  print_matrix("weights: lower triangular; \"the\" can only attend to itself", causal_head.weights.value(), kTokens,
               kTokens);
  ok = ok && causal_head.weights.value()(0, 0) == 1.0f;

  // ---- 6. Masking one key ----------------------------------------------------------
  // Say "down" were padding (a batch filler). Masking a key removes its column
  // and renormalises every row over the keys that are left:
  //   weights'[i, j] = weights[i, j] / (1 - weights[i, down])   for j != down.
  section("6. Masking the key \"down\" (as a key_padding_mask would)");
  MaskArray no_down = MaskArray::from_shape({T, T});
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < T; ++j) no_down(i, j) = j == 3;
  print_mask("mask", no_down);
  const Head pad_head = head_by_hand(q, k, v, &no_down);
  print_matrix("weights with \"down\" masked", pad_head.weights.value(), kTokens, kTokens);
  double renorm_err = 0;
  for (std::size_t i = 0; i < T; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      renorm_err = std::max(renorm_err, std::fabs(double(pad_head.weights.value()(i, j)) -
                                                  double(w(i, j)) / (1.0 - double(w(i, 3)))));
  std::cout << "  max |weights' - weights / (1 - weights[:, down])| = " << std::scientific << std::setprecision(2)
            << renorm_err << "\n";
  ok = ok && renorm_err <= 1e-6;

  // ---- 7. A query that sees nothing --------------------------------------------------
  // Combine the causal mask with masking the key "the" (say the sentence were
  // left-padded and "the" were the pad). Query "the" may only see key "the",
  // which is masked: its whole row of scores is -inf. Mathematically the
  // softmax is 0/0; PyTorch returns NaN there, which then spreads through
  // everything downstream. headlab's convention: a fully masked row gets zero
  // weights, hence a zero output (and zero gradient).
  section("7. A fully masked row gives zeros (headlab convention)");
  MaskArray causal_no_the = causal;
  for (std::size_t i = 0; i < T; ++i) causal_no_the(i, 0) = true;
  print_mask("causal mask, and key \"the\" masked", causal_no_the);
  const Head empty_head = head_by_hand(q, k, v, &causal_no_the);
  print_matrix("weights (row \"the\" is all zeros, not NaN)", empty_head.weights.value(), kTokens, kTokens);
  print_matrix("out", empty_head.out.value(), kTokens, kCoords);
  bool zero_row = true;
  for (std::size_t j = 0; j < T; ++j) zero_row = zero_row && empty_head.weights.value()(0, j) == 0.0f;
  for (std::size_t c = 0; c < d; ++c) zero_row = zero_row && empty_head.out.value()(0, c) == 0.0f;
  std::cout << "  row \"the\": " << (zero_row ? "weights and output exactly 0" : "NOT ZERO") << "\n";
  ok = ok && zero_row;

  // ---- 8. The library's scaled_dot_product_attention --------------------------------
  // The library function takes q (B, h, L, d), k and v (B, h, S, d): a batch of
  // sequences and a set of heads. Ours is B = 1, h = 1. The masks come as
  // options: causal, key_padding_mask (B, S) with true = padding, or a general
  // attn_mask (L, S). Each variant must give exactly our numbers.
  section("8. The same with scaled_dot_product_attention (SdpaOptions)");
  auto as_bhld = [&](const TensorF& t) { return reshape(t, {1, 1, std::ptrdiff_t(T), std::ptrdiff_t(d)}); };
  const TensorF q4 = as_bhld(q), k4 = as_bhld(k), v4 = as_bhld(v);
  ShapeTable sdpa_table;
  sdpa_table.add("q, k, v", "reshape(.., {1, 1, T, d})", "(B, h, T, d)", q4.shape());
  auto pad = [&](std::size_t key) {
    MaskArray m = MaskArray::from_shape({1, T});
    for (std::size_t j = 0; j < T; ++j) m(0, j) = j == key;
    return m;
  };
  struct Variant {
    std::string name;
    SdpaOptions<float> options;
    const Head* by_hand;
  };
  std::vector<Variant> variants(4);
  variants[0] = {"no mask", {}, &plain};
  variants[1] = {"causal = true", {}, &causal_head};
  variants[1].options.causal = true;
  variants[2] = {"key_padding_mask: down", {}, &pad_head};
  variants[2].options.key_padding_mask = pad(3);
  variants[3] = {"causal + key_padding_mask: the", {}, &empty_head};
  variants[3].options.causal = true;
  variants[3].options.key_padding_mask = pad(0);
  std::cout << "  " << std::left << std::setw(32) << "options" << "max |by hand - sdpa|  (output, weights)\n";
  for (Variant& var : variants) {
    var.options.need_weights = true;
    const SdpaResult<float> r = scaled_dot_product_attention(q4, k4, v4, var.options);
    const double d_out = max_abs_diff_same_size(r.output.value(), var.by_hand->out.value());
    const double d_w = max_abs_diff_same_size(r.weights.value(), var.by_hand->weights.value());
    std::cout << "  " << std::left << std::setw(32) << var.name << std::scientific << std::setprecision(2) << d_out
              << ", " << d_w << ((d_out <= 1e-6 && d_w <= 1e-6) ? "  (same)" : "  (DIFFERENT)") << "\n";
    ok = ok && d_out <= 1e-6 && d_w <= 1e-6;
    if (&var == &variants[0]) {
      sdpa_table.add("weights", "result.weights (need_weights)", "(B, h, T, T)", r.weights.shape());
      sdpa_table.add("output", "result.output", "(B, h, T, d)", r.output.shape());
    }
  }
  std::cout << "\n";
  sdpa_table.print();

  // ---- 9. Backward through the head -------------------------------------------------
  // Take L = 1/2 sum(out^2), so dL/dout = out. Backward goes through every step
  // in reverse; for the query it gives, with G = dL/dout and W = weights,
  //   dL/dW[i, j]  = G_i . v_j                                  (out = W v)
  //   dL/ds[i, j]  = W[i, j] (dL/dW[i, j] - sum_j' W[i, j'] dL/dW[i, j'])   (softmax)
  //   dL/dq_i      = 1/sqrt(d) sum_j dL/ds[i, j] k_j            (s = q k^T / sqrt(d))
  // We check autograd against this formula, and against the gradient that
  // flows back through scaled_dot_product_attention.
  section("9. Backward: dL/dq for L = 1/2 sum(out^2)");
  const TensorF loss = sum(plain.out * plain.out) * 0.5f;
  loss.backward();
  const Array<float> dq_hand_graph = q.grad();
  print_matrix("dL/dq (autograd)", dq_hand_graph, kTokens, kCoords, 4);
  Array<float> dq_formula = xt::zeros<float>({T, d});
  const Array<float>& out = plain.out.value();
  const float scale = 1.0f / std::sqrt(float(d));
  for (std::size_t i = 0; i < T; ++i) {
    std::vector<double> dW(T);
    double avg = 0;
    for (std::size_t j = 0; j < T; ++j) {
      dW[j] = double(out(i, 0)) * v.value()(j, 0) + double(out(i, 1)) * v.value()(j, 1);
      avg += double(w(i, j)) * dW[j];
    }
    for (std::size_t j = 0; j < T; ++j) {
      const double ds = double(w(i, j)) * (dW[j] - avg);
      for (std::size_t c = 0; c < d; ++c) dq_formula(i, c) += float(scale * ds * k.value()(j, c));
    }
  }
  const double formula_err = max_abs_diff_same_size(dq_hand_graph, dq_formula);
  std::cout << "  max |autograd - formula| = " << std::scientific << std::setprecision(2) << formula_err << "\n";
  ok = ok && formula_err <= 1e-6;

  q.zero_grad();
  k.zero_grad();
  v.zero_grad();
  const TensorF sdpa_out = scaled_dot_product_attention(q4, k4, v4).output;
  (sum(sdpa_out * sdpa_out) * 0.5f).backward();
  const double sdpa_err = max_abs_diff_same_size(dq_hand_graph, q.grad());
  std::cout << "  max |by hand - through sdpa| = " << sdpa_err << "\n\n";
  ok = ok && sdpa_err <= 1e-6;

  // Under the causal mask, "the" attends only to itself with weight 1 whatever
  // its query is: its softmax has one entry, a constant. So q[the] gets no
  // gradient at all, whatever the loss.
  q.zero_grad();
  const Head causal_again = head_by_hand(q, k, v, &causal);
  (sum(causal_again.out * causal_again.out) * 0.5f).backward();
  print_matrix("dL/dq under the causal mask (row \"the\" is 0)", q.grad(), kTokens, kCoords, 4);
  const bool the_zero = q.grad()(0, 0) == 0.0f && q.grad()(0, 1) == 0.0f;
  ok = ok && the_zero;

  std::cout << (ok ? "all checks passed" : "SOME CHECK FAILED") << "\n";
  return ok ? 0 : 1;
}
