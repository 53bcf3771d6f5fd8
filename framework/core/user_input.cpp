// user_input.cpp: strict numbers from text (headlab/core/user_input.hpp).
#include "headlab/core/user_input.hpp"

#include <charconv>
#include <cmath>

namespace headlab {

namespace {

// The shortest text that reads back as the same double: 0.6, 1e-05.
std::string real_text(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

}  // namespace

std::uint64_t parse_whole_number(const std::string& text, std::uint64_t lo, std::uint64_t hi) {
  const std::string why = "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                          ", got " + quote_clipped(text);
  bool digits = !text.empty();
  for (char c : text) digits = digits && c >= '0' && c <= '9';
  if (!digits) throw ValueError(why);
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) throw ValueError(why);
  return v;
}

double parse_real_number(const std::string& text) {
  // from_chars takes no leading '+' and no spaces; it does take "inf" and "nan", refused below.
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    throw ValueError("must be a finite number, got " + quote_clipped(text));
  return v;
}

double parse_real_number(const std::string& text, double lo, double hi) {
  const std::string why = "must be a number from " + real_text(lo) + " to " + real_text(hi) + ", got " + quote_clipped(text);
  double v = 0;
  try {
    v = parse_real_number(text);
  } catch (const ValueError&) {
    throw ValueError(why);
  }
  if (!(v >= lo && v <= hi)) throw ValueError(why);
  return v;
}

bool parse_boolean(const std::string& text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  throw ValueError("must be true, false, 1 or 0, got " + quote_clipped(text));
}

}  // namespace headlab
