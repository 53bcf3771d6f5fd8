// batching.cpp: token-budget batches and their padded arrays.
#include "headlab/data/batching.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include <xtensor/xview.hpp>

#include "headlab/core/errors.hpp"

namespace headlab {

std::vector<RowRange> row_ranges(std::size_t count, std::size_t batch) {
  if (batch == 0) throw ValueError("row_ranges: batch must be > 0");
  std::vector<RowRange> ranges;
  for (std::size_t first = 0; first < count; first += batch) ranges.push_back({first, std::min(count, first + batch)});
  return ranges;
}

IndexArray rows_of(const IndexArray& rows, RowRange range) {
  if (rows.dimension() != 2 || range.first > range.last || range.last > rows.shape()[0])
    throw ShapeError("rows_of: rows [" + std::to_string(range.first) + ", " + std::to_string(range.last) + ") of a " +
                     std::to_string(rows.dimension()) + "-d array" +
                     (rows.dimension() ? " of " + std::to_string(rows.shape()[0]) + " rows" : std::string()));
  return xt::view(rows, xt::range(std::ptrdiff_t(range.first), std::ptrdiff_t(range.last)), xt::all());
}

std::vector<std::vector<std::size_t>> token_budget_batches(const std::vector<EncodedPair>& pairs,
                                                           std::size_t max_tokens) {
  if (max_tokens == 0) throw ValueError("token_budget_batches: max_tokens must be > 0");
  std::vector<std::size_t> order(pairs.size());
  std::iota(order.begin(), order.end(), 0);
  // Sort by (source length, target length, position): stable_sort keeps positions in order.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (pairs[a].source.size() != pairs[b].source.size()) return pairs[a].source.size() < pairs[b].source.size();
    return pairs[a].target.size() < pairs[b].target.size();
  });
  std::vector<std::vector<std::size_t>> batches;
  std::vector<std::size_t> current;
  std::size_t longest = 0;  // max(longest source, longest target) in `current`
  for (std::size_t i : order) {
    const std::size_t len = std::max(pairs[i].source.size(), pairs[i].target.size());
    const std::size_t longest_with = std::max(longest, len);
    if (!current.empty() && (current.size() + 1) * longest_with > max_tokens) {
      batches.push_back(std::move(current));
      current.clear();
      longest = 0;
    }
    current.push_back(i);
    longest = std::max(longest, len);
  }
  if (!current.empty()) batches.push_back(std::move(current));
  return batches;
}

Batch make_batch(const std::vector<EncodedPair>& pairs, const std::vector<std::size_t>& rows) {
  if (rows.empty()) throw ValueError("make_batch: no rows");
  std::size_t S = 0, T = 0;
  for (std::size_t r : rows) {
    if (r >= pairs.size())
      throw IndexError("make_batch: row " + std::to_string(r) + " of " + std::to_string(pairs.size()) + " pairs");
    if (pairs[r].source.empty() || pairs[r].target.size() < 2)
      throw ValueError("make_batch: pair " + std::to_string(r) + " needs a source and a target of >= 2 ids");
    S = std::max(S, pairs[r].source.size());
    T = std::max(T, pairs[r].target.size());
  }
  const std::size_t B = rows.size();
  Batch b;
  b.source = IndexArray::from_shape({B, S});
  b.target_in = IndexArray::from_shape({B, T - 1});
  b.target_out = IndexArray::from_shape({B * (T - 1)});
  b.source_padding = MaskArray::from_shape({B, S});
  b.target_padding = MaskArray::from_shape({B, T - 1});
  b.source.fill(0);
  b.target_in.fill(0);
  b.target_out.fill(0);
  b.source_padding.fill(true);
  b.target_padding.fill(true);
  for (std::size_t i = 0; i < B; ++i) {
    const EncodedPair& p = pairs[rows[i]];
    for (std::size_t s = 0; s < p.source.size(); ++s) {
      b.source(i, s) = p.source[s];
      b.source_padding(i, s) = false;
    }
    for (std::size_t t = 0; t + 1 < p.target.size(); ++t) {
      b.target_in(i, t) = p.target[t];
      b.target_padding(i, t) = false;
      b.target_out(i * (T - 1) + t) = p.target[t + 1];
    }
    b.target_tokens += p.target.size() - 1;
  }
  return b;
}

SourceBatch make_source_batch(const std::vector<std::vector<std::int64_t>>& sources) {
  if (sources.empty()) throw ValueError("make_source_batch: no sources");
  std::size_t S = 0;
  for (const auto& s : sources) S = std::max(S, s.size());
  if (S == 0) throw ValueError("make_source_batch: every source is empty");
  SourceBatch b;
  b.source = IndexArray::from_shape({sources.size(), S});
  b.source_padding = MaskArray::from_shape({sources.size(), S});
  b.source.fill(0);
  b.source_padding.fill(true);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) throw ValueError("make_source_batch: source " + std::to_string(i) + " is empty");
    for (std::size_t s = 0; s < sources[i].size(); ++s) {
      b.source(i, s) = sources[i][s];
      b.source_padding(i, s) = false;
    }
  }
  return b;
}

}  // namespace headlab
