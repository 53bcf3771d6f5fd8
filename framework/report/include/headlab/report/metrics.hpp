// headlab/report/metrics.hpp: what a run leaves behind, one JSON object a line.
//
//   MetricsWriter     appends one JSON object per line to <run_dir>/metrics.jsonl
//                     ("JSON Lines"); read_metrics() reads such a file back
//
// Why metrics rows are not nlohmann::json objects here: nlohmann's header is
// large and would be compiled by every file that includes this one. A row is a
// small ordered list of named values instead (MetricRow); the JSON library
// lives only in report/metrics.cpp. A caller that already has JSON text can pass it
// to MetricsWriter::write_json.
//
// Errors (see errors.hpp):
//   IOError      metrics.jsonl cannot be opened or written (the message names the file)
//   FormatError  (an IOError) a metrics file line is not a JSON object; the
//                message names the file and the line number
//   ValueError   asking a MetricRow for a name it lacks (or a number for a text),
//                write_json of text that is not one JSON object
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "headlab/core/file_writer.hpp"

namespace headlab {

// A value in a metrics row: a number or a text.
using MetricValue = std::variant<double, std::string>;

// One line of metrics.jsonl: named values in the order they were set.
//   MetricRow row;
//   row.set("step", 120).set("loss", 1.234).set("split", "train");
//   -> {"step":120,"loss":1.234,"split":"train"}
// Numbers are written exactly (they read back bit for bit); a whole number
// such as a step is written without ".0". JSON has no NaN or infinity: those
// are written as null and read back as NaN (a diverged loss stays visible).
struct MetricRow {
  std::vector<std::pair<std::string, MetricValue>> fields;

  // Sets `name` (replacing an earlier value of that name, keeping its place).
  // Any arithmetic type is stored as a double (bool as 0 / 1).
  template <typename N, typename = std::enable_if_t<std::is_arithmetic_v<N>>>
  MetricRow& set(const std::string& name, N value) {
    return set_value(name, MetricValue(static_cast<double>(value)));
  }
  MetricRow& set(const std::string& name, std::string value) {
    return set_value(name, MetricValue(std::move(value)));
  }
  MetricRow& set(const std::string& name, const char* value) { return set(name, std::string(value)); }

  bool has(const std::string& name) const;
  const MetricValue* find(const std::string& name) const;  // nullptr if missing
  double number(const std::string& name) const;            // ValueError if missing or a text
  const std::string& text(const std::string& name) const;  // ValueError if missing or a number

 private:
  MetricRow& set_value(const std::string& name, MetricValue value);
};

// The compact one-line JSON text of a row: {"step":120,"loss":1.234}
std::string to_json_line(const MetricRow& row);

// Appends rows to <run_dir>/metrics.jsonl, one JSON object per line, each line written whole
// (headlab/core/file_writer.hpp's AppendFile): a run that is killed keeps every line it wrote,
// and a failed write leaves no half line. sync() makes the lines so far durable (fsync); the
// trainer calls it at every evaluation and before every checkpoint save. The directory is
// created if missing; an existing file is appended to, never truncated (a resumed run continues
// its log, cut back to its checkpoint first: headlab/train/run_dir.hpp).
class MetricsWriter {
 public:
  explicit MetricsWriter(const std::filesystem::path& run_dir);  // IOError if it cannot open

  void write(const MetricRow& row);  // IOError naming the file and the OS reason if the write fails
  // Appends JSON text that must be one JSON object (ValueError otherwise),
  // re-written compactly on one line: write_json(R"({"step": 3, "acc": [1, 2]})").
  void write_json(std::string_view object_text);
  void sync();  // IOError if fsync fails

  const std::filesystem::path& path() const { return out_.path(); }

 private:
  void append_line(const std::string& line);
  AppendFile out_;
};

// Reads a metrics.jsonl file: one row per non-blank line, in file order.
// JSON numbers and strings become MetricValue numbers and texts; null becomes
// NaN; true / false and a nested array or object become a text holding their
// compact JSON (so that `"loss": true` is never read as a loss of 1). IOError if
// the file cannot be opened; FormatError naming the line number if a line is not
// a JSON object:
//   "read_metrics: 'runs/a/metrics.jsonl': line 3: not valid JSON at column 13: syntax error ..."
std::vector<MetricRow> read_metrics(const std::filesystem::path& path);

// One line of such a file as a row (the same conversions); FormatError starting with `where`
// (e.g. "FILE: line 3: ") when it is not a JSON object.
MetricRow metric_row_from_json_line(const std::string& line, const std::string& where);

// A number of a row, as a chart or a resumed run reads it: FormatError starting with `where`
// ("metrics row 3: 'loss' is not a number: 'true'") when it is a text; "step" must be a whole
// number from 0 to 2^53 ("metrics row 3: 'step' is 1e+300, not a step: a whole number from 0 to
// 2^53"). ValueError when the row has no such field.
double metric_number(const MetricRow& row, const std::string& name, const std::string& where);

// The same, `where` being "metrics row N: " for row `index` (from 0) of a run's metrics.
double metric_number(const MetricRow& row, const std::string& name, std::size_t index);

}  // namespace headlab
