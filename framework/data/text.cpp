// text.cpp: the tokenizer, UTF-8 validation, the TSV reader and the vocabulary (see headlab/data/text.hpp).
#include "headlab/data/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <sstream>
#include <utility>

#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/data/input_file.hpp"

namespace headlab {

namespace {

const char* const kSpecialTokens[Vocabulary::num_specials] = {"<pad>", "<s>", "</s>", "<unk>"};

// Quoted for a message, at most 200 bytes of it (a token or name from a file may be megabytes).
std::string in_quotes(const std::string& s) { return quote_clipped(s); }

unsigned char byte_at(std::string_view s, std::size_t i) { return static_cast<unsigned char>(s[i]); }

bool in_range(unsigned char b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; }

// Length of the well-formed UTF-8 sequence that starts at s[i], or 0 when it is malformed.
// RFC 3629, table 3-7 of the Unicode standard:
//   U+0000..U+007F     00..7F
//   U+0080..U+07FF     C2..DF  80..BF
//   U+0800..U+0FFF     E0      A0..BF  80..BF          (E0 80..9F would be overlong)
//   U+1000..U+CFFF     E1..EC  80..BF  80..BF
//   U+D000..U+D7FF     ED      80..9F  80..BF          (ED A0..BF would be a surrogate)
//   U+E000..U+FFFF     EE..EF  80..BF  80..BF
//   U+10000..U+3FFFF   F0      90..BF  80..BF  80..BF  (F0 80..8F would be overlong)
//   U+40000..U+FFFFF   F1..F3  80..BF  80..BF  80..BF
//   U+100000..U+10FFFF F4      80..8F  80..BF  80..BF  (F4 90.. would be above U+10FFFF)
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const unsigned char lead = byte_at(s, i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned second_lo = 0x80, second_hi = 0xBF;
  if (in_range(lead, 0xC2, 0xDF)) {
    length = 2;
  } else if (lead == 0xE0) {
    length = 3, second_lo = 0xA0;
  } else if (in_range(lead, 0xE1, 0xEC) || in_range(lead, 0xEE, 0xEF)) {
    length = 3;
  } else if (lead == 0xED) {
    length = 3, second_hi = 0x9F;
  } else if (lead == 0xF0) {
    length = 4, second_lo = 0x90;
  } else if (in_range(lead, 0xF1, 0xF3)) {
    length = 4;
  } else if (lead == 0xF4) {
    length = 4, second_hi = 0x8F;
  } else {
    return 0;  // 80..BF (a stray continuation byte), C0, C1, F5..FF
  }
  if (i + length > s.size()) return 0;  // truncated
  if (!in_range(byte_at(s, i + 1), second_lo, second_hi)) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (!in_range(byte_at(s, i + k), 0x80, 0xBF)) return 0;
  }
  return length;
}

// Offset of the first byte that does not start a well-formed sequence, or npos when s is valid.
std::size_t first_invalid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t length = utf8_sequence_length(s, i);
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

// Step 1 of the rule on valid UTF-8. Latin-1 upper case U+00C0..U+00DE is C3 80..C3 9E in UTF-8,
// its lower case U+00E0..U+00FE is C3 A0..C3 BE: +0x20 on the second byte. U+00D7 (C3 97) stays.
std::string lower_case(std::string_view text) {
  std::string out(text);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const unsigned char b = byte_at(out, i);
    if (in_range(b, 'A', 'Z')) {
      out[i] = static_cast<char>(b + 0x20);
    } else if (b == 0xC3 && i + 1 < out.size()) {
      const unsigned char next = byte_at(out, i + 1);
      if (in_range(next, 0x80, 0x9E) && next != 0x97) out[i + 1] = static_cast<char>(next + 0x20);
      ++i;  // the second byte is done
    }
  }
  return out;
}

// ASCII letter, ASCII digit, or any byte of a non-ASCII code point.
bool is_word_byte(char c) {
  const unsigned char b = static_cast<unsigned char>(c);
  return b >= 0x80 || in_range(b, 'a', 'z') || in_range(b, 'A', 'Z') || in_range(b, '0', '9');
}

// Step 3 on one whitespace-free chunk.
void tokenize_chunk(std::string_view chunk, std::vector<std::string>& out) {
  std::string word;
  for (std::size_t i = 0; i < chunk.size(); ++i) {
    const char c = chunk[i];
    const bool joiner = (c == '\'' || c == '-') && i > 0 && i + 1 < chunk.size() && is_word_byte(chunk[i - 1]) &&
                        is_word_byte(chunk[i + 1]);
    if (is_word_byte(c) || joiner) {
      word += c;
      continue;
    }
    if (!word.empty()) out.push_back(std::move(word));
    word.clear();
    out.emplace_back(1, c);  // punctuation and symbols are single ASCII characters
  }
  if (!word.empty()) out.push_back(std::move(word));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space_char(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space_char(s.back())) s.remove_suffix(1);
  return s;
}

// The lines of `text` split at '\n'; a final '\n' ends the last line (it does not start an empty one).
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

ParallelPair parse_tsv_line(std::string_view line, std::size_t line_number, const std::string& where) {
  auto fail = [&](const std::string& why) { throw FormatError("read_parallel_tsv: " + where + ": " + why); };
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF
  const std::size_t bad = first_invalid_utf8(line);
  if (bad != std::string_view::npos) fail("invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line");
  if (line.find('\0') != std::string_view::npos)  // UTF-16 text of ASCII letters is valid UTF-8
    fail("a NUL byte: not a text file (UTF-16? save it as UTF-8)");
  if (trim(line).empty()) fail("blank line (expected source<TAB>target)");
  const std::size_t tabs = static_cast<std::size_t>(std::count(line.begin(), line.end(), '\t'));
  if (tabs == 0) fail("no tab (expected source<TAB>target)");
  if (tabs > 2) fail(std::to_string(tabs) + " tabs (expected source<TAB>target, or source<TAB>target<TAB>alignment)");
  const std::size_t tab = line.find('\t');
  const std::size_t second_tab = tabs == 2 ? line.find('\t', tab + 1) : line.size();
  ParallelPair pair;
  pair.source = std::string(trim(line.substr(0, tab)));
  pair.target = std::string(trim(line.substr(tab + 1, second_tab - tab - 1)));
  pair.line = line_number;
  if (pair.source.empty()) fail("empty source side");
  if (pair.target.empty()) fail("empty target side");
  if (tabs == 2) {
    const std::string_view links = line.substr(second_tab + 1);
    const std::size_t source_tokens = tokenize(pair.source).size(), target_tokens = tokenize(pair.target).size();
    for (const std::string& link : split_whitespace(links)) {
      const std::size_t dash = link.find('-');
      const bool digits = dash != std::string::npos && dash > 0 && dash + 1 < link.size() && link.size() <= 12 &&
                          std::all_of(link.begin(), link.end(), [](char c) { return c == '-' || (c >= '0' && c <= '9'); }) &&
                          link.find('-', dash + 1) == std::string::npos;
      if (!digits) fail("alignment link " + quote_clipped(link, 40) + " is not i-j (source index - target index)");
      const std::size_t i = std::stoul(link.substr(0, dash)), j = std::stoul(link.substr(dash + 1));
      if (i >= source_tokens || j >= target_tokens)
        fail("alignment link " + link + " is out of range (" + std::to_string(source_tokens) + " source and " +
             std::to_string(target_tokens) + " target tokens)");
      pair.alignment.emplace_back(i, j);
    }
  }
  return pair;
}

// Why `token` cannot be a vocabulary entry, or "" when it can.
std::string token_problem(const std::string& token) {
  if (token.empty()) return "empty token";
  if (std::any_of(token.begin(), token.end(), is_space_char)) return "whitespace inside the token " + in_quotes(token);
  if (!is_valid_utf8(token)) return "invalid UTF-8";
  return "";
}

}  // namespace

// ===========================================================================
// Tokenizer
// ===========================================================================

bool is_space_char(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::vector<std::string> split_whitespace(std::string_view text) {
  std::vector<std::string> chunks;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space_char(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_space_char(text[i])) ++i;
    if (i > start) chunks.emplace_back(text.substr(start, i - start));
  }
  return chunks;
}

std::vector<std::string> tokenize(std::string_view text) {
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string_view::npos) throw ValueError("tokenize: invalid UTF-8 at byte offset " + std::to_string(bad));
  std::vector<std::string> tokens;
  for (const std::string& chunk : split_whitespace(lower_case(text))) tokenize_chunk(chunk, tokens);
  return tokens;
}

bool is_valid_utf8(std::string_view s) { return first_invalid_utf8(s) == std::string_view::npos; }

// ===========================================================================
// Parallel corpus
// ===========================================================================

std::vector<ParallelPair> read_parallel_tsv(const std::string& path) {
  return parse_parallel_tsv(read_regular_file(path, "read_parallel_tsv"), path);
}

std::vector<ParallelPair> parse_parallel_tsv(std::string_view text, const std::string& source_name) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 byte-order mark
  std::vector<ParallelPair> pairs;
  const std::vector<std::string_view> lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t line_number = i + 1;
    pairs.push_back(parse_tsv_line(lines[i], line_number, source_name + ":" + std::to_string(line_number)));
  }
  if (pairs.empty()) throw FormatError("read_parallel_tsv: " + source_name + ": no sentence pairs");
  return pairs;
}

// ===========================================================================
// Vocabulary
// ===========================================================================

Vocabulary::Vocabulary() {
  for (const char* special : kSpecialTokens) add(special);
}

void Vocabulary::add(const std::string& token) {
  ids_.emplace(token, static_cast<std::int64_t>(tokens_.size()));
  tokens_.push_back(token);
}

Vocabulary Vocabulary::build(const std::vector<std::vector<std::string>>& sentences, std::size_t min_freq,
                             std::size_t max_size) {
  if (max_size != 0 && max_size < num_specials) {
    throw ValueError("Vocabulary::build: max_size " + std::to_string(max_size) + " is smaller than the " +
                     std::to_string(num_specials) + " special tokens (0 = no cap)");
  }
  std::map<std::string, std::size_t> counts;
  for (const auto& sentence : sentences) {
    for (const auto& token : sentence) ++counts[token];
  }
  // (count, token), sorted by count descending, then token ascending.
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (const auto& [token, count] : counts) {
    const std::string problem = token_problem(token);
    if (!problem.empty()) throw ValueError("Vocabulary::build: cannot add a token: " + problem);
    if (count >= min_freq) ranked.emplace_back(count, token);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  Vocabulary vocab;
  for (const auto& [count, token] : ranked) {
    if (max_size != 0 && vocab.size() >= max_size) break;
    if (vocab.ids_.count(token) == 0) vocab.add(token);  // a special's text is already there
  }
  return vocab;
}

Vocabulary Vocabulary::build_subwords(const std::vector<std::vector<std::string>>& sentences, BytePairEncoding bpe) {
  std::vector<std::vector<std::string>> pieces = bpe.encode_all(sentences);
  pieces.push_back(alphabet_pieces(count_words(sentences)));  // once each: after the text's pieces
  pieces.push_back(bpe.merged_pieces());
  Vocabulary vocab = with_subwords(build(pieces, 1), std::move(bpe));
  for (const auto& [word, count] : count_words(sentences)) vocab.known_word_ids_.emplace(word, vocab.encode({word}));
  return vocab;
}

Vocabulary Vocabulary::with_subwords(const Vocabulary& pieces, BytePairEncoding bpe) {
  Vocabulary vocab = pieces;
  vocab.has_subwords_ = true;
  vocab.bpe_ = std::move(bpe);
  vocab.known_word_ids_.clear();
  return vocab;
}

std::vector<std::string> Vocabulary::pieces(const std::vector<std::string>& words) const {
  return has_subwords_ ? bpe_.encode(words) : words;
}

std::int64_t Vocabulary::id(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? unk : it->second;
}

std::size_t Vocabulary::min_tokens(const std::vector<std::string>& words) const {
  if (!has_subwords_) return words.size();
  std::size_t count = 0;
  for (const std::string& word : words) count += std::max<std::size_t>(1, bpe_.min_pieces(word.size()));
  return count;
}

bool Vocabulary::covers(const std::string& word) const {
  const std::vector<std::int64_t> ids = encode({word});
  return std::find(ids.begin(), ids.end(), unk) == ids.end();
}

const std::string& Vocabulary::token(std::int64_t id) const {
  if (id < 0 || id >= static_cast<std::int64_t>(tokens_.size())) {
    throw IndexError("Vocabulary::token: id " + std::to_string(id) + " out of range for a vocabulary of size " +
                     std::to_string(tokens_.size()));
  }
  return tokens_[static_cast<std::size_t>(id)];
}

std::vector<std::int64_t> Vocabulary::encode(const std::vector<std::string>& words) const {
  std::vector<std::int64_t> ids;
  ids.reserve(words.size());
  for (const auto& word : words) {
    if (!has_subwords_) {
      ids.push_back(id(word));
      continue;
    }
    const auto known = known_word_ids_.find(word);
    if (known != known_word_ids_.end()) {
      ids.insert(ids.end(), known->second.begin(), known->second.end());
      continue;
    }
    for (const std::string& piece : bpe_.encode_word(word)) ids.push_back(id(piece));
  }
  return ids;
}

std::vector<std::string> Vocabulary::decode(const std::vector<std::int64_t>& ids, bool stop_at_eos) const {
  std::vector<std::string> tokens = decode_tokens(ids, stop_at_eos);
  return has_subwords_ ? BytePairEncoding::decode(tokens) : tokens;
}

std::vector<std::string> Vocabulary::decode_tokens(const std::vector<std::int64_t>& ids, bool stop_at_eos) const {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= static_cast<std::int64_t>(tokens_.size())) {
      throw IndexError("Vocabulary::decode: id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                       " out of range for a vocabulary of size " + std::to_string(tokens_.size()));
    }
  }
  std::vector<std::string> tokens;
  for (const std::int64_t id : ids) {
    if (id == pad || id == bos) continue;
    if (id == eos && stop_at_eos) break;
    tokens.push_back(tokens_[static_cast<std::size_t>(id)]);
  }
  return tokens;
}

std::string Vocabulary::to_text() const {
  std::string text;
  for (const auto& token : tokens_) text += token + "\n";
  return text;
}

Vocabulary Vocabulary::from_text(const std::string& text) {
  auto fail = [](std::size_t line_number, const std::string& why) {
    throw FormatError("Vocabulary::from_text: vocabulary line " + std::to_string(line_number) + ": " + why);
  };
  const std::vector<std::string_view> lines = split_lines(text);
  Vocabulary vocab;  // the specials
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t line_number = i + 1;
    const std::string token(lines[i]);
    const std::string problem = token_problem(token);
    if (!problem.empty()) fail(line_number, problem);
    if (i < num_specials) {
      if (token != kSpecialTokens[i]) {
        fail(line_number, std::string("expected the special token ") + kSpecialTokens[i] + ", got " + in_quotes(token));
      }
      continue;
    }
    const auto it = vocab.ids_.find(token);
    if (it != vocab.ids_.end()) {
      if (it->second < static_cast<std::int64_t>(num_specials)) {
        fail(line_number, "special token " + token + " out of place (it belongs on line " +
                              std::to_string(it->second + 1) + ")");
      }
      fail(line_number, "duplicate token " + in_quotes(token) + " (first on line " + std::to_string(it->second + 1) +
                            ")");
    }
    vocab.add(token);
  }
  if (lines.size() < num_specials) {
    fail(lines.size() + 1, std::string("missing the special token ") + kSpecialTokens[lines.size()] + " (the text has " +
                               std::to_string(lines.size()) + " lines, at least " + std::to_string(num_specials) +
                               " expected)");
  }
  return vocab;
}

}  // namespace headlab
