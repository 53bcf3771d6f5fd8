// bpe.cpp: byte-pair encoding, learned and applied (see headlab/data/bpe.hpp).
#include "headlab/data/bpe.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/data/text.hpp"

namespace headlab {

namespace {

const std::string kHeader = "#headlab-bpe-merges 1";

std::string pair_key(const std::string& left, const std::string& right) { return left + ' ' + right; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Bytes of the UTF-8 code point whose lead byte is b (the text is already checked to be UTF-8).
std::size_t code_point_length(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

// ---- The state of the merge loop ------------------------------------------------------------
// A distinct training word as its current symbols, with how often it occurs.
struct CountedWord {
  std::vector<std::string> symbols;
  std::size_t count = 0;
};

using Pair = std::pair<std::string, std::string>;

// Pair counts over the corpus, and the order the loop picks from: count descending, then the
// pair in byte order. `ranked` mirrors `count` (every pair with a positive count, once).
class PairCounts {
 public:
  void add(const Pair& pair, long delta) {
    long& c = count_[pair];
    if (c > 0) ranked_.erase({-c, pair});
    c += delta;
    if (c > 0) ranked_.insert({-c, pair});
    else count_.erase(pair);
  }
  bool empty() const { return ranked_.empty(); }
  const Pair& most_frequent() const { return ranked_.begin()->second; }
  long count_of_most_frequent() const { return -ranked_.begin()->first; }

 private:
  std::map<Pair, long> count_;
  std::set<std::pair<long, Pair>> ranked_;  // (-count, pair): begin() is the next merge
};

}  // namespace

// ===========================================================================
// Symbols and pieces
// ===========================================================================

std::vector<std::string> initial_symbols(const std::string& word) {
  if (word.empty()) throw ValueError("BPE: cannot encode an empty word");
  if (!is_valid_utf8(word)) throw ValueError("BPE: the word is not UTF-8");
  if (std::any_of(word.begin(), word.end(), is_space_char))
    throw ValueError("BPE: the word " + quote_clipped(word) + " holds whitespace (words come from the tokenizer)");
  std::vector<std::string> symbols;
  for (std::size_t i = 0; i < word.size();) {
    const std::size_t n = code_point_length(static_cast<unsigned char>(word[i]));
    symbols.push_back(word.substr(i, n));
    i += n;
  }
  symbols.back() += BytePairEncoding::kEndOfWord;
  return symbols;
}

std::vector<std::string> symbols_to_pieces(const std::vector<std::string>& symbols) {
  const std::string end = BytePairEncoding::kEndOfWord;
  std::vector<std::string> pieces;
  for (const std::string& s : symbols)
    pieces.push_back(ends_with(s, end) ? s.substr(0, s.size() - end.size()) : s + BytePairEncoding::kContinued);
  return pieces;
}

void apply_merge(std::vector<std::string>& symbols, const BpeMerge& merge) {
  std::vector<std::string> out;
  out.reserve(symbols.size());
  for (std::size_t i = 0; i < symbols.size(); ++i) {
    if (i + 1 < symbols.size() && symbols[i] == merge.left && symbols[i + 1] == merge.right) {
      out.push_back(merge.left + merge.right);
      ++i;  // the right symbol is consumed
    } else {
      out.push_back(std::move(symbols[i]));
    }
  }
  symbols = std::move(out);
}

std::map<std::string, std::size_t> count_words(const std::vector<std::vector<std::string>>& sentences) {
  std::map<std::string, std::size_t> counts;
  for (const auto& words : sentences)
    for (const std::string& w : words) ++counts[w];
  return counts;
}

std::vector<std::string> alphabet_pieces(const std::map<std::string, std::size_t>& word_counts) {
  std::set<std::string> characters;
  for (const auto& [word, count] : word_counts) {
    if (count == 0) continue;
    for (std::size_t i = 0; i < word.size();) {
      const std::size_t n = code_point_length(static_cast<unsigned char>(word[i]));
      characters.insert(word.substr(i, n));
      i += n;
    }
  }
  std::vector<std::string> pieces;
  for (const std::string& c : characters) {
    pieces.push_back(c + BytePairEncoding::kContinued);
    pieces.push_back(c);
  }
  return pieces;
}

// ===========================================================================
// Learning: the merge loop
// ===========================================================================

BytePairEncoding BytePairEncoding::learn(const std::map<std::string, std::size_t>& word_counts, BpeBudget budget) {
  if (budget.merges == 0 && budget.vocab_size == 0)
    throw ValueError("BPE: give a number of merges or a vocabulary size (both are 0)");
  // The corpus as distinct words (in byte order, so the loop is a function of the counts alone).
  std::vector<CountedWord> words;
  for (const auto& [word, count] : word_counts)
    if (count > 0) words.push_back({initial_symbols(word), count});

  PairCounts pairs;
  std::map<Pair, std::set<std::size_t>> words_with;  // pair -> indices of words that (may) hold it
  std::map<Pair, long> change;                        // count changes, applied to `pairs` at once
  auto count_word = [&](std::size_t index, long sign) {
    const std::vector<std::string>& s = words[index].symbols;
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      change[{s[i], s[i + 1]}] += sign * long(words[index].count);
      if (sign > 0) words_with[{s[i], s[i + 1]}].insert(index);
    }
  };
  auto apply_changes = [&] {
    for (const auto& [pair, delta] : change)
      if (delta != 0) pairs.add(pair, delta);
    change.clear();
  };
  for (std::size_t i = 0; i < words.size(); ++i) count_word(i, +1);
  apply_changes();
  // The vocabulary the merges give: every character in both forms, and every merged symbol.
  std::set<std::string> vocabulary;
  for (const std::string& piece : alphabet_pieces(word_counts)) vocabulary.insert(piece);

  std::vector<BpeMerge> merges;
  while (!pairs.empty()) {
    if (budget.merges != 0 && merges.size() >= budget.merges) break;
    if (budget.vocab_size != 0 && Vocabulary::num_specials + vocabulary.size() >= budget.vocab_size) break;
    if (pairs.count_of_most_frequent() < long(std::max<std::size_t>(budget.min_count, 1))) break;
    const BpeMerge merge{pairs.most_frequent().first, pairs.most_frequent().second};
    // Only the words holding the pair change: take their counts out, merge, put them back.
    const std::set<std::size_t> holders = std::move(words_with[{merge.left, merge.right}]);
    words_with.erase({merge.left, merge.right});
    for (std::size_t index : holders) {
      count_word(index, -1);
      apply_merge(words[index].symbols, merge);
      count_word(index, +1);
    }
    apply_changes();
    merges.push_back(merge);
    vocabulary.insert(symbols_to_pieces({merge.left + merge.right}).front());
  }
  return BytePairEncoding(std::move(merges));
}

// ===========================================================================
// Encoding and decoding
// ===========================================================================

BytePairEncoding::BytePairEncoding(std::vector<BpeMerge> merges) : merges_(std::move(merges)) {
  for (std::size_t r = 0; r < merges_.size(); ++r) {
    rank_.emplace(pair_key(merges_[r].left, merges_[r].right), r);
    longest_symbol_ = std::max(longest_symbol_, merges_[r].left.size() + merges_[r].right.size());
  }
}

std::size_t BytePairEncoding::rank_of(const std::string& left, const std::string& right) const {
  const auto it = rank_.find(pair_key(left, right));
  return it == rank_.end() ? merges_.size() : it->second;
}

std::vector<std::string> BytePairEncoding::encode_word_reference(const std::string& word) const {
  std::vector<std::string> symbols = initial_symbols(word);
  while (symbols.size() > 1) {
    // The adjacent pair of lowest rank, if any pair is a merge.
    std::size_t best_rank = merges_.size();
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) best_rank = std::min(best_rank, rank_of(symbols[i], symbols[i + 1]));
    if (best_rank == merges_.size()) break;
    apply_merge(symbols, merges_[best_rank]);
  }
  return symbols_to_pieces(symbols);
}

std::vector<std::string> BytePairEncoding::merged_pieces() const {
  std::vector<std::string> pieces;
  for (const BpeMerge& m : merges_) pieces.push_back(symbols_to_pieces({m.left + m.right}).front());
  return pieces;
}

std::vector<std::string> BytePairEncoding::encode(const std::vector<std::string>& words) const {
  std::vector<std::string> pieces;
  for (const std::string& word : words)
    for (std::string& piece : encode_word(word)) pieces.push_back(std::move(piece));
  return pieces;
}

std::vector<std::vector<std::string>> BytePairEncoding::encode_all(
    const std::vector<std::vector<std::string>>& sentences) const {
  std::unordered_map<std::string, std::vector<std::string>> pieces_of;  // word -> its pieces
  std::vector<std::vector<std::string>> out;
  out.reserve(sentences.size());
  for (const auto& words : sentences) {
    std::vector<std::string> pieces;
    for (const std::string& word : words) {
      auto it = pieces_of.find(word);
      if (it == pieces_of.end()) it = pieces_of.emplace(word, encode_word(word)).first;
      pieces.insert(pieces.end(), it->second.begin(), it->second.end());
    }
    out.push_back(std::move(pieces));
  }
  return out;
}

std::vector<std::string> BytePairEncoding::decode(const std::vector<std::string>& pieces) {
  const std::string continued = kContinued;
  std::vector<std::string> words;
  std::string word;
  for (const std::string& piece : pieces) {
    if (piece.size() > continued.size() && ends_with(piece, continued)) {
      word += piece.substr(0, piece.size() - continued.size());
      continue;
    }
    words.push_back(word + piece);
    word.clear();
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

// ===========================================================================
// As text
// ===========================================================================

std::string BytePairEncoding::to_text() const {
  std::string text = kHeader + "\n";
  for (const BpeMerge& m : merges_) text += m.left + " " + m.right + "\n";
  return text;
}

BytePairEncoding BytePairEncoding::from_text(const std::string& text) {
  auto fail = [](std::size_t line, const std::string& why) {
    throw FormatError("BytePairEncoding::from_text: line " + std::to_string(line) + ": " + why);
  };
  std::vector<BpeMerge> merges;
  std::set<Pair> seen;
  std::size_t line_number = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a file saved with CRLF line ends
    if (line_number == 1) {
      if (line != kHeader) fail(1, "expected the header '" + kHeader + "'");
      continue;
    }
    if (!is_valid_utf8(line)) fail(line_number, "invalid UTF-8");
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos ||
        std::any_of(line.begin(), line.end(), [](char c) { return c != ' ' && is_space_char(c); }))
      fail(line_number, "expected two symbols separated by one space");
    Pair pair{line.substr(0, space), line.substr(space + 1)};
    if (!seen.insert(pair).second) fail(line_number, "the merge " + quote_clipped(line) + " repeats");
    merges.push_back({pair.first, pair.second});
  }
  if (line_number == 0) fail(1, "empty text (expected the header '" + kHeader + "')");
  return BytePairEncoding(std::move(merges));
}

}  // namespace headlab
