// window_override.hpp: --window / --sinks of eval, heads and explore: a decoder-only checkpoint scored
// with another attention window than it was trained with (headlab/train/evaluation.hpp:
// set_attention_window), free of CLI11 (the flags: cli_values.hpp, add_window_flags).
#pragma once

#include <cstddef>
#include <string>

#include "headlab/train/evaluation.hpp"

namespace headlab::cli {

struct WindowOverride {
  std::size_t window = 0, sinks = 0;
  bool window_given = false, sinks_given = false;
  bool given() const { return window_given || sinks_given; }
};

// Applies what was given: a flag not given keeps the checkpoint's value, except that --window 0 alone
// also clears its sinks (sinks need a window). Returns what is scored, "attention window 17 + 1 sinks
// (trained with the whole causal prefix)", or "" when neither flag was given. ValueError (a usage
// error) for an encoder-decoder checkpoint or sinks without a window.
inline std::string apply_window_override(LoadedModel& m, const WindowOverride& o) {
  if (!o.given()) return "";
  const auto describe = [](std::size_t window, std::size_t sinks) {
    return window == 0 ? std::string("the whole causal prefix")
                       : "a window of " + std::to_string(window) + " + " + std::to_string(sinks) + " sinks";
  };
  const std::string trained = describe(m.options.window, m.options.sinks);
  const std::size_t window = o.window_given ? o.window : m.options.window;
  const std::size_t sinks = o.sinks_given ? o.sinks : (o.window_given && o.window == 0 ? 0 : m.options.sinks);
  set_attention_window(m, window, sinks);
  return "attention: " + describe(window, sinks) + " (set at evaluation; trained with " + trained + ")";
}

}  // namespace headlab::cli
