// lm_vocabulary.cpp: characters or words as a language model's tokens (headlab/data/lm_vocabulary.hpp).
#include "headlab/data/lm_vocabulary.hpp"

#include "headlab/core/errors.hpp"

namespace headlab {

std::string lm_tokenizer_name(LmTokenizer t) { return t == LmTokenizer::words ? "word" : "char"; }

LmTokenizer parse_lm_tokenizer(const std::string& name) {
  if (name == "char") return LmTokenizer::characters;
  if (name == "word") return LmTokenizer::words;
  throw ValueError("tokenizer '" + name + "' is not char or word");
}

namespace {

// The lines of a text, each split into tokens (empty lines give no tokens).
std::vector<std::vector<std::string>> word_lines(std::string_view text) {
  std::vector<std::vector<std::string>> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(tokenize(text.substr(start, end - start)));
    start = end + 1;
  }
  return lines;
}

}  // namespace

LmVocabulary LmVocabulary::build(LmTokenizer tokenizer, std::string_view text, std::size_t min_freq) {
  LmVocabulary v;
  v.tokenizer_ = tokenizer;
  if (tokenizer == LmTokenizer::characters) {
    v.chars_ = CharVocabulary::build(text);
  } else {
    if (!is_valid_utf8(text)) utf8_code_points(text);  // throws, naming the byte offset
    v.words_ = Vocabulary::build(word_lines(text), min_freq);
  }
  return v;
}

std::size_t LmVocabulary::size() const {
  return tokenizer_ == LmTokenizer::characters ? chars_.size() : words_.size();
}

std::vector<std::int64_t> LmVocabulary::encode(std::string_view text) const {
  if (tokenizer_ == LmTokenizer::characters) return chars_.encode(text);
  if (!is_valid_utf8(text)) utf8_code_points(text);
  std::vector<std::int64_t> ids;
  for (const std::vector<std::string>& line : word_lines(text)) {
    for (const std::string& w : line) ids.push_back(words_.id(w));
    ids.push_back(eos);  // the line break
  }
  return ids;
}

std::vector<std::int64_t> LmVocabulary::encode_prompt(std::string_view text) const {
  std::vector<std::int64_t> ids = encode(text);
  if (tokenizer_ == LmTokenizer::words && !ids.empty() && text.find('\n') == std::string_view::npos) ids.pop_back();
  return ids;
}

std::size_t LmVocabulary::count_unknown(std::string_view text) const {
  if (tokenizer_ == LmTokenizer::characters) return chars_.count_unknown(text);
  std::size_t n = 0;
  for (std::int64_t id : encode(text)) n += id == unk;
  return n;
}

std::string LmVocabulary::decode_one(std::int64_t id) const {
  if (tokenizer_ == LmTokenizer::characters) return chars_.decode_one(id);
  const std::string& word = words_.token(id);  // IndexError outside [0, size)
  if (id == eos) return "\n";
  if (id == pad || id == bos) return "";
  return " " + word;
}

std::string LmVocabulary::decode(const std::vector<std::int64_t>& ids) const {
  if (tokenizer_ == LmTokenizer::characters) return chars_.decode(ids);
  std::string out;
  for (std::int64_t id : ids) out += decode_one(id);
  return out;
}

std::string LmVocabulary::token(std::int64_t id) const {
  static const char* const specials[] = {"<pad>", "<s>", "</s>", "<unk>"};
  if (tokenizer_ == LmTokenizer::words) return words_.token(id);  // its specials have these names too
  const std::string text = chars_.decode_one(id);                  // range check
  return id >= 0 && id < std::int64_t(num_specials) ? specials[id] : text;
}

double LmVocabulary::characters_per_token(std::string_view text) const {
  if (tokenizer_ == LmTokenizer::characters) return 1.0;
  const std::size_t tokens = encode(text).size();
  return tokens == 0 ? 1.0 : double(utf8_code_points(text).size()) / double(tokens);
}

std::string LmVocabulary::describe() const {
  if (tokenizer_ == LmTokenizer::characters)
    return std::to_string(size() - CharVocabulary::num_specials) + " distinct characters";
  return std::to_string(size() - Vocabulary::num_specials) + " distinct words";
}

std::string LmVocabulary::to_text() const {
  return tokenizer_ == LmTokenizer::characters ? chars_.to_text() : words_.to_text();
}

LmVocabulary LmVocabulary::from_text(LmTokenizer tokenizer, const std::string& text) {
  LmVocabulary v;
  v.tokenizer_ = tokenizer;
  if (tokenizer == LmTokenizer::characters)
    v.chars_ = CharVocabulary::from_text(text);
  else
    v.words_ = Vocabulary::from_text(text);
  return v;
}

}  // namespace headlab
