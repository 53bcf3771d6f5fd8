// config_file.cpp: the strict reader of `headlab train --config FILE` (headlab/train/config_file.hpp).
#include "headlab/train/config_file.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "headlab/core/user_input.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

namespace {

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  return s.substr(a, b - a);
}

// Levenshtein distance (insertions, deletions, substitutions), for "did you mean".
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest_option_flag(const std::string& key) {
  if (key.size() > 64) return "";
  if (const OptionInfo* info = find_option_by_field(key)) return info->flag;  // "ff_dim" -> "ff"
  std::string dashed = key;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  std::string best;
  std::size_t best_distance = 3;  // at most 2 edits away
  for (const OptionInfo& info : train_option_table()) {
    const std::size_t d = edit_distance(dashed, info.flag);
    if (d < best_distance) best_distance = d, best = info.flag;
  }
  return best;
}

std::vector<ConfigEntry> parse_config_text(const std::string& text, const std::string& path) {
  const bool bom = text.rfind("\xEF\xBB\xBF", 0) == 0;
  std::vector<ConfigEntry> entries;
  std::map<std::string, std::size_t> first_line;  // key -> the line that set it
  bool in_train = false;
  bool in_study = false;  // a study recipe's [study] section: read by headlab/lab/study.hpp, skipped here
  std::size_t number = 0;
  std::size_t start = bom ? 3 : 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string raw = text.substr(start, end - start);
    start = end + 1;
    ++number;
    const std::string where = path + ":" + std::to_string(number);
    auto refuse = [&](const std::string& why) { throw ValueError(where + ": " + why); };
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (raw.find('\0') != std::string::npos) refuse("a NUL byte: this is not a text file");
    if (!is_valid_utf8(raw)) refuse("invalid UTF-8");
    for (char c : raw)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7F)
        refuse("a control character in " + quote_clipped(raw));
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') refuse("a section header must end with ']': " + quote_clipped(line));
      const std::string section = trim(line.substr(1, line.size() - 2));
      if (section != "train" && section != "study")
        refuse("unknown section " + quote_clipped("[" + section + "]") + " (the sections are [train] and, in a "
               "study recipe, [study])");
      in_train = section == "train";
      in_study = section == "study";
      continue;
    }
    if (in_study) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) refuse("expected key=value, [train] or a # comment, got " + quote_clipped(line));
    const std::string key = trim(line.substr(0, eq));
    std::string value = trim(line.substr(eq + 1));
    if (!in_train) refuse(quote_clipped(key) + " stands before the [train] section");
    const OptionInfo* info = find_option_by_flag(key);
    if (!info || key.rfind("--", 0) == 0) {
      const std::string near = nearest_option_flag(key);
      refuse("unknown key " + quote_clipped(key) + (near.empty() ? "" : " (did you mean " + near + "?)"));
    }
    if (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
      if (value.size() < 2 || value.back() != value.front()) refuse("unclosed quote in " + quote_clipped(value));
      value = value.substr(1, value.size() - 2);
    }
    const auto [seen, fresh] = first_line.emplace(key, number);
    if (!fresh)
      refuse("duplicate key " + quote_clipped(key) + " (first set on line " + std::to_string(seen->second) + ")");
    entries.push_back(ConfigEntry{key, value, where});
  }
  return entries;
}

std::vector<ConfigEntry> read_config_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The kind and size come from stat(), before any open(): a FIFO would block open() forever.
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw ValueError(path + ": cannot read the config file: no such file");
  if (fs::is_directory(status)) throw ValueError(path + ": is a directory, not a config file");
  if (!fs::is_regular_file(status)) throw ValueError(path + ": not a regular file (a FIFO, socket or device)");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxConfigFileBytes)
    throw ValueError(path + ": " + (ec ? "cannot read its size" : std::to_string(size) + " bytes: a config file is at most " +
                                                                       std::to_string(kMaxConfigFileBytes)));
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.is_open()) throw ValueError(path + ": cannot open the config file");
  return parse_config_text(text.str(), path);
}

}  // namespace headlab
