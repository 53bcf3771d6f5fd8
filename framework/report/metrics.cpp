// metrics.cpp: metrics.jsonl, written and read back (see headlab/report/metrics.hpp).
//
// The only file that sees the JSON library for metrics; the public header
// speaks in MetricRow.
#include "headlab/report/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/json_depth.hpp"
#include "headlab/core/user_input.hpp"

namespace headlab {

namespace {

// ordered_json keeps the keys in the order they were set (plain json sorts them).
using ojson = nlohmann::ordered_json;

// Whole numbers that a double holds exactly are written as JSON integers
// ("step":120, not "step":120.0); JSON has no NaN / inf, so those become null.
ojson number_to_json(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == std::floor(v) && std::fabs(v) <= 9007199254740992.0)  // 2^53
    return static_cast<std::int64_t>(v);
  return v;
}

std::string dump_compact(const ojson& j) {
  // Invalid UTF-8 in a text is replaced (U+FFFD) instead of throwing mid-run.
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string quoted(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

}  // namespace

MetricRow& MetricRow::set_value(const std::string& name, MetricValue value) {
  for (auto& field : fields) {
    if (field.first == name) {
      field.second = std::move(value);
      return *this;
    }
  }
  fields.emplace_back(name, std::move(value));
  return *this;
}

bool MetricRow::has(const std::string& name) const { return find(name) != nullptr; }

const MetricValue* MetricRow::find(const std::string& name) const {
  for (const auto& field : fields)
    if (field.first == name) return &field.second;
  return nullptr;
}

double MetricRow::number(const std::string& name) const {
  const MetricValue* value = find(name);
  if (!value) throw ValueError("MetricRow: no field '" + name + "'");
  if (const double* v = std::get_if<double>(value)) return *v;
  throw ValueError("MetricRow: '" + name + "' is not a number: " + quote_clipped(std::get<std::string>(*value)));
}

const std::string& MetricRow::text(const std::string& name) const {
  const MetricValue* value = find(name);
  if (!value) throw ValueError("MetricRow: no field '" + name + "'");
  if (const std::string* s = std::get_if<std::string>(value)) return *s;
  throw ValueError("MetricRow: '" + name + "' is a number, not a text");
}

std::string to_json_line(const MetricRow& row) {
  ojson j = ojson::object();
  for (const auto& [name, value] : row.fields) {
    if (const double* v = std::get_if<double>(&value))
      j[name] = number_to_json(*v);
    else
      j[name] = std::get<std::string>(value);
  }
  return dump_compact(j);
}

namespace {
std::filesystem::path created(const std::filesystem::path& run_dir) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec) throw IOError("MetricsWriter: cannot create directory " + quoted(run_dir) + ": " + ec.message());
  return run_dir / "metrics.jsonl";
}
}  // namespace

// Appending: an earlier run's lines are never truncated.
MetricsWriter::MetricsWriter(const std::filesystem::path& run_dir) : out_(created(run_dir), "MetricsWriter") {}

void MetricsWriter::append_line(const std::string& line) { out_.write(line + '\n'); }

void MetricsWriter::sync() { out_.sync(); }

void MetricsWriter::write(const MetricRow& row) { append_line(to_json_line(row)); }

void MetricsWriter::write_json(std::string_view object_text) {
  ojson j;
  try {
    j = ojson::parse(object_text.begin(), object_text.end(), json_depth_limit<ojson>("MetricsWriter::write_json: "));
  } catch (const nlohmann::json::exception& e) {
    throw ValueError("MetricsWriter::write_json: not valid JSON (" + json_error_text(e.what()) + ")");
  }
  if (!j.is_object()) throw ValueError("MetricsWriter::write_json: expected a JSON object, got a " +
                                       std::string(j.type_name()));
  append_line(dump_compact(j));
}

MetricRow metric_row_from_json_line(const std::string& line, const std::string& where) {
  ojson j;
  try {
    j = ojson::parse(line, json_depth_limit<ojson>(where));
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at
    // line 1, column 13: syntax error ..."; its "line 1" is within this one line,
    // so keep only the column and the explanation.
    std::string detail = e.what();
    const std::size_t column = detail.find("column ");
    const std::size_t colon = column == std::string::npos ? column : detail.find(": ", column);
    if (colon != std::string::npos) detail = detail.substr(column, colon - column) + ": " + detail.substr(colon + 2);
    throw FormatError(where + "not valid JSON at " + json_error_text(detail));
  } catch (const nlohmann::json::exception& e) {  // a number too large for a double, ...
    throw FormatError(where + "not valid JSON: " + json_error_text(e.what()));
  }
  if (!j.is_object()) throw FormatError(where + "expected a JSON object, got a " + std::string(j.type_name()));

  MetricRow row;
  for (const auto& [name, value] : j.items()) {
    if (value.is_number())
      row.set(name, value.get<double>());
    else if (value.is_string())
      row.set(name, value.get<std::string>());
    else if (value.is_null())
      row.set(name, std::numeric_limits<double>::quiet_NaN());  // written from a NaN / inf
    else
      row.set(name, dump_compact(value));  // true / false, a nested array or object: kept as its JSON text
  }
  return row;
}

double metric_number(const MetricRow& row, const std::string& name, const std::string& where) {
  const MetricValue* field = row.find(name);
  if (!field) throw ValueError("MetricRow: no field '" + name + "'");
  if (const std::string* text = std::get_if<std::string>(field))
    throw FormatError(where + "'" + name + "' is not a number: " + quote_clipped(*text));
  const double value = std::get<double>(*field);
  constexpr double kLargestStep = 9007199254740992.0;  // 2^53: every whole number up to it is exact
  if (name == "step" && !(value >= 0 && value <= kLargestStep && std::floor(value) == value)) {
    char shortest[32];  // the shortest text that reads back as `value`: 1e+300, 123456789.5
    const auto end = std::to_chars(shortest, shortest + sizeof shortest, value).ptr;
    throw FormatError(where + "'step' is " + std::string(shortest, end) + ", not a step: a whole number from 0 to 2^53");
  }
  return value;
}

double metric_number(const MetricRow& row, const std::string& name, std::size_t index) {
  return metric_number(row, name, "metrics row " + std::to_string(index + 1) + ": ");
}

std::vector<MetricRow> read_metrics(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw IOError("read_metrics: cannot open " + quoted(path) + ": " + std::strerror(errno));
  std::vector<MetricRow> rows;
  std::string line;
  bool too_long = false;
  // headlab writes lines of a few hundred bytes; a line of a megabyte is not one of them.
  constexpr std::size_t kMaxLineBytes = 1u << 20;
  for (std::size_t line_no = 1; read_line_bounded(in, line, kMaxLineBytes, too_long); ++line_no) {
    if (too_long)
      throw FormatError("read_metrics: " + quoted(path) + ": line " + std::to_string(line_no) +
                        ": longer than 1 MiB (headlab writes lines of a few hundred bytes)");
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are allowed
    rows.push_back(
        metric_row_from_json_line(line, "read_metrics: " + quoted(path) + ": line " + std::to_string(line_no) + ": "));
  }
  if (in.bad()) throw IOError("read_metrics: error while reading " + quoted(path));
  return rows;
}

}  // namespace headlab
