// sweep_text.hpp (internal): text helpers the sweep's plan (sweep.cpp) and its summaries
// (sweep_summary.cpp) share: splitting and joining, numbers as text, CSV and Markdown cells,
// and the text-file writer (atomic and checked).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/lab/sweep.hpp"

namespace headlab::sweep_text {

namespace fs = std::filesystem;

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();

inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

// Writes `text` to `path` through a temporary file, fsync and a rename: a reader never sees half a
// file; IOError naming the file and the OS reason (headlab/core/file_writer.hpp).
inline void write_text_file(const fs::path& path, const std::string& text) {
  write_file_atomic(path, text, "ablate");
}

inline bool is_number(const std::string& text) {
  if (text.empty()) return false;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(v);
}

inline double to_number(const std::string& text) {
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

// Shortest text that reads back as the same double ("0.1", "1234", "1e-05"); NaN -> "nan".
inline std::string exact_number(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "nan";
}

// A number for people: whole numbers and numbers from 10^4 up (parameters 104320, FLOPs 13358)
// rounded to an integer, others to `digits` significant digits (2.256, 0.0053).
inline std::string readable_number(double v, int digits) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  if (std::isfinite(v) && (v == std::round(v) || std::fabs(v) >= 1e4) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

inline std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

inline std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The metrics most sweeps are about come first in tables, in this order; others follow as found.
inline const char* const kUsualMetrics[] = {"valid_loss",  "valid_accuracy",   "valid_bleu",    "test_bleu_greedy",
                                     "test_bleu_beam", "parameters",   "flops_per_token", "train_seconds",
                                     "steps"};
// Numeric fields of summary.json that are not results.
inline const char* const kNotMetrics[] = {"interrupted", "seed"};

// "1,2,3".
inline std::string seeds_text(const std::vector<std::uint64_t>& seeds) {
  std::vector<std::string> parts;
  for (const std::uint64_t s : seeds) parts.push_back(std::to_string(s));
  return join(parts, ",");
}

// "heads=1,2,4"; a grid as its axes separated by spaces, "(none)" when empty.
inline std::string axis_text(const GridAxis& axis) { return axis.key + "=" + join(axis.values, ","); }

inline std::string grid_text(const std::vector<GridAxis>& grid) {
  std::vector<std::string> parts;
  for (const auto& a : grid) parts.push_back(axis_text(a));
  return parts.empty() ? "(none)" : join(parts, " ");
}

}  // namespace headlab::sweep_text
