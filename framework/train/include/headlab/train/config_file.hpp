// headlab/train/config_file.hpp: the config file of `headlab train --config FILE`, read strictly.
//
// The format is what TrainOptions::to_config_ini writes (every run directory's config.ini), and
// what a person may write by hand:
//
//   # a comment (also ; ...)      whole lines only: a '#' after a value is part of the value
//   [train]                       the section of the options; every key stands under it
//   [study]                       a study recipe's grid and comparisons (headlab/lab/study.hpp):
//                                 skipped here, after the checks of every line below
//   steps = 2000                  a flag name of `headlab train` without its dashes, '=', the value;
//                                 spaces around the key and the value are trimmed
//   train = "data/my corpus.tsv"  a value in double (or single) quotes is taken as is between them
//
// Lines end in \n or \r\n; a UTF-8 byte-order mark at the very start is skipped. Refused, as a
// ValueError "FILE:LINE: why" (or "FILE: why" for the file as a whole): a path that is not a
// regular file (a directory, a FIFO: refused without opening it) or is over 1 MiB, a NUL byte
// (a binary file), invalid UTF-8, a control character, a line that is none of the above, a section
// other than [train] and [study] or a key before [train], a key that is not a flag (the nearest
// flag suggested: "did you mean steps?"), and a key given twice in [train] (both lines named).
//
// Values are not checked here: the caller applies each one exactly as the flag would be
// (OptionInfo::set, then TrainOptions::validate), prefixing `where`.
#pragma once

#include <string>
#include <vector>

namespace headlab {

struct ConfigEntry {
  std::string key;    // a flag name of the options table: "d-model"
  std::string value;  // quotes removed
  std::string where;  // "FILE:LINE", for messages
};

constexpr std::size_t kMaxConfigFileBytes = 1 << 20;

// `text` is the file's contents; `path` names it in messages.
std::vector<ConfigEntry> parse_config_text(const std::string& text, const std::string& path);
std::vector<ConfigEntry> read_config_file(const std::string& path);

// The flag of the options table nearest to `key` ("stpes" -> "steps", "d_model" -> "d-model"), or ""
// when none is close.
std::string nearest_option_flag(const std::string& key);

}  // namespace headlab
