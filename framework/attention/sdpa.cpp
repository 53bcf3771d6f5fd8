// attention/sdpa.cpp: scaled dot-product attention from autograd ops.
//
//   q (B, h, L, d), k (B, h_kv, S, d), v (B, h_kv, S, d_v), g = h / h_kv
//   q_g      = q viewed as (B, h_kv, g L, d)        query heads of a group share one kv head
//   scores   = (q_g * scale) k^T                    (B, h_kv, g L, S) -> viewed (B, h, L, S)
//   scores  += bias
//   weights  = softmax(scores, -1) over the keys no mask hides   (B, h, L, S), fully masked rows are 0
//   out      = dropout(weights) viewed (B, h_kv, g L, S) @ v -> (B, h_kv, g L, d_v) -> (B, h, L, d_v)
// Viewing q per group (instead of repeating k and v g times) lets the matmul
// backward sum each kv head's gradient over its g query heads by itself.
#include <cmath>

#include "headlab/attention/attention.hpp"
#include "headlab/core/task_marker.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

MaskArray position_mask(const std::vector<std::int64_t>& qpos, const std::vector<std::int64_t>& kpos, bool causal,
                        std::size_t window, std::size_t sinks) {
  // m(i, j) = true (hidden) when key position kpos[j] is ahead of query position qpos[i] (causal,
  // also implied by a window W > 0), or when it is W or more behind it and not one of the first
  // `sinks` positions.
  // BEGIN TASK 2.2: causal and sliding-window position mask
  HEADLAB_TASK("2.2");
  MaskArray m = MaskArray::from_shape({qpos.size(), kpos.size()});
  const auto W = static_cast<std::int64_t>(window), K = static_cast<std::int64_t>(sinks);
  for (std::size_t i = 0; i < qpos.size(); ++i) {
    for (std::size_t j = 0; j < kpos.size(); ++j) {
      const std::int64_t p = qpos[i], key = kpos[j];
      bool masked = (causal || W > 0) && key > p;         // no looking ahead
      if (W > 0 && key <= p - W && key >= K) masked = true;  // outside the window and not a sink
      m(i, j) = masked;
    }
  }
  return m;
  // END TASK 2.2
}

namespace {

// Throws unless a mask or bias of shape `src_shape` broadcasts to the scores' shape `full`.
void check_broadcasts(const Shape& src_shape, const Shape& full, const char* what) {
  try {
    if (detail::broadcast_shapes(src_shape, full, "sdpa") != full) throw ShapeError("");
  } catch (const ShapeError&) {
    throw ShapeError(std::string("sdpa: ") + what + " of shape " + shape_str(src_shape) +
                     " does not broadcast to the scores " + shape_str(full) + " (B, h, L, S)");
  }
}

// Given to the TASK 2.3 region, its only caller; [[maybe_unused]] keeps the student copy, where
// that region is blank, free of warnings.

// start, start + 1, ..., start + n - 1
[[maybe_unused]] std::vector<std::int64_t> iota_from(std::int64_t start, std::size_t n) {
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<std::int64_t>(i);
  return v;
}

}  // namespace

template <typename T>
SdpaResult<T> scaled_dot_product_attention(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v,
                                           const SdpaOptions<T>& opt) {
  // ---- Checks: shapes, masks, positions ----
  const Shape qs = q.shape(), ks = k.shape(), vs = v.shape();
  auto fail = [&](const std::string& why) {
    throw ShapeError("sdpa: " + why + "; got q " + shape_str(qs) + ", k " + shape_str(ks) + ", v " + shape_str(vs) +
                     " (expects q (B, h, L, d), k (B, h_kv, S, d), v (B, h_kv, S, d_v))");
  };
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4) fail("q, k and v must be 4-D");
  const std::size_t B = qs[0], h = qs[1], L = qs[2], d = qs[3];
  const std::size_t hkv = ks[1], S = ks[2];
  if (ks[0] != B || vs[0] != B) fail("batch sizes differ");
  if (ks[3] != d) fail("q and k head sizes differ");
  if (vs[1] != hkv || vs[2] != S) fail("k and v disagree on kv heads or length");
  if (hkv == 0 || h % hkv != 0) fail("kv heads must divide query heads");
  const Shape full{B, h, L, S};
  if (opt.attn_bias) {
    const Shape bs = detail::shape_of(*opt.attn_bias);
    if (detail::broadcast_shapes(bs, full, "sdpa") != full) {
      throw ShapeError("sdpa: attn_bias of shape " + shape_str(bs) + " does not broadcast to the scores " +
                       shape_str(full));
    }
  }
  const bool positional = opt.causal || opt.window > 0;
  if (positional) {
    const std::size_t nq = opt.query_positions.empty() ? L : opt.query_positions.size();
    const std::size_t nk = opt.key_positions.empty() ? S : opt.key_positions.size();
    if (nk != S || nq != L) {
      throw ShapeError("sdpa: " + std::to_string(nq) + " query positions and " + std::to_string(nk) +
                       " key positions for L = " + std::to_string(L) + ", S = " + std::to_string(S));
    }
  }
  if (opt.key_padding_mask) {
    const Shape ps = detail::shape_of(*opt.key_padding_mask);
    if (ps != Shape{B, S}) {
      throw ShapeError("sdpa: key_padding_mask of shape " + shape_str(ps) + " should be (B, S) = " +
                       shape_str(Shape{B, S}));
    }
  }
  if (opt.attn_mask) {
    const Shape ms = detail::shape_of(*opt.attn_mask);
    if (ms.size() != 2 && ms.size() != 4) {
      throw ShapeError("sdpa: attn_mask of shape " + shape_str(ms) + " must be (L, S) or (B, h, L, S) = " +
                       shape_str(full));
    }
    check_broadcasts(ms, full, "attn_mask");
  }
  if (opt.training && opt.dropout > 0 && !opt.generator) {
    throw ValueError("sdpa: attention dropout in training needs a generator");
  }

  // ---- Masks: every reason to hide a key, in compact form (ScoreMask, headlab/ops/ops.hpp) ----
  // Positions default to keys 0..S-1 and queries S-L..S-1 (the last L positions); the position
  // mask is (L, S), key_padding_mask (B, S) applies to every head and query, attn_mask as given.
  // masked_softmax reads them row by row: nothing of the scores' size (B, h, L, S) is built.
  ScoreMask hide;
  MaskArray positions;  // (L, S), when positional
  if (positional || opt.key_padding_mask || opt.attn_mask) {
    // BEGIN TASK 2.3: padding and attention masks
    HEADLAB_TASK("2.3");
    if (positional) {
      const auto kpos = opt.key_positions.empty() ? iota_from(0, S) : opt.key_positions;
      const auto qpos = opt.query_positions.empty()
                            ? iota_from(static_cast<std::int64_t>(S) - static_cast<std::int64_t>(L), L)
                            : opt.query_positions;
      positions = position_mask(qpos, kpos, true, opt.window, opt.sinks);
      hide.positions = &positions;
    }
    if (opt.key_padding_mask) hide.padding = &*opt.key_padding_mask;
    if (opt.attn_mask) hide.mask = &*opt.attn_mask;
    // END TASK 2.3
  }

  return attend_with_masks(q, k, v, hide, opt);
}

template <typename T>
SdpaResult<T> attend_with_masks(const Tensor<T>& q, const Tensor<T>& k, const Tensor<T>& v, const ScoreMask& hide,
                                const SdpaOptions<T>& opt) {
  // The shapes, checked by scaled_dot_product_attention ([[maybe_unused]]: the student copy blanks the region).
  [[maybe_unused]] const Shape qs = q.shape(), ks = k.shape(), vs = v.shape();
  [[maybe_unused]] const std::size_t B = qs[0], h = qs[1], L = qs[2], d = qs[3], hkv = ks[1], S = ks[2];
  // ---- Attention (the formula at the top of this file) ----
  // BEGIN TASK 2.1: scaled dot-product attention
  HEADLAB_TASK("2.1");
  const std::size_t dv = vs[3], groups = h / hkv;
  // scores = q_g k^T * scale, (B, h_kv, g L, S) viewed as (B, h, L, S)
  const double scale = opt.scale ? *opt.scale : 1.0 / std::sqrt(static_cast<double>(d));
  const auto sB = static_cast<std::ptrdiff_t>(B), sh = static_cast<std::ptrdiff_t>(h),
             shkv = static_cast<std::ptrdiff_t>(hkv), sL = static_cast<std::ptrdiff_t>(L),
             sS = static_cast<std::ptrdiff_t>(S), sg = static_cast<std::ptrdiff_t>(groups);
  // The grouped views; with one query head per kv head (g = 1) they are the tensors themselves.
  auto view = [groups](const Tensor<T>& t, const std::vector<std::ptrdiff_t>& shape) {
    return groups == 1 ? t : reshape(t, shape);
  };
  // The scale goes on q (B, h, L, d), as PyTorch does, not on the larger scores (B, h, L, S).
  const Tensor<T> q_grouped = view(q * static_cast<T>(scale), {sB, shkv, sg * sL, static_cast<std::ptrdiff_t>(d)});
  Tensor<T> scores = matmul(q_grouped, transpose(k, -1, -2));
  scores = view(scores, {sB, sh, sL, sS});
  if (opt.attn_bias) scores = scores + Tensor<T>(*opt.attn_bias);

  SdpaResult<T> result;
  // (B, h, L, S): softmax over the keys the masks leave visible (hidden ones get weight 0)
  const Tensor<T> weights = hide.empty() ? softmax(scores, -1) : masked_softmax(scores, hide);
  Tensor<T> attn = weights;
  if (opt.training && opt.dropout > 0) attn = dropout(weights, static_cast<T>(opt.dropout), *opt.generator, true);
  // (B, h_kv, g L, S) @ (B, h_kv, S, d_v) -> (B, h_kv, g L, d_v) -> (B, h, L, d_v)
  const Tensor<T> out = matmul(view(attn, {sB, shkv, sg * sL, sS}), v);
  result.output = view(out, {sB, sh, sL, static_cast<std::ptrdiff_t>(dv)});
  if (opt.need_weights) result.weights = weights;
  return result;
  // END TASK 2.1
}

template SdpaResult<float> attend_with_masks<float>(const Tensor<float>&, const Tensor<float>&, const Tensor<float>&,
                                                    const ScoreMask&, const SdpaOptions<float>&);
template SdpaResult<double> attend_with_masks<double>(const Tensor<double>&, const Tensor<double>&,
                                                      const Tensor<double>&, const ScoreMask&,
                                                      const SdpaOptions<double>&);
template SdpaResult<float> scaled_dot_product_attention<float>(const Tensor<float>&, const Tensor<float>&,
                                                               const Tensor<float>&, const SdpaOptions<float>&);
template SdpaResult<double> scaled_dot_product_attention<double>(const Tensor<double>&, const Tensor<double>&,
                                                                 const Tensor<double>&, const SdpaOptions<double>&);

}  // namespace headlab
