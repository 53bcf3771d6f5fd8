// cli_values.hpp: CLI11 checks that read a flag's text with headlab's strict parsers
// (headlab/core/user_input.hpp) before CLI11 converts it, so that a bad value is refused in the
// flag's own terms ("--steps: must be a whole number from 1 to 1000000, got '-5'") instead of
// wrapping, saturating or printing the 309-digit bounds of a double.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "headlab/core/threads.hpp"
#include "headlab/core/user_input.hpp"
#include "window_override.hpp"

namespace headlab::cli {

// A CLI11 check from a strict parser: the parser's ValueError becomes the check's message.
template <typename Parse>
CLI::Validator strict_value(Parse parse) {
  return CLI::Validator(
      [parse](std::string& text) -> std::string {
        try {
          parse(text);
        } catch (const ValueError& e) {
          return e.what();
        }
        return "";
      },
      "");
}

inline CLI::Validator whole_number(std::uint64_t lo = 0, std::uint64_t hi = std::numeric_limits<std::uint64_t>::max()) {
  return strict_value([lo, hi](const std::string& text) { parse_whole_number(text, lo, hi); });
}
inline CLI::Validator real_number(double lo = std::numeric_limits<double>::lowest(),
                                  double hi = std::numeric_limits<double>::max()) {
  return strict_value([lo, hi](const std::string& text) { parse_real_number(text, lo, hi); });
}
// A probability that may not be 0: a finite real in (0, 1] ("must be a number in (0, 1], got '0'").
inline CLI::Validator positive_fraction() {
  return strict_value([](const std::string& text) {
    const std::string why = "must be a number in (0, 1], got " + quote_clipped(text);
    double v = 0;
    try {
      v = parse_real_number(text);
    } catch (const ValueError&) {
      throw ValueError(why);
    }
    if (!(v > 0 && v <= 1)) throw ValueError(why);
  });
}
// A signed whole number for counts kept signed on purpose (headlab stats): digits, at most one
// leading '-', within int64, so that the command refuses a negative one naming its flag.
inline CLI::Validator signed_whole_number() {
  return strict_value([](const std::string& text) {
    const bool negative = !text.empty() && text[0] == '-';
    const std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    try {
      parse_whole_number(negative ? text.substr(1) : text, 0, limit);
    } catch (const ValueError&) {
      throw ValueError("must be a whole number from -" + std::to_string(limit) + " to " + std::to_string(limit) +
                       ", got " + quote_clipped(text));
    }
  });
}

// The thread count of this run: --threads when given (> 0), else $HEADLAB_THREADS when set, else
// every core this process may use. ValueError on a bad HEADLAB_THREADS.
inline int thread_count_to_use(int flag_value) {
  if (flag_value > 0) return flag_value;
  if (const char* env = std::getenv("HEADLAB_THREADS")) {
    try {
      return static_cast<int>(parse_whole_number(env, 1, 1024));
    } catch (const ValueError& e) {
      throw ValueError(std::string("HEADLAB_THREADS (the default of --threads): ") + e.what());
    }
  }
  return available_cores();
}

// A CLI11 message cut to a readable length when it holds a whole hostile value (CLI11 quotes
// arguments it did not expect whole); our own messages quote values clipped and stay under 400 bytes.
inline std::string clipped_message(const std::string& message) {
  if (message.size() <= 400) return message;
  return message.substr(0, 240) + "... (" + std::to_string(message.size()) + " bytes)";
}

// --window W and --sinks K of a command that scores a decoder-only checkpoint (window_override.hpp).
inline void add_window_flags(CLI::App* app, WindowOverride& o) {
  app->add_option("--window", o.window,
                  "score with a sliding window of W positions instead of the trained attention (decoder-only "
                  "checkpoints: induction, lm, recall; 0 = the whole causal prefix)")
      ->check(whole_number(0, 1000000000))
      ->each([&o](const std::string&) { o.window_given = true; });
  app->add_option("--sinks", o.sinks, "with a window: the first K positions every query still sees (attention sinks)")
      ->check(whole_number(0, 1000000000))
      ->each([&o](const std::string&) { o.sinks_given = true; });
}

}  // namespace headlab::cli
