// char_vocabulary.cpp: characters as tokens (headlab/data/char_vocabulary.hpp).
#include "headlab/data/char_vocabulary.hpp"

#include <algorithm>
#include <set>
#include <sstream>

#include "headlab/core/errors.hpp"

namespace headlab {

std::vector<char32_t> utf8_code_points(std::string_view text) {
  // A code point is 1 to 4 bytes: 0xxxxxxx, 110xxxxx 10xxxxxx, 1110xxxx 10xxxxxx 10xxxxxx or
  // 11110xxx 10xxxxxx 10xxxxxx 10xxxxxx; overlong forms, surrogates and values above U+10FFFF
  // are invalid.
  std::vector<char32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    std::size_t length = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    char32_t c = length == 1 ? b : length == 2 ? (b & 0x1F) : length == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = length != 0 && i + length <= n;
    for (std::size_t k = 1; ok && k < length; ++k) {
      ok = (s[i + k] & 0xC0) == 0x80;
      c = (c << 6) | (s[i + k] & 0x3F);
    }
    static const char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && c >= smallest[length] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
    if (!ok) throw ValueError("not valid UTF-8 at byte " + std::to_string(i));
    out.push_back(c);
    i += length;
  }
  return out;
}

std::string utf8_encode(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

CharVocabulary CharVocabulary::build(std::string_view text) {
  const std::vector<char32_t> points = utf8_code_points(text);
  std::set<char32_t> distinct(points.begin(), points.end());
  if (distinct.count(0)) throw ValueError("the text holds a NUL character");
  CharVocabulary v;
  for (char32_t c : distinct) {
    v.ids_[c] = static_cast<std::int64_t>(num_specials + v.chars_.size());
    v.chars_.push_back(c);
  }
  return v;
}

std::vector<std::int64_t> CharVocabulary::encode(std::string_view text) const {
  std::vector<std::int64_t> ids;
  for (char32_t c : utf8_code_points(text)) {
    const auto it = ids_.find(c);
    ids.push_back(it == ids_.end() ? unk : it->second);
  }
  return ids;
}

std::size_t CharVocabulary::count_unknown(std::string_view text) const {
  std::size_t unknown = 0;
  for (char32_t c : utf8_code_points(text)) unknown += ids_.count(c) == 0;
  return unknown;
}

std::string CharVocabulary::decode_one(std::int64_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= size())
    throw IndexError("CharVocabulary: id " + std::to_string(id) + " is outside [0, " + std::to_string(size()) + ")");
  if (id == pad || id == bos) return "";
  if (id == eos) return "</s>";
  if (id == unk) return "<unk>";
  return utf8_encode(chars_[static_cast<std::size_t>(id) - num_specials]);
}

std::string CharVocabulary::decode(const std::vector<std::int64_t>& ids) const {
  std::string s;
  for (std::int64_t id : ids) s += decode_one(id);
  return s;
}

std::string CharVocabulary::to_text() const {
  std::ostringstream os;
  os << std::hex;
  for (std::size_t i = 0; i < chars_.size(); ++i) os << (i ? " " : "") << static_cast<std::uint32_t>(chars_[i]);
  return os.str();
}

CharVocabulary CharVocabulary::from_text(const std::string& text) {
  CharVocabulary v;
  std::istringstream in(text);
  std::string item;
  std::size_t index = 0;
  while (in >> item) {
    ++index;
    auto refuse = [&](const std::string& why) {
      throw FormatError("CharVocabulary::from_text: entry " + std::to_string(index) + " '" + item.substr(0, 16) +
                        "': " + why);
    };
    if (item.size() > 6 || item.find_first_not_of("0123456789abcdef") != std::string::npos)
      refuse("not a hexadecimal code point");
    const auto c = static_cast<char32_t>(std::stoul(item, nullptr, 16));
    if (c == 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) refuse("not a character");
    if (!v.chars_.empty() && c <= v.chars_.back()) refuse("not above the entry before it (a repeat or out of order)");
    v.ids_[c] = static_cast<std::int64_t>(num_specials + v.chars_.size());
    v.chars_.push_back(c);
  }
  if (v.chars_.empty()) throw FormatError("CharVocabulary::from_text: no characters");
  return v;
}

}  // namespace headlab
