// headlab/data/char_vocabulary.hpp: characters as tokens, for character-level language models.
//
// Ids 0..3 are Vocabulary's specials (<pad>, <s>, </s>, <unk>); then every character (Unicode code
// point) of the training text, in code-point order. A character the training text lacks encodes
// to <unk>. Text is UTF-8 in and out: encode(text) gives one id per code point, and
// decode(encode(text)) == text for a text made only of known characters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headlab {

class CharVocabulary {
 public:
  static constexpr std::int64_t pad = 0, bos = 1, eos = 2, unk = 3;
  static constexpr std::size_t num_specials = 4;

  // The characters of `text`. ValueError when it is not valid UTF-8 (naming the byte offset) or
  // holds a NUL character.
  static CharVocabulary build(std::string_view text);

  std::size_t size() const { return num_specials + chars_.size(); }
  // One id per code point (unknown characters -> unk). ValueError for invalid UTF-8.
  std::vector<std::int64_t> encode(std::string_view text) const;
  // How many code points of `text` encode() reads as unk.
  std::size_t count_unknown(std::string_view text) const;
  // The characters of `ids`: <pad> and <s> are skipped, </s> and <unk> are written as "</s>" and
  // "<unk>". IndexError for an id outside [0, size).
  std::string decode(const std::vector<std::int64_t>& ids) const;
  std::string decode_one(std::int64_t id) const;

  // The characters as hexadecimal code points separated by spaces ("a 20 41 ..."), in id order
  // (saved in a checkpoint's metadata); from_text is its inverse, FormatError naming the entry for
  // anything else (a repeat, a code point out of order or out of range, a surrogate, NUL).
  std::string to_text() const;
  static CharVocabulary from_text(const std::string& text);

 private:
  std::vector<char32_t> chars_;                      // id - num_specials -> code point
  std::unordered_map<char32_t, std::int64_t> ids_;   // code point -> id
};

// The code points of a UTF-8 text (ValueError naming the byte offset of the first invalid sequence).
std::vector<char32_t> utf8_code_points(std::string_view text);
// One code point as UTF-8.
std::string utf8_encode(char32_t c);

}  // namespace headlab
