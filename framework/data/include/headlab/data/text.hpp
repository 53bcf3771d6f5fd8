// headlab/data/text.hpp: text for translation: a tokenizer, a parallel-corpus reader and a vocabulary.
//
// Tokenization rule (exact; the Python data builder and the PyTorch twin apply the same rule):
//   1) lower-case: ASCII A-Z -> a-z, and the Latin-1 upper-case letters U+00C0..U+00DE except
//      U+00D7 (the multiplication sign) -> code point + 0x20 (À -> à, Ü -> ü, Þ -> þ); nothing else
//      changes (ß, Œ, Ω, ... stay as they are).
//   2) split on whitespace: space, \t, \n, \r, \v, \f (only these six; U+00A0 is not whitespace).
//   3) inside a chunk, word characters are ASCII letters, ASCII digits and every non-ASCII code point.
//      A run of word characters is one token; every other character is a token of its own, except an
//      apostrophe ' or a hyphen - whose previous AND next characters (in the chunk) are word
//      characters: that one stays inside the word.
//   "Don't go, well-known 'X'!"  ->  don't | go | , | well-known | ' | x | ' | !
//   "3.5"                        ->  3 | . | 5
//   "rock'n'roll --x"            ->  rock'n'roll | - | - | x
//
// In UTF-8 every byte of a non-ASCII code point is >= 0x80 and every ASCII character is one byte
// < 0x80, so the rule works byte by byte on valid UTF-8: a byte >= 0x80 is a word byte.
//
// Errors (see errors.hpp):
//   ValueError   tokenize() on invalid UTF-8; Vocabulary::build with an unusable token or max_size
//   IOError      read_parallel_tsv cannot open or read the file
//   FormatError  (an IOError) a bad TSV line ("read_parallel_tsv: FILE:LINE: why") or a bad
//                vocabulary text ("Vocabulary::from_text: vocabulary line N: why")
//   IndexError   a token id outside [0, size)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "headlab/data/bpe.hpp"

namespace headlab {

// The six whitespace characters of the rule: space, \t, \n, \r, \v, \f.
bool is_space_char(char c);

// Step 2 alone: the chunks of `text` between runs of whitespace (no empty chunks).
// "  a b\tc " -> a | b | c. Used for already-tokenized text (one sentence per line).
std::vector<std::string> split_whitespace(std::string_view text);

// Steps 1-3. Throws ValueError("tokenize: invalid UTF-8 at byte offset N") when `text` is not UTF-8.
std::vector<std::string> tokenize(std::string_view text);

// Well-formed UTF-8 (RFC 3629): no overlong forms, no surrogates U+D800..U+DFFF, nothing above
// U+10FFFF, no stray or missing continuation bytes.
bool is_valid_utf8(std::string_view s);

// One line of a parallel corpus; `line` is its 1-based line number in the file.
struct ParallelPair {
  std::string source, target;
  std::size_t line = 0;
  // The optional third column: a gold word alignment in the Pharaoh format of fast_align and
  // awesome-align, "0-0 1-1 2-3" (source token index - target token index, 0-based, over the tokens
  // of tokenize()). Empty when the line has two columns. Training ignores it.
  std::vector<std::pair<std::size_t, std::size_t>> alignment;
};

// A two- or three-column TSV parallel corpus, `source<TAB>target[<TAB>alignment]` per line, UTF-8.
//   - each side is trimmed of leading/trailing whitespace (the six characters above);
//   - a trailing \r (CRLF files) is stripped; a final line without a newline is accepted;
//   - a UTF-8 byte-order mark at the very start of the file is skipped;
//   - blank lines are errors, not skipped (a blank line in a parallel corpus usually means the two
//     sides were pasted out of alignment).
// Throws IOError when the file cannot be opened or read, and FormatError
// "read_parallel_tsv: FILE:LINE: why" for invalid UTF-8, a line with no tab or more than two, an
// empty side, an alignment that is not "i-j" pairs or names a token index the side does not have, and "read_parallel_tsv: FILE: no sentence pairs" for an empty file.
std::vector<ParallelPair> read_parallel_tsv(const std::string& path);
// The parser behind read_parallel_tsv, on text already in memory (also a fuzzing entry point):
// the same rules and the same FormatError messages, with `source_name` where FILE stands.
std::vector<ParallelPair> parse_parallel_tsv(std::string_view text, const std::string& source_name);

// Token <-> id. Ids 0..3 are the specials; the others follow in build order.
// With subwords (byte-pair encoding, bpe.hpp) the tokens are pieces of words: encode takes words
// and splits each into its pieces before looking them up, decode glues the pieces back into words.
// Without subwords a token is a word and both are one to one.
class Vocabulary {
 public:
  static constexpr std::int64_t pad = 0, bos = 1, eos = 2, unk = 3;  // "<pad>" "<s>" "</s>" "<unk>"
  static constexpr std::size_t num_specials = 4;

  Vocabulary();  // just the four specials

  // Tokens with count >= min_freq, ordered by count descending, then token ascending (byte order),
  // after the specials. max_size (0 = no cap) caps the total size, specials included, so at most
  // max_size - 4 corpus tokens are kept. A corpus token equal to a special's text is not added again.
  // Throws ValueError for 0 < max_size < 4 and for an empty token, a token containing whitespace, or
  // a token that is not UTF-8 (none of them could be saved by to_text and read back).
  static Vocabulary build(const std::vector<std::vector<std::string>>& sentences, std::size_t min_freq,
                          std::size_t max_size = 0);
  // The pieces of `bpe` as the tokens: every piece the sentences' words encode into (ordered as
  // build orders them), then the rest of the alphabet (alphabet_pieces) and of the merged pieces
  // (merged_pieces), so that no word of the training characters has an unknown piece. The ids of
  // the sentences' words are kept: encoding the training text again does not run the merges.
  static Vocabulary build_subwords(const std::vector<std::vector<std::string>>& sentences, BytePairEncoding bpe);
  // The same vocabulary text (from_text) read with the merges it was built with (a checkpoint).
  static Vocabulary with_subwords(const Vocabulary& pieces, BytePairEncoding bpe);

  bool has_subwords() const { return has_subwords_; }
  const BytePairEncoding& subwords() const { return bpe_; }

  std::size_t size() const { return tokens_.size(); }
  std::int64_t id(const std::string& token) const;   // unk when absent
  // Whether a word reads without <unk>: it is a token, or with subwords every piece of it is.
  bool covers(const std::string& word) const;
  const std::string& token(std::int64_t id) const;   // IndexError naming the id and the size

  // The tokens of words: the words themselves, or with subwords their pieces.
  std::vector<std::string> pieces(const std::vector<std::string>& words) const;
  // A lower bound on encode(words).size(), without encoding: the number of words, or with subwords
  // the fewest pieces each word's bytes can make (BytePairEncoding::min_pieces). A sentence whose
  // bound is over a model's --max-len is refused before a long word is encoded.
  std::size_t min_tokens(const std::vector<std::string>& words) const;
  // One id per token of pieces(words) (no <s> or </s> added); unknown tokens -> unk.
  std::vector<std::int64_t> encode(const std::vector<std::string>& words) const;
  // Words of `ids`, skipping <pad> and <s>; with stop_at_eos the first </s> ends the sentence,
  // without it a </s> is kept as the token "</s>". <unk> decodes to "<unk>". With subwords a
  // piece ending in "@@" is glued to the next. Every id is checked, also those after the first
  // </s>: an id outside [0, size) throws IndexError.
  std::vector<std::string> decode(const std::vector<std::int64_t>& ids, bool stop_at_eos = true) const;
  // The tokens of `ids` as they are (pieces not glued), with decode's rules otherwise.
  std::vector<std::string> decode_tokens(const std::vector<std::int64_t>& ids, bool stop_at_eos = true) const;

  // One token per line, in id order, each line ending in '\n' (saved inside checkpoints).
  std::string to_text() const;
  // The inverse of to_text (a final line without '\n' is accepted). Throws FormatError
  // "Vocabulary::from_text: vocabulary line N: why" when the first four lines are not the specials in
  // order, a special appears again later, a token repeats, a line is empty, a token contains
  // whitespace (\r included), or a line is not UTF-8.
  static Vocabulary from_text(const std::string& text);

 private:
  std::vector<std::string> tokens_;                    // id -> token
  std::unordered_map<std::string, std::int64_t> ids_;  // token -> id
  bool has_subwords_ = false;
  BytePairEncoding bpe_;
  std::unordered_map<std::string, std::vector<std::int64_t>> known_word_ids_;  // subwords: training word -> ids
  void add(const std::string& token);
};

}  // namespace headlab
