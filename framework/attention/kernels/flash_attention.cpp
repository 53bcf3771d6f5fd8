// attention/kernels/flash_attention.cpp: scaled dot-product attention as one tiled kernel (FlashAttention-2 style).
//
// For batch b and query head i (kv head i / g, g = h / h_kv), query rows in blocks Q_r of
// Bq rows and key rows in blocks K_c, V_c of Bk rows (spec section 6):
// forward, per query block:  m = -inf, l = 0, O = 0;  for every key block with a visible key:
//   S  = scale Q_r K_c^T                    (Bq x Bk, gemm);  hidden entries -> -inf
//   m' = max(m, rowmax S);  P = exp(S - m');  l = e^(m - m') l + rowsum P
//   O  = e^(m - m') O + P V_c               (gemm);  m = m'
// end: O /= l;  Lse = m + ln l.  A row with no visible key gets O = 0 and Lse = -inf.
// backward: D = rowsum(dO * O); for every block pair with a visible key:
//   P  = exp(scale Q_r K_c^T - Lse)  (0 where hidden)
//   dV_c += P^T dO_r;  dP = dO_r V_c^T;  dS = P * (dP - D)
//   dQ_r += scale dS K_c;  dK_c += scale dS^T Q_r
// Only the output and Lse (B, h, L) are kept for the backward: memory O(T d) per head instead of
// the (L x S) score and weight matrices the composed path stores.
// Threads (headlab/core/threads.hpp): the forward shares out (batch, head) pairs, the backward
// (batch, kv head) pairs, so every sum is taken in the same order for any thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "headlab/attention/attention.hpp"
#include "headlab/core/errors.hpp"
#include "ops/kernels/blas_gemm.hpp"
#include "ops/kernels/row_kernels.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

namespace {

// Which keys each query may see: positions (causal / window / sinks) and key padding.
struct Visibility {
  bool positional = false;
  std::size_t window = 0, sinks = 0;
  std::vector<std::int64_t> qpos, kpos;
  const bool* padding = nullptr;  // (B, S), true = ignore
  std::size_t S = 0;
  bool visible(std::size_t b, std::size_t r, std::size_t c) const {
    if (padding && padding[b * S + c]) return false;
    if (!positional) return true;
    const std::int64_t p = qpos[r], key = kpos[c], W = std::int64_t(window), K = std::int64_t(sinks);
    if (key > p) return false;                    // no looking ahead
    if (W > 0 && key <= p - W && key >= K) return false;  // outside the window, not a sink
    return true;
  }
};

enum class BlockView { hidden, partial, visible };

// Which keys of a block the queries see: all of them (the usual case below the causal diagonal:
// no per-entry work), none (skip the block), or some: then mask (rows x cols, 1 = visible).
BlockView block_mask(const Visibility& vis, std::size_t b, std::size_t r0, std::size_t rows, std::size_t c0,
                     std::size_t cols, std::vector<unsigned char>& mask) {
  if (!vis.padding && !vis.positional) return BlockView::visible;
  if (!vis.padding && vis.window == 0) {  // causal only: visible iff key position <= query position
    const auto [q_lo, q_hi] = std::minmax_element(vis.qpos.begin() + r0, vis.qpos.begin() + r0 + rows);
    const auto [k_lo, k_hi] = std::minmax_element(vis.kpos.begin() + c0, vis.kpos.begin() + c0 + cols);
    if (*k_hi <= *q_lo) return BlockView::visible;
    if (*k_lo > *q_hi) return BlockView::hidden;
    const std::int64_t* kp = vis.kpos.data() + c0;
    for (std::size_t r = 0; r < rows; ++r) {  // a block on the diagonal
      const std::int64_t p = vis.qpos[r0 + r];
      for (std::size_t c = 0; c < cols; ++c) mask[r * cols + c] = kp[c] <= p;
    }
    return BlockView::partial;
  }
  bool any = false, all = true;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const bool v = vis.visible(b, r0 + r, c0 + c);
      mask[r * cols + c] = v;
      any = any || v;
      all = all && v;
    }
  return all ? BlockView::visible : any ? BlockView::partial : BlockView::hidden;
}

// Sets the hidden entries of a block of scores (rows x cols) to -inf.
template <typename T>
void hide(T* s, std::size_t rows, std::size_t cols, const std::vector<unsigned char>& mask) {
  for (std::size_t i = 0; i < rows * cols; ++i)
    if (!mask[i]) s[i] = -std::numeric_limits<T>::infinity();
}

}  // namespace

template <typename T>
SdpaResult<T> flash_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                              const SdpaOptions<T>& opt, std::size_t block) {
  const Shape qs = q.shape(), ks = k.shape(), vs = v.shape();
  auto fail = [&](const std::string& why) {
    throw ShapeError("flash_attention: " + why + "; got q " + shape_str(qs) + ", k " + shape_str(ks) + ", v " +
                     shape_str(vs) + " (expects q (B, h, L, d), k (B, h_kv, S, d), v (B, h_kv, S, d_v))");
  };
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) fail("q, k and v must be 4-D");
  const std::size_t B = qs[0], H = qs[1], L = qs[2], d = qs[3], Hkv = ks[1], S = ks[2], dv = vs[3];
  if (ks[0] != B || vs[0] != B) fail("batch sizes differ");
  if (ks[3] != d) fail("q and k head sizes differ");
  if (vs[1] != Hkv || vs[2] != S) fail("k and v disagree on kv heads or length");
  if (Hkv == 0 || H % Hkv != 0) fail("kv heads must divide query heads");
  if (block == 0) throw ValueError("flash_attention: block must be > 0");
  if (opt.attn_mask || opt.attn_bias || opt.need_weights || (opt.training && opt.dropout > 0)) {
    throw ValueError("flash_attention: attn_mask, attn_bias, need_weights and attention dropout are not supported "
                     "by the tiled kernel; use scaled_dot_product_attention (the composed path)");
  }
  auto vis = std::make_shared<Visibility>();
  vis->positional = opt.causal || opt.window > 0;
  vis->window = opt.window;
  vis->sinks = opt.sinks;
  vis->S = S;
  if (vis->positional) {
    vis->kpos = opt.key_positions;
    vis->qpos = opt.query_positions;
    if (vis->kpos.empty())
      for (std::size_t j = 0; j < S; ++j) vis->kpos.push_back(std::int64_t(j));
    if (vis->qpos.empty())  // the last L positions
      for (std::size_t i = 0; i < L; ++i) vis->qpos.push_back(std::int64_t(S) - std::int64_t(L) + std::int64_t(i));
    if (vis->kpos.size() != S || vis->qpos.size() != L)
      fail(std::to_string(vis->qpos.size()) + " query positions and " + std::to_string(vis->kpos.size()) +
           " key positions for L = " + std::to_string(L) + ", S = " + std::to_string(S));
  }
  std::shared_ptr<MaskArray> padding;
  if (opt.key_padding_mask) {
    if (detail::shape_of(*opt.key_padding_mask) != Shape{B, S})
      throw ShapeError("flash_attention: key_padding_mask of shape " + shape_str(detail::shape_of(*opt.key_padding_mask)) +
                       " should be (B, S) = " + shape_str(Shape{B, S}));
    padding = std::make_shared<MaskArray>(*opt.key_padding_mask);
    vis->padding = padding->data();
  }
  const T scale = T(opt.scale ? *opt.scale : 1.0 / std::sqrt(double(d)));
  const std::size_t g = H / Hkv, Bq = std::min(block, std::max<std::size_t>(L, 1)), Bk = std::min(block, std::max<std::size_t>(S, 1));
  const T neg_inf = -std::numeric_limits<T>::infinity();

  // ---- Forward ----
  Array<T> out = xt::zeros<T>({B, H, L, dv});
  auto lse = std::make_shared<std::vector<T>>(B * H * L, neg_inf);  // (B, h, L)
  {
    const T *Q = q.value().data(), *K = k.value().data(), *V = v.value().data();
    T* O = out.data();
    // Heads are independent: the (b, head) pairs are shared among the threads.
    parallel_for(B * H, L * S * (d + dv), [&](std::size_t bh0, std::size_t bh1) {
      std::vector<T> s(Bq * Bk), m(Bq), l(Bq);
      std::vector<unsigned char> mask(Bq * Bk);
      for (std::size_t bh = bh0; bh < bh1; ++bh) {
        const std::size_t b = bh / H, hh = bh % H, kv = hh / g;
        const T* Qh = Q + (b * H + hh) * L * d;
        const T* Kh = K + (b * Hkv + kv) * S * d;
        const T* Vh = V + (b * Hkv + kv) * S * dv;
        T* Oh = O + (b * H + hh) * L * dv;
        for (std::size_t r0 = 0; r0 < L; r0 += Bq) {
          const std::size_t rows = std::min(Bq, L - r0);
          std::fill(m.begin(), m.end(), neg_inf);
          std::fill(l.begin(), l.end(), T(0));
          for (std::size_t c0 = 0; c0 < S; c0 += Bk) {
            const std::size_t cols = std::min(Bk, S - c0);
            const BlockView view = block_mask(*vis, b, r0, rows, c0, cols, mask);
            if (view == BlockView::hidden) continue;  // nothing visible: skip the block
            detail::gemm(false, true, rows, cols, d, Qh + r0 * d, Kh + c0 * d, T(0), s.data(), scale);  // S = scale Q K^T
            if (view == BlockView::partial) hide(s.data(), rows, cols, mask);
            for (std::size_t r = 0; r < rows; ++r) {
              T* sr = s.data() + r * cols;
              const T m_new = std::max(m[r], detail::row_max(sr, cols));
              if (m_new == neg_inf) {  // no visible key in this row yet
                std::fill(sr, sr + cols, T(0));
                continue;
              }
              const T correction = m[r] == neg_inf ? T(0) : std::exp(m[r] - m_new);
              const T row_sum = detail::row_exp_shifted(sr, m_new, sr, cols);  // P = exp(S - m'), 0 where hidden
              detail::flush_subnormals(sr, cols);
              l[r] = correction * l[r] + row_sum;
              T* o = Oh + (r0 + r) * dv;
              for (std::size_t e = 0; e < dv; ++e) o[e] *= correction;
              m[r] = m_new;
            }
            detail::gemm(false, false, rows, dv, cols, s.data(), Vh + c0 * dv, T(1), Oh + r0 * dv);  // O += P V
          }
          for (std::size_t r = 0; r < rows; ++r) {
            T* o = Oh + (r0 + r) * dv;
            if (l[r] > T(0)) {
              for (std::size_t e = 0; e < dv; ++e) o[e] /= l[r];
              (*lse)[(b * H + hh) * L + r0 + r] = m[r] + std::log(l[r]);
            } else {
              std::fill(o, o + dv, T(0));  // a fully hidden row: zero output, Lse = -inf
            }
          }
        }
      }
    });
  }

  SdpaResult<T> result;
  result.output = make_result<T>(
      "flash_attention", std::move(out), {q, k, v},
      [vis, padding, lse, scale, g, Bq, Bk, neg_inf](Node<T>& node) {
        const Shape qs = node.inputs[0]->shape(), ks = node.inputs[1]->shape(), vs = node.inputs[2]->shape();
        const std::size_t B = qs[0], H = qs[1], L = qs[2], d = qs[3], Hkv = ks[1], S = ks[2], dv = vs[3];
        const T *Q = node.inputs[0]->value.data(), *K = node.inputs[1]->value.data(), *V = node.inputs[2]->value.data();
        const T *O = node.value.data(), *dO = node.grad.data();
        Array<T> dq = xt::zeros<T>(qs), dk = xt::zeros<T>(ks), dvv = xt::zeros<T>(vs);
        // The g query heads of a kv head all add into its dK and dV: the threads share the
        // (b, kv head) pairs, and each sums its query heads and blocks in order, as one thread would.
        parallel_for(B * Hkv, g * L * S * (2 * d + 2 * dv), [&](std::size_t bk0, std::size_t bk1) {
        std::vector<T> p(Bq * Bk), dp(Bq * Bk), D(Bq);
        std::vector<unsigned char> mask(Bq * Bk);
        for (std::size_t bk = bk0; bk < bk1; ++bk)
          for (std::size_t hh = (bk % Hkv) * g; hh < (bk % Hkv + 1) * g; ++hh) {
            const std::size_t b = bk / Hkv, kv = bk % Hkv, qoff = (b * H + hh) * L, koff = (b * Hkv + kv) * S;
            for (std::size_t r0 = 0; r0 < L; r0 += Bq) {
              const std::size_t rows = std::min(Bq, L - r0);
              for (std::size_t r = 0; r < rows; ++r)  // D = rowsum(dO * O)
                D[r] = detail::row_dot(dO + (qoff + r0 + r) * dv, O + (qoff + r0 + r) * dv, dv);
              for (std::size_t c0 = 0; c0 < S; c0 += Bk) {
                const std::size_t cols = std::min(Bk, S - c0);
                const BlockView view = block_mask(*vis, b, r0, rows, c0, cols, mask);
                if (view == BlockView::hidden) continue;
                // P = exp(scale Q K^T - Lse), 0 where hidden
                detail::gemm(false, true, rows, cols, d, Q + (qoff + r0) * d, K + (koff + c0) * d, T(0), p.data(), scale);
                if (view == BlockView::partial) hide(p.data(), rows, cols, mask);
                for (std::size_t r = 0; r < rows; ++r) {
                  const T lrow = (*lse)[qoff + r0 + r];
                  T* pr = p.data() + r * cols;
                  if (lrow == neg_inf) {
                    std::fill(pr, pr + cols, T(0));  // a row with no visible key
                  } else {
                    detail::row_exp_shifted(pr, lrow, pr, cols);
                    detail::flush_subnormals(pr, cols);
                  }
                }
                // dV_c += P^T dO_r;  dP = dO_r V_c^T
                detail::gemm(true, false, cols, dv, rows, p.data(), dO + (qoff + r0) * dv, T(1),
                             dvv.data() + (koff + c0) * dv);
                detail::gemm(false, true, rows, cols, dv, dO + (qoff + r0) * dv, V + (koff + c0) * dv, T(0), dp.data());
                for (std::size_t r = 0; r < rows; ++r) {  // dS = P * (dP - D), kept in dp
                  for (std::size_t c = 0; c < cols; ++c) dp[r * cols + c] = p[r * cols + c] * (dp[r * cols + c] - D[r]);
                  detail::flush_subnormals(dp.data() + r * cols, cols);
                }
                // dQ_r += scale dS K_c;  dK_c += scale dS^T Q_r
                detail::gemm(false, false, rows, d, cols, dp.data(), K + (koff + c0) * d, T(1),
                             dq.data() + (qoff + r0) * d, scale);
                detail::gemm(true, false, cols, d, rows, dp.data(), Q + (qoff + r0) * d, T(1),
                             dk.data() + (koff + c0) * d, scale);
              }
            }
          }
        });
        // Saturated heads give gradients so small that their sums underflow: hand out no subnormals.
        for (Array<T>* grad : {&dq, &dk, &dvv}) detail::flush_subnormals(grad->data(), grad->size());
        if (wants_grad(node, 0)) accumulate_grad(*node.inputs[0], std::move(dq), "flash_attention");
        if (wants_grad(node, 1)) accumulate_grad(*node.inputs[1], std::move(dk), "flash_attention");
        if (wants_grad(node, 2)) accumulate_grad(*node.inputs[2], std::move(dvv), "flash_attention");
      });
  return result;
}

template SdpaResult<float> flash_attention<float>(const Tensor<float>&, const Tensor<float>&, const Tensor<float>&,
                                                  const SdpaOptions<float>&, std::size_t);
template SdpaResult<double> flash_attention<double>(const Tensor<double>&, const Tensor<double>&,
                                                    const Tensor<double>&, const SdpaOptions<double>&, std::size_t);

}  // namespace headlab
