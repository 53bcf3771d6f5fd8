// headlab/core/user_input.hpp: text a user or a file gave (flags, config files, checkpoint
// metadata): numbers read strictly, and values quoted back in messages clipped, so that a hostile
// value (10 MB, control bytes) cannot make a hostile message.
//
//   whole number  decimal digits only ("0042" is 42): no sign, no exponent, no spaces, within [lo, hi]
//   real number   decimal or exponent form ("0.5", "-2", "1e-3"), finite: no nan, no inf, no overflow
//   boolean       true, false, 1 or 0
// A refusal is a ValueError whose message is in the value's own terms, for the caller to prefix
// with the option's name: "must be a whole number from 1 to 1000000000, got '-5'".
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <istream>
#include <string>

#include "headlab/core/errors.hpp"

namespace headlab {

// The value quoted for a message: 'abc', or its first `max_bytes` bytes (never half a UTF-8
// character) and its size: 'abcd...' (10485760 bytes). Control bytes are shown as \xNN.
inline std::string quote_clipped(const std::string& value, std::size_t max_bytes = 200) {
  std::size_t cut = value.size() <= max_bytes ? value.size() : max_bytes;
  if (cut < value.size())  // back up over UTF-8 continuation bytes (10xxxxxx)
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  std::string out = "'";
  for (std::size_t i = 0; i < cut; ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x20 && c != 0x7F) {
      out += static_cast<char>(c);
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", c);
    out += hex;
  }
  if (cut < value.size()) return out + "...' (" + std::to_string(value.size()) + " bytes)";
  return out + "'";
}

std::uint64_t parse_whole_number(const std::string& text, std::uint64_t lo = 0,
                                 std::uint64_t hi = std::numeric_limits<std::uint64_t>::max());
double parse_real_number(const std::string& text);
// A real within [lo, hi]: "must be a number from 0.001 to 1, got '2'".
double parse_real_number(const std::string& text, double lo, double hi);
bool parse_boolean(const std::string& text);

// One line of `in` into `line` (without its '\n'), reading at most `max_bytes` + 1 of it: a line
// from a hostile stream (stdin, a metrics file) never fills memory. Returns false at end of input
// with nothing read; sets `too_long` (and stops reading that line) when the line is longer.
inline bool read_line_bounded(std::istream& in, std::string& line, std::size_t max_bytes, bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* buffer = in.rdbuf();
  for (;;) {
    const int c = buffer->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return !line.empty();
    }
    if (c == '\n') return true;
    if (line.size() == max_bytes) {
      too_long = true;
      return true;
    }
    line.push_back(static_cast<char>(c));
  }
}

}  // namespace headlab
