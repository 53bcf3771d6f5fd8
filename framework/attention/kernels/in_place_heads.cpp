// attention/kernels/in_place_heads.cpp: attention with the heads read in place from the projections
// (in_place_heads.hpp gives the formula). Per (batch b, head i), with k_i, v_i, dy_i the head's rows
// where they lie (leading dimension C_kv or h d) and q_i the scaled copy (leading dimension d):
//   forward:  q_i = scale * q rows (copied, kept)        (L x d)
//             P_i = q_i k_i^T                            (L x S, gemm N N on a copy of k_i^T), softmax by rows
//             y_i = P_i v_i                              (L x d, gemm N N) into y's columns
//   backward: dP_i = dy_i v_i^T                          (L x S, gemm N N on a copy of v_i^T)
//             dS   = softmax_backward(P, dP)              by rows
//             dv_i = P_i^T dy_i,  dk_i = dS_i^T q_i      (S x d, gemm T N)
//             dq_i = scale (dS_i k_i)                    (L x d, gemm N N with alpha = scale)
// The softmax forward and backward are the ops' own kernels (ops/kernels/softmax_kernels.hpp) on
// the whole (B, h, L, S) array, as in the composed path.
// Threads (headlab/core/threads.hpp): the (b, i) pairs are shared out; each writes only its own
// head's columns, so every number is the same for any thread count.
#include "attention/kernels/in_place_heads.hpp"

#include <memory>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/core/threads.hpp"
#include "ops/kernels/blas_gemm.hpp"
#include "ops/kernels/row_kernels.hpp"
#include "ops/kernels/softmax_kernels.hpp"

namespace headlab {

namespace {

// Where head i of batch b lies: B, L, S, h, d and the sources' row lengths and column offsets.
struct HeadLayout {
  std::size_t B = 0, L = 0, S = 0, h = 0, d = 0, Cq = 0, Ckv = 0, q_col = 0, k_col = 0, v_col = 0;
  std::size_t q(std::size_t b, std::size_t i) const { return b * L * Cq + q_col + i * d; }
  std::size_t k(std::size_t b, std::size_t i) const { return b * S * Ckv + k_col + i * d; }
  std::size_t v(std::size_t b, std::size_t i) const { return b * S * Ckv + v_col + i * d; }
  std::size_t y(std::size_t b, std::size_t i) const { return b * L * h * d + i * d; }  // in (B, L, h d)
};

template <typename T>
HeadLayout check_layout(const InPlaceHeads<T>& in, const Tensor<T>& kv, bool self) {
  const Shape qs = in.q_src.shape(), ks = kv.shape();
  auto fail = [&](const std::string& why) {
    throw ShapeError("attention_in_place: " + why + "; got q_src " + shape_str(qs) + ", kv_src " + shape_str(ks) +
                     " (expects q_src (B, L, C_q), kv_src (B, S, C_kv))");
  };
  if (qs.size() != 3 || ks.size() != 3) fail("the sources must be 3-D");
  if (ks[0] != qs[0]) fail("batch sizes differ");
  HeadLayout g{qs[0], qs[1], ks[1], in.heads, in.head_dim, qs[2], ks[2], in.q_col, in.k_col, in.v_col};
  const std::size_t width = g.h * g.d;
  if (g.h == 0 || g.d == 0) fail("heads and head_dim must be > 0");
  auto fits = [&](const char* what, std::size_t col, std::size_t row_length) {
    if (col + width > row_length)
      fail(std::string(what) + " columns [" + std::to_string(col) + ", " + std::to_string(col + width) +
           ") do not fit a row of " + std::to_string(row_length));
  };
  fits("query", g.q_col, g.Cq);
  fits("key", g.k_col, g.Ckv);
  fits("value", g.v_col, g.Ckv);
  // The backward writes each gradient into its columns: ranges of one source must not overlap.
  auto apart = [width](std::size_t a, std::size_t b) { return a + width <= b || b + width <= a; };
  if (!apart(g.k_col, g.v_col) || (self && (!apart(g.q_col, g.k_col) || !apart(g.q_col, g.v_col))))
    fail("the query, key and value columns of one source overlap");
  return g;
}

// The keys hide masks, as the softmax kernels read them (ShapeError when a mask does not fit).
kernels::HiddenKeys hidden_keys(const ScoreMask& hide, const HeadLayout& g) {
  if (hide.mask) throw ValueError("attention_in_place: attn_mask is not supported (use the composed path)");
  return kernels::hidden_keys_of(hide, Shape{g.B, g.h, g.L, g.S}, "attention_in_place");
}

// The (b, i) pairs, shared among the threads: fn(b, i, bh, scratch) with bh = b h + i and a buffer
// of `scratch` elements for the thread.
template <typename T, typename Fn>
void for_each_head(const HeadLayout& g, std::size_t work, std::size_t scratch, Fn&& fn) {
  parallel_for(g.B * g.h, work, [&](std::size_t bh0, std::size_t bh1) {
    std::vector<T> buffer(scratch);
    for (std::size_t bh = bh0; bh < bh1; ++bh) fn(bh / g.h, bh % g.h, bh, buffer.data());
  });
}

// Asks the cache for every line of the n rows of d > 0 elements at `rows`, ld apart, before the
// transposes read them: a head's rows are short pieces far apart (one 64-byte line each at d = 16
// floats), which the hardware prefetcher does not see coming, so each row's first read waited on its
// own miss. Changes no number (docs/performance.md, "Prefetched head rows").
template <typename T>
void prefetch_rows(const T* rows, std::size_t n, std::size_t d, std::size_t ld) {
  constexpr std::size_t kLine = 64 / sizeof(T);
  for (std::size_t j = 0; j < n; ++j) {
    for (std::size_t e = 0; e < d; e += kLine) __builtin_prefetch(rows + j * ld + e);
    __builtin_prefetch(rows + j * ld + d - 1);  // a row that starts inside a line ends in one more
  }
}

// out (d x S) = the transpose of the S rows of d elements at `rows`, ld apart. A product with a
// transposed operand, A B^T, runs as A (B^T) on the copy: OpenBLAS's small-matrix kernels take
// 1.3x (127 x 127 x 32) to 3x (9 x 9 x 16) longer for A B^T than for the same product with B^T
// stored (measured on this machine), and the copy costs less than the difference.
template <typename T>
void transpose_rows(const T* rows, std::size_t S, std::size_t d, std::size_t ld, T* out) {
  prefetch_rows(rows, S, d, ld);
  for (std::size_t j = 0; j < S; ++j)
    for (std::size_t e = 0; e < d; ++e) out[e * S + j] = rows[j * ld + e];
}

}  // namespace

template <typename T>
Tensor<T> attention_in_place(const InPlaceHeads<T>& in, const ScoreMask& hide, T scale) {
  const bool self = !in.kv_src.defined();
  const Tensor<T>& kv = self ? in.q_src : in.kv_src;
  const HeadLayout g = check_layout(in, kv, self);
  const kernels::HiddenKeys hidden = hidden_keys(hide, g);
  const std::size_t L = g.L, S = g.S, d = g.d, hd = g.h * g.d, work = L * S * d;

  // ---- Forward ----
  auto q = std::make_shared<Array<T>>(detail::empty_array<T>({g.B, g.h, L, d}));  // scale * q, per head
  Array<T> scores = detail::empty_array<T>({g.B, g.h, L, S});
  Array<T> y = detail::empty_array<T>({g.B, L, hd});
  const T *Q = in.q_src.value().data(), *KV = kv.value().data();
  for_each_head<T>(g, work, d * S, [&](std::size_t b, std::size_t i, std::size_t bh, T* k_t) {
    T* qh = q->data() + bh * L * d;
    const T* src = Q + g.q(b, i);
    for (std::size_t r = 0; r < L; ++r) detail::row_scale(src + r * g.Cq, d, scale, qh + r * d);
    transpose_rows(KV + g.k(b, i), S, d, g.Ckv, k_t);  // k^T (d x S)
    detail::blas_gemm(false, false, L, S, d, T(1), qh, d, k_t, S, T(0), scores.data() + bh * L * S, S);  // q k^T
  });
  const bool masked = hidden.positions || hidden.padding;
  auto p = std::make_shared<Array<T>>(masked ? kernels::masked_softmax_forward(scores, hidden)
                                             : kernels::softmax_forward(scores, 3));  // P (B, h, L, S)
  for_each_head<T>(g, work, 0, [&](std::size_t b, std::size_t i, std::size_t bh, T*) {
    detail::blas_gemm(false, false, L, d, S, T(1), p->data() + bh * L * S, S, KV + g.v(b, i), g.Ckv, T(0),
                      y.data() + g.y(b, i), hd);
  });

  // ---- Backward ----
  std::vector<Tensor<T>> inputs{in.q_src};
  if (!self) inputs.push_back(in.kv_src);
  const ValueUse use = ValueUse::inputs_only(self ? 1u : 2u);  // reads k and v where they lie
  return make_result<T>(
      "attention_in_place", std::move(y), inputs,
      [g, q, p, scale, self](Node<T>& node) {
        const std::size_t L = g.L, S = g.S, d = g.d, hd = g.h * g.d, work = L * S * d;
        const T* KV = node.inputs[self ? 0 : 1]->value.data();
        const T* dY = node.grad.data();
        // Every column of a source that no head reads gets a zero gradient (the ranges do not overlap).
        auto gradient = [](const Shape& shape, bool covered) {
          return covered ? detail::empty_array<T>(shape) : Array<T>(xt::zeros<T>(shape));
        };
        Array<T> dq_src = gradient({g.B, L, g.Cq}, self ? g.Cq == 3 * hd : g.Cq == hd);
        Array<T> dkv_src = self ? Array<T>() : gradient({g.B, S, g.Ckv}, g.Ckv == 2 * hd);
        T* dKV = self ? dq_src.data() : dkv_src.data();
        Array<T> dp = detail::empty_array<T>({g.B, g.h, L, S});
        for_each_head<T>(g, work, d * S, [&](std::size_t b, std::size_t i, std::size_t bh, T* v_t) {
          transpose_rows(KV + g.v(b, i), S, d, g.Ckv, v_t);  // v^T (d x S)
          detail::blas_gemm(false, false, L, S, d, T(1), dY + g.y(b, i), hd, v_t, S, T(0), dp.data() + bh * L * S,
                            S);  // dP = dy v^T
        });
        const Array<T> ds = kernels::softmax_backward(*p, dp, 3);
        for_each_head<T>(g, 3 * work, 0, [&](std::size_t b, std::size_t i, std::size_t bh, T*) {
          const T* Pi = p->data() + bh * L * S;
          const T* dSi = ds.data() + bh * L * S;
          detail::blas_gemm(true, false, S, d, L, T(1), Pi, S, dY + g.y(b, i), hd, T(0), dKV + g.v(b, i), g.Ckv);  // dv
          detail::blas_gemm(true, false, S, d, L, T(1), dSi, S, q->data() + bh * L * d, d, T(0), dKV + g.k(b, i),
                            g.Ckv);  // dk = dS^T q
          detail::blas_gemm(false, false, L, d, S, scale, dSi, S, KV + g.k(b, i), g.Ckv, T(0),
                            dq_src.data() + g.q(b, i), g.Cq);  // dq = scale dS k
        });
        if (wants_grad(node, 0)) accumulate_grad(*node.inputs[0], std::move(dq_src), "attention_in_place");
        if (!self && wants_grad(node, 1)) accumulate_grad(*node.inputs[1], std::move(dkv_src), "attention_in_place");
      },
      use);
}

template Tensor<float> attention_in_place<float>(const InPlaceHeads<float>&, const ScoreMask&, float);
template Tensor<double> attention_in_place<double>(const InPlaceHeads<double>&, const ScoreMask&, double);

}  // namespace headlab
