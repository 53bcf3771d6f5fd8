// cli_errors.hpp: CLI11's parse errors in the user's terms. CLI11 says "--heads: At Most 1 required
// but received 2" for a flag given twice, "This should be caught in your main function, see
// examples" for --help where no help is printed, and lists unexpected words last first; --threads
// among a sweep's train flags is one of those (headlab's own flag goes before the command).
#pragma once

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_values.hpp"

namespace headlab::cli {

// The message of a CLI11 error; `extras`: the unexpected words in the order given, when the caller
// knows them (else they are read from CLI11's message).
inline std::string cli_error_text(const CLI::Error& e, std::vector<std::string> extras = {}) {
  if (dynamic_cast<const CLI::CallForHelp*>(&e) || dynamic_cast<const CLI::CallForAllHelp*>(&e))
    return "--help prints the help and runs nothing: it is not a flag of a run";
  std::string text = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    if (extras.empty()) {
      const std::size_t colon = text.find(": ");
      std::string word;
      std::istringstream words(colon == std::string::npos ? text : text.substr(colon + 2));
      while (words >> word) extras.push_back(word);
      std::reverse(extras.begin(), extras.end());  // CLI11 lists them last first
    }
    text = std::string(extras.size() > 1 ? "unexpected arguments:" : "unexpected argument:");
    bool global = false;
    for (const std::string& word : extras) {
      text += " " + quote_clipped(word, 60);
      global = global || word == "--threads" || word.rfind("--threads=", 0) == 0 || word == "--flush-denormals";
    }
    if (global) text += " (--threads and --flush-denormals are headlab's own flags, not train's: give them before the command)";
    return clipped_message(text);
  }
  static const std::regex at_most(": At Most 1 required but received ([0-9]+)");
  text = std::regex_replace(text, at_most, ": given $1 times; give it once");
  return clipped_message(text);
}

}  // namespace headlab::cli
