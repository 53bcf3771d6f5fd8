// bpe_fast.cpp: BytePairEncoding::encode_word in O(n log n) for a word of n characters
// (headlab/data/bpe.hpp; the definition and the O(n^2) reference are in bpe.cpp).
//
// The reference rescans every adjacent pair after each merge. Here the symbols are a linked list
// (next/prev indices, a merged-away symbol marked dead) and every adjacent pair that is a merge
// sits in a min-heap keyed (rank, position of its left symbol). One round takes every entry of
// the lowest rank r, left to right, and merges those still valid (both symbols alive, adjacent and
// unchanged), exactly as the reference applies merge r to all its occurrences left to right. The
// pairs a merge creates (with its left and right neighbours) can never have rank r themselves; they
// join the heap after the round, so a lower rank among them is the next round's, as in the reference.
#include <queue>
#include <tuple>
#include <vector>

#include "headlab/data/bpe.hpp"

namespace headlab {

std::vector<std::string> BytePairEncoding::encode_word(const std::string& word) const {
  std::vector<std::string> symbols = initial_symbols(word);
  const std::size_t n = symbols.size(), none = merges_.size();
  const long end = -1;
  std::vector<long> next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? static_cast<long>(i + 1) : end;
    prev[i] = static_cast<long>(i) - 1;
  }
  // (rank, left, right): a candidate merge of symbols[left] and symbols[right] (right = next[left]).
  using Entry = std::tuple<std::size_t, long, long>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push_pair = [&](std::vector<Entry>& into, long left) {
    if (left == end || next[left] == end) return;
    const std::size_t r = rank_of(symbols[left], symbols[next[left]]);
    if (r != none) into.emplace_back(r, left, next[left]);
  };
  std::vector<Entry> created;
  for (long i = 0; i + 1 < static_cast<long>(n); ++i) push_pair(created, i);
  for (const Entry& e : created) heap.push(e);

  while (!heap.empty()) {
    const std::size_t r = std::get<0>(heap.top());
    created.clear();
    while (!heap.empty() && std::get<0>(heap.top()) == r) {
      const auto [rank, left, right] = heap.top();
      heap.pop();
      // Stale when a merge of this round or an earlier one used either symbol or changed it.
      if (!alive[left] || !alive[right] || next[left] != right ||
          symbols[left] != merges_[rank].left || symbols[right] != merges_[rank].right)
        continue;
      symbols[left] += symbols[right];
      alive[right] = false;
      next[left] = next[right];
      if (next[right] != end) prev[next[right]] = left;
      push_pair(created, prev[left]);  // (neighbour, new symbol)
      push_pair(created, left);        // (new symbol, neighbour)
    }
    for (const Entry& e : created) heap.push(e);
  }
  std::vector<std::string> merged;
  for (long i = 0; i != end; i = next[i]) merged.push_back(std::move(symbols[i]));
  return symbols_to_pieces(merged);
}

}  // namespace headlab
