// headlab/data/lm_vocabulary.hpp: the tokens of a language model: characters or words.
//
//   char   every Unicode code point of the training text is a token (char_vocabulary.hpp);
//          decode(encode(text)) == text for a text of known characters.
//   word   each line is split by the translation tokenizer (text.hpp: lower-cased, punctuation
//          apart) and ends in </s>, so the line breaks survive; words seen fewer than min_freq
//          times in the training text become <unk>. Decoding writes a word with a space before it
//          and </s> as a new line: "In the beginning, God" -> in | the | beginning | , | god | </s>
//          -> " in the beginning , god\n".
//
// A model's loss per token is a loss per character once divided by the characters a token stands
// for: characters_per_token(text) = code points of the text / its tokens (1 for char).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "headlab/data/char_vocabulary.hpp"
#include "headlab/data/text.hpp"

namespace headlab {

enum class LmTokenizer { characters, words };
std::string lm_tokenizer_name(LmTokenizer t);           // "char" | "word"
LmTokenizer parse_lm_tokenizer(const std::string& name);  // ValueError naming the two

class LmVocabulary {
 public:
  static constexpr std::int64_t pad = 0, bos = 1, eos = 2, unk = 3;  // both vocabularies' specials
  static constexpr std::size_t num_specials = 4;

  LmVocabulary() = default;  // characters, of an empty text
  // The vocabulary of a training text. ValueError for invalid UTF-8 (naming the byte offset).
  static LmVocabulary build(LmTokenizer tokenizer, std::string_view text, std::size_t min_freq = 1);

  LmTokenizer tokenizer() const { return tokenizer_; }
  std::size_t size() const;
  // ids of a text (words: each line's tokens, then </s>). ValueError for invalid UTF-8.
  std::vector<std::int64_t> encode(std::string_view text) const;
  // A prompt or an input line: encode(text), but for words without the final </s> when the text
  // has no line break (the model goes on within the line).
  std::vector<std::int64_t> encode_prompt(std::string_view text) const;
  // Tokens of `text` that encode() reads as <unk>.
  std::size_t count_unknown(std::string_view text) const;
  // A token as text (see above); IndexError for an id outside [0, size).
  std::string decode_one(std::int64_t id) const;
  std::string decode(const std::vector<std::int64_t>& ids) const;
  // A token as a label (heads' maps, the explorer): "<pad>", "<s>", "</s>", "<unk>", the
  // character or the word itself. IndexError for an id outside [0, size).
  std::string token(std::int64_t id) const;
  // Code points of `text` per token of encode(text): 1 for characters.
  double characters_per_token(std::string_view text) const;
  std::string describe() const;  // "62 distinct characters" | "3208 distinct words"

  // Saved in a checkpoint: the characters (CharVocabulary::to_text) or the words (one per line).
  std::string to_text() const;
  static LmVocabulary from_text(LmTokenizer tokenizer, const std::string& text);  // FormatError

 private:
  LmTokenizer tokenizer_ = LmTokenizer::characters;
  CharVocabulary chars_;
  Vocabulary words_;
};

}  // namespace headlab
