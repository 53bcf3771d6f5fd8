// token_ids.hpp: token ids given on the command line ("1 4 2 9"), read strictly.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/core/user_input.hpp"

namespace headlab::cli {

// The ids of `text`, separated by whitespace, each a whole number in [0, vocab): else ValueError
// "FLAG: 'x' is not a token id in [0, vocab)" (the word quoted clipped).
inline std::vector<std::int64_t> parse_token_ids(const std::string& text, std::size_t vocab, const std::string& flag) {
  std::vector<std::int64_t> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    std::uint64_t id = 0;
    try {
      id = parse_whole_number(word, 0, vocab - 1);
    } catch (const ValueError&) {
      throw ValueError(flag + ": " + quote_clipped(word, 40) + " is not a token id in [0, " + std::to_string(vocab) + ")");
    }
    ids.push_back(static_cast<std::int64_t>(id));
  }
  return ids;
}

}  // namespace headlab::cli
