// headlab/report/report.hpp: what a training run tells you while it runs and leaves behind after it.
//
// Small tools, used by `headlab train`, by ablation sweeps and by the
// attention-inspection reports:
//
//   ProgressReporter  a live progress line on the terminal, or plain log lines
//                     when the output is a file or a pipe:
//                       [#####...............] step 120/500  loss 1.234  lr 1.0e-03  12.3k tok/s  ETA 0:42
//   MetricsWriter     appends one JSON object per line to <run_dir>/metrics.jsonl
//                     ("JSON Lines"); read_metrics() reads such a file back
//   svg_line_chart    draws series of (x, y) points as a self-contained SVG file
//                     (no scripts, fonts or links: it opens in any browser)
//   svg_heatmap       a table of numbers as coloured cells (a score per layer and head)
//   svg_attention_grid  attention maps, one small heatmap per head, a row per layer
//
// Why metrics rows are not nlohmann::json objects here: nlohmann's header is
// large and would be compiled by every file that includes this one. A row is a
// small ordered list of named values instead (MetricRow); the JSON library
// lives only in report/report.cpp. A caller that already has JSON text can pass it
// to MetricsWriter::write_json.
//
// Errors (see errors.hpp):
//   IOError      metrics.jsonl cannot be opened or written (the message names the file)
//   FormatError  (an IOError) a metrics file line is not a JSON object; the
//                message names the file and the line number
//   ValueError   bad arguments: total_steps < 1, series with x and y of
//                different lengths, asking a MetricRow for a name it lacks, a
//                heatmap that is not rectangular, ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace headlab {

// ---------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------

// Bar: one line redrawn in place with '\r' (for a terminal).
// Lines: a new plain line every few steps (for a log file or a pipe).
// Auto: Bar when the stream is std::cerr / std::clog / std::cout and that
//       file descriptor is a terminal (isatty); Lines for any other stream.
enum class ProgressMode { Auto, Bar, Lines };

struct ProgressOptions {
  ProgressMode mode = ProgressMode::Auto;
  // Lines mode: print every `every` steps and at the last step.
  // 0 = about 20 lines for the whole run: every = ceil(total_steps / 20).
  std::int64_t every = 0;
  // Bar mode: redraw at most once per this many seconds (the last step is always drawn).
  double min_redraw_seconds = 0.1;
  int bar_width = 20;  // characters between the brackets
  // Steps already done before this run started (a resumed run): the ETA is
  // computed from the steps this run has done, step - start_step.
  std::int64_t start_step = 0;
  // The clock, in seconds from any fixed origin. Empty = std::chrono::steady_clock.
  // Tests pass a fake clock so that the output is deterministic.
  std::function<double()> clock;
};

class ProgressReporter {
 public:
  // `total_steps` >= 1 (else ValueError). The clock is read here: the ETA
  // counts the time since construction.
  explicit ProgressReporter(std::int64_t total_steps, std::ostream& out = std::cerr,
                            ProgressMode mode = ProgressMode::Auto);
  ProgressReporter(std::int64_t total_steps, std::ostream& out, ProgressOptions options);
  ~ProgressReporter();  // calls finish()
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Report that `step` steps are done (1 .. total_steps). `lr` is printed as
  // 1.0e-03; a negative `tokens_per_second` means "not measured" and is left
  // out of the line. NaN losses print as "nan".
  void update(std::int64_t step, double loss, double lr, double tokens_per_second = -1);

  // Ends the output: in Bar mode draws the last state if a redraw was
  // throttled away and ends the line with '\n'; in Lines mode prints the last
  // reported step if it has not been printed. Safe to call more than once.
  void finish();

  bool bar() const { return bar_; }             // the mode chosen (Auto resolved)
  std::int64_t every() const { return every_; }  // the Lines interval in use

  // The pieces of the line, exposed for tests and for other reports.
  static std::string format_duration(double seconds);  // 42 -> "0:42", 3725 -> "1:02:05", NaN -> "?"
  static std::string format_rate(double per_second);   // 950 -> "950", 12345 -> "12.3k", 2.5e6 -> "2.5M"

 private:
  std::string status_text(std::int64_t step, double loss, double lr, double tokens_per_second,
                          double now) const;
  void draw_bar(const std::string& text);

  std::int64_t total_;
  std::ostream& out_;
  ProgressOptions options_;
  bool bar_ = false;
  std::int64_t every_ = 1;
  double start_time_ = 0;

  // The last update, kept so that finish() can show it.
  std::int64_t last_step_ = -1;
  double last_loss_ = 0, last_lr_ = 0, last_rate_ = -1, last_time_ = 0;
  bool last_shown_ = true;  // the last update is on screen / in the log
  double last_draw_time_ = 0;
  bool drawn_ = false;          // Bar mode: a bar line is open on the stream
  std::size_t last_width_ = 0;  // Bar mode: length of the line on screen (to blank leftovers)
  bool finished_ = false;
};

// ---------------------------------------------------------------------------
// Metrics (JSON Lines)
// ---------------------------------------------------------------------------

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
  double number(const std::string& name) const;            // ValueError if missing or a text
  const std::string& text(const std::string& name) const;  // ValueError if missing or a number

 private:
  MetricRow& set_value(const std::string& name, MetricValue value);
};

// The compact one-line JSON text of a row: {"step":120,"loss":1.234}
std::string to_json_line(const MetricRow& row);

// Appends rows to <run_dir>/metrics.jsonl, one JSON object per line, flushed
// after every line: a run that is killed keeps every line it wrote. The
// directory is created if missing; an existing file is appended to, never
// truncated (a resumed run continues its log).
class MetricsWriter {
 public:
  explicit MetricsWriter(const std::filesystem::path& run_dir);  // IOError if it cannot open

  void write(const MetricRow& row);  // IOError if the write fails
  // Appends JSON text that must be one JSON object (ValueError otherwise),
  // re-written compactly on one line: write_json(R"({"step": 3, "acc": [1, 2]})").
  void write_json(std::string_view object_text);

  const std::filesystem::path& path() const { return path_; }

 private:
  void append_line(const std::string& line);
  std::filesystem::path path_;
  std::ofstream out_;
};

// Reads a metrics.jsonl file: one row per non-blank line, in file order.
// JSON numbers and strings become MetricValue numbers and texts; true / false
// become 1 / 0; null becomes NaN; a nested array or object becomes a text
// holding its compact JSON. IOError if the file cannot be opened; FormatError
// naming the line number if a line is not a JSON object:
//   "read_metrics: 'runs/a/metrics.jsonl': line 3: not valid JSON at column 13: syntax error ..."
std::vector<MetricRow> read_metrics(const std::filesystem::path& path);

// ---------------------------------------------------------------------------
// SVG charts
// ---------------------------------------------------------------------------

// One line on a chart. `error`, if not empty, has one entry per point: a bar
// is drawn from y - error[i] to y + error[i] (e.g. the standard deviation over
// seeds in an ablation sweep); an error that is 0, negative or NaN draws no bar.
struct ChartSeries {
  std::string name;  // shown in the legend (series with an empty name are left out of it)
  std::vector<double> x;
  std::vector<double> y;
  std::vector<double> error;
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_y = false;  // logarithmic y axis; points with y <= 0 cannot be drawn and are skipped
  int width = 640;     // pixels
  int height = 400;
  // Series with at most this many points get a dot (<circle>) on every point;
  // longer ones are a bare line. A series with a single point always gets its dot.
  std::size_t markers_up_to = 50;
};

// An SVG document (starting "<svg", ending "</svg>\n") drawing each series as a
// <polyline> in its own colour, with axes, about 5 "nice" ticks per axis
// (1, 2 or 5 times a power of ten), grid lines, the title, the axis labels and
// a legend. All text is XML-escaped.
// Points with a NaN or infinite x or y (or y <= 0 on a log axis) are skipped,
// and an XML comment in the document says how many were skipped per series.
// A single point, or a series whose y values are all equal, gives a sensible
// axis around the value. ValueError if a series has x and y (or error) of
// different lengths.
std::string svg_line_chart(const std::vector<ChartSeries>& series, const ChartOptions& options = {});

// The usual picture of a run: one series "loss" over "step".
std::string svg_loss_curve(const std::vector<double>& steps, const std::vector<double>& losses,
                           const std::string& title = "training loss");

// ---------------------------------------------------------------------------
// SVG heatmaps
// ---------------------------------------------------------------------------
//
// Both heatmaps below use one sequential colour scale, white -> light blue ->
// dark blue (matplotlib's "Blues", starting at pure white): the low end of the
// scale is white (#ffffff), the high end dark blue (#08306b). Text drawn on a
// cell is dark on light cells and white on dark ones. A NaN cell is drawn
// hatched grey (fill="url(#hl-nan)", class="cell nan") instead of a colour.
// Every cell is a <rect class="cell" ...> holding a <title> (a tooltip in a
// browser: "row label, column label: value"), emitted row by row.

struct HeatmapOptions {
  std::string title;
  std::string x_label;                  // under the column labels
  std::string y_label;                  // left of the row labels, rotated
  std::vector<std::string> row_labels;  // one per row, or empty: 0, 1, 2, ...
  std::vector<std::string> col_labels;  // one per column, or empty: 0, 1, 2, ...
  // The ends of the colour scale. A missing end is the smallest / largest
  // finite value; values beyond an end get the colour of that end.
  std::optional<double> vmin, vmax;
  bool annotate = true;  // print each value with 2 decimals in its cell ("n/a" is always printed)
  int cell = 40;         // pixels per cell (a square); at least 4
};

// An SVG document (starting "<svg", ending "</svg>\n") drawing `values`
// (rows x columns, e.g. a score per (layer, head)) as a grid of coloured
// cells, row 0 at the top, with the row labels on the left, the column labels
// underneath (rotated -90 degrees when they are wider than a cell), the title,
// the axis labels and a vertical colour bar on the right labelled with the
// ends of the scale. All text is XML-escaped.
// The <rect> elements are the cells (rows * columns), the background, the
// frame around the grid and the colour bar.
// Data whose finite values are all equal (and no vmin / vmax) gets a scale
// of +-10% around the value (+-1 around 0): every cell the middle colour.
// ValueError (naming svg_heatmap and the sizes) if `values` is empty or not
// rectangular, if a non-empty label list does not have one label per row /
// column, if cell < 4, or if vmin / vmax is not finite or vmin >= vmax.
std::string svg_heatmap(const std::vector<std::vector<double>>& values, const HeatmapOptions& options = {});

// One attention map: weights[q][k] is how much query position q attends to
// key position k (a row of softmax output, each value in [0, 1]).
struct AttentionPanel {
  std::string title;                         // e.g. "head 3"
  std::vector<std::vector<double>> weights;  // queries x keys, at least 1 x 1
  std::vector<std::string> query_labels;     // one per query, or empty: 0, 1, 2, ...
  std::vector<std::string> key_labels;       // one per key, or empty: 0, 1, 2, ...
};

struct AttentionGridOptions {
  std::string title;
  std::vector<std::string> row_titles;  // one per row of panels (e.g. "encoder layer 0"), or empty
  int cell = 14;                        // pixels per weight (a square); at least 2
};

// An SVG document drawing panels[r][c] (rows = layers or modules, columns =
// heads) as a grid of small heatmaps on one fixed scale: 0 is white, 1 dark
// blue; values outside [0, 1] get the colour of the nearer end, NaN is
// hatched grey. Each panel has its title above it, its query labels on the
// left and its key labels underneath, rotated -90 degrees; a label longer
// than 8 characters is shown as its first 7 and "…" (the tooltip of each
// cell, "query → key: weight", keeps the full labels). A row title, if
// given, is a heading above its row; a small colour bar at the top right is
// labelled 0 and 1. Rows may hold different numbers of panels and panels may
// have different sizes (encoder self-attention next to cross-attention):
// column c is as wide as the widest panel c of any row. All text is
// XML-escaped.
// The <rect> elements are the cells (the sum of queries * keys over the
// panels), one frame per panel, the background and the colour bar.
// ValueError (naming svg_attention_grid, the panel's title, its row and
// column and the sizes) if a panel's weights are empty or not rectangular or
// its label lists do not match them; also if there is no panel at all, if
// row_titles is neither empty nor one per row, or if cell < 2.
std::string svg_attention_grid(const std::vector<std::vector<AttentionPanel>>& panels,
                               const AttentionGridOptions& options = {});

}  // namespace headlab
