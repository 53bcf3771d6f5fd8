// headlab/data/bpe.hpp: byte-pair encoding (Sennrich, Haddow and Birch 2016, "Neural Machine
// Translation of Rare Words with Subword Units"), on the words of headlab's tokenizer (text.hpp).
//
// A word starts as its characters (UTF-8 code points), the last one marked with the end-of-word
// tail "</w>":   "haus" -> h | a | u | s</w>
// Learning repeats one step: count every adjacent pair of symbols over the training words (each
// word weighted by how often it occurs), and merge the most frequent pair into one symbol
// everywhere. The merges, in the order they were learned, are the model:
//   1. a b        (rank 0)
//   2. h a        (rank 1) ...
// Encoding a word applies them by rank: while some adjacent pair of the word is a merge, merge the
// pair of lowest rank (all its occurrences, left to right, never overlapping). A word made only of
// training characters always encodes (in the worst case into single characters), so no piece of it
// is unknown.
// Pieces: a symbol ending in "</w>" loses the tail; every other symbol gets "@@" ("continued"):
//   "hause" -> haus@@ | e          "haus" -> haus
// Decoding glues a piece ending in "@@" to the next piece. The word tokenizer never puts '@' inside
// a word ('@' is a token of its own), so the marker is unambiguous: decode(encode(w)) == w.
//
// Conventions, where the paper leaves a choice:
//   - ties between pairs of equal count go to the smaller pair: (left, right) in byte order;
//   - the vocabulary is every character of the training words in both forms ("c@@" inside a word,
//     "c" at its end: alphabet_pieces) and every symbol a merge made (merged_pieces), also those
//     that later merges used up in the training text: any word of known characters then encodes
//     into known pieces, so nothing is unknown;
//   - learning stops at the merge budget, at the vocabulary budget (4 specials + that vocabulary,
//     counted before each merge), or when the most frequent pair occurs fewer than min_count
//     times (2 by default: a pair seen once learns nothing);
//   - words are counted once per occurrence in the training text, so the merges are a function of
//     the text alone: the same file always gives the same merges.
// The merges as text (saved in checkpoints and run dirs; bench/bpe.py reads the same format):
//   #headlab-bpe-merges 1
//   a b
//   h a
// Errors: ValueError for a word that is empty, holds whitespace or is not UTF-8, and for a budget
// of neither merges nor vocabulary size; FormatError "BytePairEncoding::from_text: line N: why"
// for a bad merges text.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace headlab {

struct BpeMerge {
  std::string left, right;
  bool operator==(const BpeMerge& o) const { return left == o.left && right == o.right; }
};

// When learning stops (0 = no limit of that kind; at least one of the two must be set).
struct BpeBudget {
  std::size_t merges = 0;      // at most this many merges
  std::size_t vocab_size = 0;  // stop once 4 specials + the vocabulary reach this
  std::size_t min_count = 2;   // stop once the most frequent pair occurs fewer times than this
};

class BytePairEncoding {
 public:
  static constexpr const char* kEndOfWord = "</w>";
  static constexpr const char* kContinued = "@@";

  BytePairEncoding() = default;  // no merges: every word encodes into its characters
  explicit BytePairEncoding(std::vector<BpeMerge> merges);

  // The merge loop on word counts (word -> occurrences in the training text).
  static BytePairEncoding learn(const std::map<std::string, std::size_t>& word_counts, BpeBudget budget);

  // One word -> its pieces ("hause" -> {"haus@@", "e"}). O(n log n) in the word's n characters: a
  // heap of (rank, position) over a linked list of symbols (bpe_fast.cpp), equal to the reference.
  std::vector<std::string> encode_word(const std::string& word) const;
  // The same by the definition above, rescanning every pair after each merge: O(n^2), the readable
  // version that encode_word is tested against.
  std::vector<std::string> encode_word_reference(const std::string& word) const;
  // Words -> pieces, word by word.
  std::vector<std::string> encode(const std::vector<std::string>& words) const;
  // The same for many sentences, each distinct word encoded once.
  std::vector<std::vector<std::string>> encode_all(const std::vector<std::vector<std::string>>& sentences) const;
  // Pieces -> words (a trailing piece ending in "@@", which encode never makes, ends its word).
  static std::vector<std::string> decode(const std::vector<std::string>& pieces);

  const std::vector<BpeMerge>& merges() const { return merges_; }
  // The fewest pieces a word of `bytes` bytes can encode into: each piece is one symbol, and no
  // symbol is longer than the longest merge result (or a 4-byte character with "</w>"), so
  // ceil(bytes / longest). Lets a caller refuse a word too long for a model before encoding it.
  std::size_t min_pieces(std::size_t bytes) const {
    return bytes == 0 ? 0 : (bytes + longest_symbol_ - 1) / longest_symbol_;
  }
  // The piece of every merge's symbol, in merge order (with alphabet_pieces: the vocabulary).
  std::vector<std::string> merged_pieces() const;

  std::string to_text() const;
  static BytePairEncoding from_text(const std::string& text);

 private:
  std::vector<BpeMerge> merges_;
  std::unordered_map<std::string, std::size_t> rank_;  // left + ' ' + right -> rank
  std::size_t longest_symbol_ = 8;  // bytes: max(4 + 4, the longest left + right of a merge)
  // The rank of the merge (left, right), or merges_.size() when it is none.
  std::size_t rank_of(const std::string& left, const std::string& right) const;
};

// A word's starting symbols: its code points, "</w>" appended to the last ("ab" -> a | b</w>).
// ValueError for an empty word, whitespace in it, or invalid UTF-8.
std::vector<std::string> initial_symbols(const std::string& word);

// Symbols -> pieces: "</w>" stripped from the last, "@@" added to the others.
std::vector<std::string> symbols_to_pieces(const std::vector<std::string>& symbols);

// How often each word occurs in the sentences (the input of learn).
std::map<std::string, std::size_t> count_words(const std::vector<std::vector<std::string>>& sentences);

// Every character of the words in both piece forms, "c@@" and "c", in byte order.
std::vector<std::string> alphabet_pieces(const std::map<std::string, std::size_t>& word_counts);

// One merge applied to a word's symbols: every occurrence of (left, right), left to right,
// non-overlapping, becomes left + right.
void apply_merge(std::vector<std::string>& symbols, const BpeMerge& merge);

}  // namespace headlab
