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

// A file or directory option of `command` given as "" (most often an unset shell variable: --out
// "$DIR"): "--out: an empty path; give a file or directory name (or omit --out for its default)",
// else "". Read as no file, or as the option's default, it would run something else than asked
// (ablate --emit-jobs "" ran the whole sweep). train's own table keeps "" (--run-dir "": no run
// directory), all but --config. An option that may be given with no value (ablate --collect) reads
// as "" then, so `given`, the words as typed, tells "--collect" from "--collect ''".
// A path option is one declared with ->type_name("FILE") or ->type_name("DIR") (what --help shows).
inline std::string empty_path_refusal(const CLI::App& command, const std::vector<std::string>& given) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0) continue;
    const std::string type = option->get_type_name();  // "FILE", or "FILE:..." once a check is added
    const std::string kind = type.substr(0, type.find(':'));
    if (kind != "FILE" && kind != "DIR") continue;
    const bool positional = option->get_lnames().empty();
    const std::string name = positional ? option->get_name(true) : option->get_lnames().front();  // "out", "recipe"
    if (command.get_name() == "train" && name != "config") continue;
    const std::string flag = (positional ? "" : "--") + name;
    bool empty = false;
    if (option->get_expected_min() == 0) {  // "--collect" alone is fine; "--collect ''" or "--collect=" is not
      for (std::size_t i = 0; i < given.size(); ++i)
        empty = empty || given[i] == flag + "=" || (given[i] == flag && i + 1 < given.size() && given[i + 1].empty());
    } else {
      for (const std::string& value : option->results()) empty = empty || value.empty();
    }
    if (empty)
      return flag + ": an empty path; give a file or directory name" +
             (option->get_description().find("default") == std::string::npos ? "" : " (or omit " + flag + " for its default)");
  }
  return "";
}

}  // namespace headlab::cli
