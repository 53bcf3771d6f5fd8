// text_format.hpp (internal): the text helpers the report tools share: printf-style
// numbers, pixel coordinates, and text made safe for an SVG (XML) document.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>

namespace headlab::text_format {

// snprintf into a std::string (the formats here are short).
template <typename... Args> std::string format(const char* fmt, Args... args) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

// A coordinate or a length in an SVG document: two decimals, "12.50".
inline std::string px(double v) { return format("%.2f", v); }

// Characters on screen, roughly: UTF-8 bytes that start a character.
inline std::size_t display_length(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Text for an XML document: the five special characters escaped, control
// characters XML forbids dropped, invalid UTF-8 bytes replaced by U+FFFD.
inline std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default:
          if (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A multi-byte UTF-8 sequence: a lead byte 110xxxxx / 1110xxxx / 11110xxx
    // followed by that many 10xxxxxx bytes.
    const std::size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD, the replacement character
      ++i;
    }
  }
  return out;
}

}  // namespace headlab::text_format
