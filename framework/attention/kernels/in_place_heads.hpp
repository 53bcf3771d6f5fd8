// attention/kernels/in_place_heads.hpp (internal): multi-head attention whose heads are read in place
// from the fused projections: the fast path of the standard layer (attention/module_in_place.cpp).
//
// For h heads of size d (h_kv = h), batch B, L queries and S keys:
//   q_src  (B, L, C_q):   head i's query is columns [q_col + i d, q_col + (i + 1) d) of each row
//   kv_src (B, S, C_kv):  head i's key is columns [k_col + i d, ...), its value [v_col + i d, ...)
//   q_i  = scale * (those columns of q_src)                  (B, h, L, d)    the one copy kept
//   P_i  = softmax(q_i k_i^T, hidden keys at -inf)            (B, h, L, S)
//   y    = [P_1 v_1, ..., P_h v_h] along the channels         (B, L, h d)
// which is merge_heads(sdpa(split_heads(q), split_heads(k), split_heads(v))) of the composed path
// (module.cpp, sdpa.cpp) with the same products and softmax rows, so the same numbers: equal bits
// where OpenBLAS sums A B and A^T B in one order, as on the machine this was written on;
// tests/attention/test_in_place_heads.cpp holds them equal to rounding anywhere.
// What it skips are the graph's copies around them: the split of the projection, the three head
// splits, the transposed k and the head merge, each forward and backward. The products read the
// heads' rows where they lie (a BLAS leading dimension of C_q, C_kv or h d), except two: q k^T and
// dy v^T run on a small per-head copy of k_i^T or v_i^T (d x S), which OpenBLAS multiplies faster
// than a transposed operand (in_place_heads.cpp, transpose_rows).
#pragma once

#include <cstddef>

#include "headlab/core/tensor.hpp"
#include "headlab/ops/ops.hpp"

namespace headlab {

template <typename T>
struct InPlaceHeads {
  Tensor<T> q_src;   // (B, L, C_q)
  Tensor<T> kv_src;  // (B, S, C_kv); undefined: self-attention, keys and values are columns of q_src
  std::size_t q_col = 0, k_col = 0, v_col = 0;
  std::size_t heads = 0, head_dim = 0;
};

// y (B, L, h d) as above. hide: positions (L, S) and padding (B, S) only (ValueError for an
// attn_mask); ShapeError when a column range or a mask does not fit.
// Backward (* elementwise): dP_i = dy_i v_i^T,  dS_i = P_i * (dP_i - rowsum(dP_i * P_i)),
//           dq_i = scale dS_i k_i,  dk_i = dS_i^T q_i (q_i scaled),  dv_i = P_i^T dy_i, into their columns.
template <typename T>
Tensor<T> attention_in_place(const InPlaceHeads<T>& in, const ScoreMask& hide, T scale);

}  // namespace headlab
