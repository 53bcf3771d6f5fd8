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

}  // namespace headlab
