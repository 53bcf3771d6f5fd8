// model_input.hpp: one input row a model reads, from the --input flag of `explore` and `cache`.
#pragma once

#include <string>
#include <vector>

#include "headlab/lab/explorer.hpp"

namespace headlab::cli {

// ids (n) -> (1, n).
IndexArray one_row(const std::vector<std::int64_t>& ids);

// The input of one forward (ValueError naming --input when the model cannot take it):
//   none       the first probe sequence, as source and target
//   translate  a source sentence (+ </s>); the target is its greedy translation after <s>
//   lm         a text, one token per character (or word)
//   copy, induction, recall  token ids, 1 to the model's length
ExplorerInput explorer_input(LoadedModel& m, const std::string& input, const Probe& probe);

}  // namespace headlab::cli
