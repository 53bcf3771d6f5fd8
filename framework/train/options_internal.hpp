// options_internal.hpp (internal): what options.cpp (the table, text, config files) and
// options_validate.cpp (TrainOptions::validate) share.
#pragma once

#include <string>
#include <vector>

namespace headlab::detail {

// The shortest text that reads back as the same double: 0.6, 1e-05.
std::string real_text(double v);

// The values a choice option takes ("task", "gate", "progress", "optimizer", "schedule", "select",
// "tokenizer"); empty for any other field.
std::vector<std::string> choices_of(const std::string& field);

}  // namespace headlab::detail
