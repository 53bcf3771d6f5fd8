// Token-budget batching, the KV cache's row selection, greedy decoding and beam search.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include "headlab/data/batching.hpp"
#include "headlab/train/decoding.hpp"
#include "headlab/headlab.hpp"
#include "headlab/models/transformer.hpp"
#include "small_models.hpp"

namespace test_decoding {

using namespace headlab;

namespace {

EncodedPair pair_of_lengths(std::size_t source_len, std::size_t target_len, std::int64_t id = 5) {
  EncodedPair p;
  p.source.assign(source_len, id);
  p.source.back() = 2;
  p.target.assign(target_len, id);
  p.target.front() = 1;
  p.target.back() = 2;
  return p;
}

template <typename T>
std::unique_ptr<Transformer<T>> small_model(std::size_t vocab, std::uint64_t seed) {
  return headlab::testing::small_transformer<T>(vocab, seed);
}

}  // namespace

TEST_CASE("token_budget_batches: sorted by length, within the budget, every pair exactly once") {
  std::vector<EncodedPair> pairs;
  const std::size_t lengths[][2] = {{5, 6}, {3, 4}, {9, 3}, {3, 3}, {4, 8}, {7, 7}, {3, 4}, {2, 12}, {6, 5}};
  for (const auto& l : lengths) pairs.push_back(pair_of_lengths(l[0], l[1]));
  pairs.push_back(pair_of_lengths(30, 30));  // alone over the budget: a batch of its own
  const std::size_t budget = 16;
  const auto batches = token_budget_batches(pairs, budget);
  std::multiset<std::size_t> seen;
  std::size_t previous_source = 0;
  for (const auto& batch : batches) {
    REQUIRE(!batch.empty());
    std::size_t longest = 0;
    for (std::size_t r : batch) {
      seen.insert(r);
      longest = std::max({longest, pairs[r].source.size(), pairs[r].target.size()});
      CHECK(pairs[r].source.size() >= previous_source);  // sorted by source length across batches
      previous_source = pairs[r].source.size();
    }
    if (batch.size() > 1) CHECK(batch.size() * longest <= budget);
  }
  CHECK(seen.size() == pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) CHECK(seen.count(i) == 1);
  CHECK(batches.back() == std::vector<std::size_t>{9});
  // Equal lengths keep their file order: pairs 1 and 6 are both (3, 4), pair 3 is (3, 3) and sorts first.
  CHECK(batches[1] == std::vector<std::size_t>{3, 1, 6});
  CHECK_THROWS_AS(token_budget_batches(pairs, 0), ValueError);
}

TEST_CASE("row_ranges and rows_of: consecutive batches cover every row once, the last one shorter") {
  const std::vector<RowRange> r = row_ranges(10, 4);
  REQUIRE(r.size() == 3);
  CHECK((r[0].first == 0 && r[0].last == 4));
  CHECK((r[1].first == 4 && r[1].last == 8));
  CHECK((r[2].first == 8 && r[2].last == 10 && r[2].size() == 2));
  CHECK(row_ranges(8, 4).size() == 2);  // no empty batch at the end
  CHECK(row_ranges(3, 64).size() == 1);
  CHECK(row_ranges(0, 4).empty());
  CHECK_THROWS_AS(row_ranges(5, 0), ValueError);
  IndexArray a = IndexArray::from_shape({5, 2});
  for (std::size_t i = 0; i < 10; ++i) a.flat(i) = std::int64_t(i);
  const IndexArray last = rows_of(a, row_ranges(5, 2).back());  // row 4 alone
  REQUIRE(last.shape()[0] == 1);
  CHECK((last(0, 0) == 8 && last(0, 1) == 9));
  CHECK_THROWS_AS(rows_of(a, RowRange{4, 6}), ShapeError);
}

TEST_CASE("make_batch: right padding, masks, and the target shifted by one") {
  std::vector<EncodedPair> pairs(2);
  pairs[0].source = {7, 8, 2};
  pairs[0].target = {1, 9, 2};
  pairs[1].source = {6, 2};
  pairs[1].target = {1, 4, 5, 2};
  const Batch b = make_batch(pairs, {0, 1});
  CHECK(b.source == IndexArray{{7, 8, 2}, {6, 2, 0}});
  CHECK(b.source_padding == MaskArray{{false, false, false}, {false, false, true}});
  CHECK(b.target_in == IndexArray{{1, 9, 0}, {1, 4, 5}});
  CHECK(b.target_padding == MaskArray{{false, false, true}, {false, false, false}});
  CHECK(b.target_out == IndexArray{9, 2, 0, 4, 5, 2});
  CHECK(b.target_tokens == 5);
  CHECK_THROWS_AS(make_batch(pairs, {0, 2}), IndexError);
  CHECK_THROWS_AS(make_batch(pairs, {}), ValueError);
}

TEST_CASE("KVCache::select_rows reorders and repeats batch rows") {
  KVCache<double> cache;
  Array<double> k = Array<double>::from_shape({3, 1, 2, 1});  // (B, heads, S, d)
  for (std::size_t i = 0; i < k.size(); ++i) k.data()[i] = double(i);
  cache.append(k, k + 100.0, 2, 0, 0);
  cache.select_rows({2, 2, 0});
  REQUIRE(cache.first().shape()[0] == 3);
  CHECK(cache.first()(0, 0, 1, 0) == 5.0);  // row 2 of before: elements 4, 5
  CHECK(cache.first()(1, 0, 0, 0) == 4.0);
  CHECK(cache.first()(2, 0, 1, 0) == 1.0);
  CHECK(cache.second()(2, 0, 1, 0) == 101.0);
  CHECK(cache.length() == 2);
  CHECK_THROWS_AS(cache.select_rows({3}), IndexError);
}

TEST_CASE("beam search with beam 1 and no length penalty is greedy decoding") {
  auto model_ptr = small_model<double>(9, 3);
  auto& model = *model_ptr;
  const SourceBatch src = make_source_batch({{4, 5, 6, 2}, {7, 2}, {3, 8, 8, 8, 5, 2}});
  const std::size_t src_lengths[] = {4, 2, 6};
  DecodeOptions o;
  o.beam = 1;
  o.length_penalty = 0;
  const auto greedy = greedy_translate(model, src, o);
  const auto beam = beam_search(model, src, o);
  REQUIRE(greedy.size() == 3);
  for (std::size_t b = 0; b < 3; ++b) {
    CHECK(greedy[b].tokens == beam[b].tokens);
    CHECK(greedy[b].log_prob == doctest::Approx(beam[b].log_prob).epsilon(1e-12));
    CHECK(greedy[b].tokens.size() <= src_lengths[b] + o.extra_tokens);
  }
}

TEST_CASE("beam search finds the best-scoring output when the beam is wide enough to keep every prefix") {
  // Vocabulary of 5 (0 <pad>, 1 <s>, 2 </s>, 3, 4), length cap 3 generated tokens: at most
  // 4^2 = 16 live prefixes, so a beam of 128 never prunes and beam search is an exhaustive search.
  // The reference scores every output by a full forward pass without a cache.
  const std::size_t V = 5;
  auto model_ptr = small_model<double>(V, 11);
  auto& model = *model_ptr;
  model.eval();
  const IndexArray source{{3, 2}};
  DecodeOptions o;
  o.extra_tokens = 1;  // cap = 2 source ids + 1 = 3
  o.beam = 128;
  o.length_penalty = 0.6;
  SourceBatch src;
  src.source = source;
  src.source_padding = MaskArray{{false, false}};

  double best_score = -1e300;
  std::vector<std::int64_t> best_tokens;
  std::function<void(std::vector<std::int64_t>)> search = [&](std::vector<std::int64_t> out) {
    // log p(out) from one forward pass over <s> + out[:-1].
    if (!out.empty()) {
      IndexArray tgt = IndexArray::from_shape({1, out.size()});
      tgt(0, 0) = 1;
      for (std::size_t t = 1; t < out.size(); ++t) tgt(0, t) = out[t - 1];
      NoGradGuard no_grad;
      const Array<double> logits = model.forward(source, tgt, Masks{}, nullptr).value();  // (1, n, V)
      double log_prob = 0;
      for (std::size_t t = 0; t < out.size(); ++t) {
        double m = -1e300, sum = 0;
        for (std::size_t v = 0; v < V; ++v) m = std::max(m, logits(0, t, v));
        for (std::size_t v = 0; v < V; ++v) sum += std::exp(logits(0, t, v) - m);
        log_prob += logits(0, t, static_cast<std::size_t>(out[t])) - m - std::log(sum);
      }
      const bool complete = out.back() == 2 || out.size() == 3;
      if (complete) {
        const double score = log_prob / gnmt_length_penalty(out.size(), o.length_penalty);
        if (score > best_score) {
          best_score = score;
          best_tokens = out;
        }
        return;
      }
    }
    for (std::int64_t v = 0; v < std::int64_t(V); ++v) {
      auto longer = out;
      longer.push_back(v);
      search(longer);
    }
  };
  search({});
  const auto beam = beam_search(model, src, o);
  CHECK(beam[0].tokens == best_tokens);
  CHECK(beam[0].score == doctest::Approx(best_score).epsilon(1e-10));
  // A narrow beam may do worse, never better.
  o.beam = 2;
  CHECK(beam_search(model, src, o)[0].score <= best_score + 1e-12);
}

TEST_CASE("greedy and beam decoding stop at the length cap and reject bad input") {
  auto model_ptr = small_model<float>(9, 5);
  auto& model = *model_ptr;
  DecodeOptions o;
  o.extra_tokens = 2;
  const SourceBatch src = make_source_batch({{4, 2}});
  CHECK(greedy_translate(model, src, o)[0].tokens.size() <= 4);
  CHECK(beam_search(model, src, o)[0].tokens.size() <= 4);
  o.beam = 0;
  CHECK_THROWS_AS(beam_search(model, src, o), ValueError);
  SourceBatch bad = src;
  bad.source_padding = MaskArray::from_shape({1, 1});
  CHECK_THROWS_AS(greedy_translate(model, bad, o), ShapeError);
  CHECK_THROWS_AS(make_source_batch({}), ValueError);
}
}  // namespace test_decoding
