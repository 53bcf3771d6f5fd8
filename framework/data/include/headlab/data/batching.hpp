// headlab/data/batching.hpp: parallel sentences as padded id batches, cut by a token budget.
//
// A pair is encoded as   source = ids(tokens) + [</s>]
//                        target = [<s>] + ids(tokens) + [</s>]
// and trained with decoder input target[:-1] and labels target[1:].
//
// Token-budget batching (as fairseq's --max-tokens): sort the pairs by
// (source length, target length, position), then walk them in order, adding a
// pair while  n * max(longest source, longest target) <= max_tokens  (n counting
// the new pair); a pair that alone exceeds the budget forms its own batch.
// Similar lengths end up together, so little of a batch is padding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab {

struct EncodedPair {
  std::vector<std::int64_t> source;  // ids(tokens) + </s>
  std::vector<std::int64_t> target;  // <s> + ids(tokens) + </s>
};

// Consecutive batches of at most `batch` rows over rows [0, count): [0, b), [b, 2b), ..., the last
// one shorter; none when count is 0. For held-out sets evaluated a batch at a time.
struct RowRange {
  std::size_t first = 0, last = 0;  // rows [first, last)
  std::size_t size() const { return last - first; }
};
std::vector<RowRange> row_ranges(std::size_t count, std::size_t batch);  // ValueError when batch is 0
IndexArray rows_of(const IndexArray& rows, RowRange range);               // rows[first:last, :], (last - first, L)

// Row indices into `pairs`, one list per batch, in sorted order.
std::vector<std::vector<std::size_t>> token_budget_batches(const std::vector<EncodedPair>& pairs,
                                                           std::size_t max_tokens);

// One padded batch (pad id 0 on the right).
struct Batch {
  IndexArray source;          // (B, S)
  IndexArray target_in;       // (B, T-1) = target[:, :-1]
  IndexArray target_out;      // (B * (T-1)) = target[:, 1:] flattened, the labels
  MaskArray source_padding;   // (B, S)   true = pad
  MaskArray target_padding;   // (B, T-1) true = pad
  std::size_t target_tokens = 0;  // labels that are not pad
};
Batch make_batch(const std::vector<EncodedPair>& pairs, const std::vector<std::size_t>& rows);

// Sources only, padded (for decoding): (B, S) ids and (B, S) padding.
struct SourceBatch {
  IndexArray source;
  MaskArray source_padding;
};
SourceBatch make_source_batch(const std::vector<std::vector<std::int64_t>>& sources);

}  // namespace headlab
