// headlab/core/json_depth.hpp: a nesting limit for every JSON file headlab reads.
//
// No file headlab writes nests deeper than 4 levels (metrics.jsonl: an object of numbers;
// summary.json, sweep.json: objects of arrays). A hostile line of 100 000 '[' would otherwise be
// parsed, then destroyed or printed by recursion, and overflow the stack (SIGSEGV). Passed as the
// callback of nlohmann's parse, the limit stops the parser at the first bracket too deep:
//
//   ojson j = ojson::parse(line, json_depth_limit<ojson>("metrics.jsonl:7: "));
//     -> FormatError "metrics.jsonl:7: JSON nested deeper than 32 levels"
#pragma once

#include <string>

#include "headlab/core/errors.hpp"

namespace headlab {

constexpr int kMaxJsonDepth = 32;

// A parser callback (nlohmann::basic_json::parser_callback_t) that keeps every value and throws
// FormatError(where + "JSON nested deeper than N levels") at an object or array opened at depth N.
template <typename Json>
auto json_depth_limit(std::string where, int max_depth = kMaxJsonDepth) {
  return [where = std::move(where), max_depth](int depth, typename Json::parse_event_t event, Json&) {
    using Event = typename Json::parse_event_t;
    if ((event == Event::object_start || event == Event::array_start) && depth >= max_depth)
      throw FormatError(where + "JSON nested deeper than " + std::to_string(max_depth) + " levels");
    return true;
  };
}

// nlohmann's message of a parse or type error, for ours: without its "[json.exception.K.N] " tag and
// at most `max_bytes` of it (a 100 MB number is quoted whole in "number overflow parsing '...'").
inline std::string json_error_text(const std::string& what, std::size_t max_bytes = 200) {
  std::string text = what;
  if (text.rfind("[json.exception.", 0) == 0 && text.find("] ") != std::string::npos)
    text = text.substr(text.find("] ") + 2);
  if (text.size() > max_bytes) {
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    text = text.substr(0, cut) + "... (" + std::to_string(what.size()) + " bytes)";
  }
  return text;
}

}  // namespace headlab
