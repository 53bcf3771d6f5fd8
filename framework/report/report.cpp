// report.cpp: progress lines, metrics.jsonl, SVG charts and heatmaps (see headlab/report/report.hpp).
//
// The only file that sees the JSON library for metrics; the public header
// speaks in MetricRow.
#include "headlab/report/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headlab/core/errors.hpp"

namespace headlab {

namespace {

// snprintf into a std::string (the formats here are short).
template <typename... Args> std::string format(const char* fmt, Args... args) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// A generic std::ostream has no file descriptor; the three standard streams do.
bool is_terminal(const std::ostream& out) {
  if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO) == 1;
  if (&out == &std::cout) return ::isatty(STDOUT_FILENO) == 1;
  return false;
}

}  // namespace

// ===========================================================================
// ProgressReporter
// ===========================================================================

namespace {
ProgressOptions with_mode(ProgressMode mode) {
  ProgressOptions options;
  options.mode = mode;
  return options;
}
}  // namespace

ProgressReporter::ProgressReporter(std::int64_t total_steps, std::ostream& out, ProgressMode mode)
    : ProgressReporter(total_steps, out, with_mode(mode)) {}

ProgressReporter::ProgressReporter(std::int64_t total_steps, std::ostream& out, ProgressOptions options)
    : total_(total_steps), out_(out), options_(std::move(options)) {
  if (total_ < 1) throw ValueError("ProgressReporter: total_steps must be >= 1, got " + std::to_string(total_));
  if (options_.every < 0) throw ValueError("ProgressReporter: every must be >= 0 (0 = about 20 lines)");
  if (!(options_.min_redraw_seconds >= 0)) throw ValueError("ProgressReporter: min_redraw_seconds must be >= 0");
  if (options_.bar_width < 1) throw ValueError("ProgressReporter: bar_width must be >= 1");
  if (options_.start_step < 0 || options_.start_step >= total_)
    throw ValueError("ProgressReporter: start_step must be in [0, total_steps), got " +
                     std::to_string(options_.start_step));
  if (!options_.clock) options_.clock = steady_seconds;

  bar_ = options_.mode == ProgressMode::Bar || (options_.mode == ProgressMode::Auto && is_terminal(out_));
  // About 20 lines for the run: every = ceil(total / 20).
  every_ = options_.every > 0 ? options_.every : std::max<std::int64_t>(1, (total_ + 19) / 20);
  start_time_ = options_.clock();
}

ProgressReporter::~ProgressReporter() {
  try {
    finish();
  } catch (...) {
    // A destructor must not throw; a failing stream here has nothing left to tell.
  }
}

std::string ProgressReporter::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  const long long h = s / 3600, m = (s % 3600) / 60, sec = s % 60;
  return h > 0 ? format("%lld:%02lld:%02lld", h, m, sec) : format("%lld:%02lld", m, sec);
}

std::string ProgressReporter::format_rate(double per_second) {
  if (!std::isfinite(per_second) || per_second < 0) return "?";
  if (per_second < 999.5) return format("%.0f", per_second);
  static const char* const units[] = {"k", "M", "G", "T"};
  double v = per_second / 1000;
  int unit = 0;
  while (v >= 999.95 && unit < 3) {  // 999.95k would print as "1000.0k": move up to "1.0M"
    v /= 1000;
    ++unit;
  }
  return format("%.1f%s", v, units[unit]);
}

// "[####......] step 120/500  loss 1.234  lr 1.0e-03  12.3k tok/s  ETA 0:42" (Bar),
// "step 120/500  loss 1.234  lr 1.0e-03  12.3k tok/s  elapsed 0:17  ETA 0:42" (Lines).
std::string ProgressReporter::status_text(std::int64_t step, double loss, double lr, double tokens_per_second,
                                          double now) const {
  std::string text;
  if (bar_) {
    const double fraction = std::clamp(static_cast<double>(step) / static_cast<double>(total_), 0.0, 1.0);
    const int filled = static_cast<int>(fraction * options_.bar_width);
    text = "[" + std::string(filled, '#') + std::string(options_.bar_width - filled, '.') + "] ";
  }
  text += format("step %lld/%lld  loss %.4g  lr %.1e", static_cast<long long>(step),
                 static_cast<long long>(total_), loss, lr);
  if (tokens_per_second >= 0) text += "  " + format_rate(tokens_per_second) + " tok/s";

  // ETA: the time per step so far, times the steps left.
  const double elapsed = now - start_time_;
  const std::int64_t done = step - options_.start_step;
  const std::int64_t left = std::max<std::int64_t>(0, total_ - step);
  const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(left)
                              : std::numeric_limits<double>::quiet_NaN();
  if (!bar_) text += "  elapsed " + format_duration(elapsed);
  text += "  ETA " + format_duration(left == 0 ? 0.0 : eta);
  return text;
}

void ProgressReporter::draw_bar(const std::string& text) {
  // '\r' returns to the start of the line; spaces blank whatever was longer before.
  out_ << '\r' << text;
  if (text.size() < last_width_) out_ << std::string(last_width_ - text.size(), ' ');
  last_width_ = text.size();
  out_.flush();
  drawn_ = true;
}

void ProgressReporter::update(std::int64_t step, double loss, double lr, double tokens_per_second) {
  if (step < 0) throw ValueError("ProgressReporter::update: step must be >= 0, got " + std::to_string(step));
  finished_ = false;
  const double now = options_.clock();
  const bool same_step = step == last_step_;
  last_step_ = step;
  last_loss_ = loss;
  last_lr_ = lr;
  last_rate_ = tokens_per_second;
  last_time_ = now;

  if (bar_) {
    // The first update, the last step, and otherwise at most one redraw per interval.
    const bool due = !drawn_ || step >= total_ || now - last_draw_time_ >= options_.min_redraw_seconds;
    if (due) {
      draw_bar(status_text(step, loss, lr, tokens_per_second, now));
      last_draw_time_ = now;
    }
    last_shown_ = due;
  } else {
    const bool due = step % every_ == 0 || step >= total_;
    if (due && !(same_step && last_shown_)) {
      out_ << status_text(step, loss, lr, tokens_per_second, now) << '\n';
      out_.flush();
      last_shown_ = true;
    } else if (!due) {
      last_shown_ = false;
    }
  }
}

void ProgressReporter::finish() {
  if (finished_) return;
  finished_ = true;
  if (last_step_ < 0) return;  // nothing was reported
  const std::string text = last_shown_ ? std::string() : status_text(last_step_, last_loss_, last_lr_,
                                                                      last_rate_, last_time_);
  if (bar_) {
    if (!last_shown_) draw_bar(text);
    if (drawn_) out_ << '\n';
    drawn_ = false;
    last_width_ = 0;
  } else if (!last_shown_) {
    out_ << text << '\n';  // a run stopped between two printed steps: show where it stopped
  }
  last_shown_ = true;
  out_.flush();
}

// ===========================================================================
// Metrics
// ===========================================================================

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

bool MetricRow::has(const std::string& name) const {
  return std::any_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == name; });
}

double MetricRow::number(const std::string& name) const {
  for (const auto& field : fields) {
    if (field.first != name) continue;
    if (const double* v = std::get_if<double>(&field.second)) return *v;
    throw ValueError("MetricRow: '" + name + "' is a text, not a number");
  }
  throw ValueError("MetricRow: no field '" + name + "'");
}

const std::string& MetricRow::text(const std::string& name) const {
  for (const auto& field : fields) {
    if (field.first != name) continue;
    if (const std::string* s = std::get_if<std::string>(&field.second)) return *s;
    throw ValueError("MetricRow: '" + name + "' is a number, not a text");
  }
  throw ValueError("MetricRow: no field '" + name + "'");
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

MetricsWriter::MetricsWriter(const std::filesystem::path& run_dir) : path_(run_dir / "metrics.jsonl") {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec) throw IOError("MetricsWriter: cannot create directory " + quoted(run_dir) + ": " + ec.message());
  out_.open(path_, std::ios::out | std::ios::app);  // append: never truncate an earlier run's lines
  if (!out_.is_open()) throw IOError("MetricsWriter: cannot open " + quoted(path_) + ": " + std::strerror(errno));
}

void MetricsWriter::append_line(const std::string& line) {
  out_ << line << '\n';
  out_.flush();  // each line reaches the file now: a killed run keeps it
  if (!out_) throw IOError("MetricsWriter: cannot write to " + quoted(path_));
}

void MetricsWriter::write(const MetricRow& row) { append_line(to_json_line(row)); }

void MetricsWriter::write_json(std::string_view object_text) {
  ojson j;
  try {
    j = ojson::parse(object_text.begin(), object_text.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw ValueError(std::string("MetricsWriter::write_json: not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) throw ValueError("MetricsWriter::write_json: expected a JSON object, got a " +
                                       std::string(j.type_name()));
  append_line(dump_compact(j));
}

std::vector<MetricRow> read_metrics(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw IOError("read_metrics: cannot open " + quoted(path) + ": " + std::strerror(errno));
  std::vector<MetricRow> rows;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are allowed
    const std::string where = "read_metrics: " + quoted(path) + ": line " + std::to_string(line_no) + ": ";
    ojson j;
    try {
      j = ojson::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      // nlohmann's message reads "[json.exception.parse_error.101] parse error at
      // line 1, column 13: syntax error ..."; its "line 1" is within this one line,
      // so keep only the column and the explanation.
      std::string detail = e.what();
      const std::size_t column = detail.find("column ");
      const std::size_t colon = column == std::string::npos ? column : detail.find(": ", column);
      if (colon != std::string::npos) detail = detail.substr(column, colon - column) + ": " + detail.substr(colon + 2);
      throw FormatError(where + "not valid JSON at " + detail);
    }
    if (!j.is_object()) throw FormatError(where + "expected a JSON object, got a " + std::string(j.type_name()));

    MetricRow row;
    for (const auto& [name, value] : j.items()) {
      if (value.is_number())
        row.set(name, value.get<double>());
      else if (value.is_string())
        row.set(name, value.get<std::string>());
      else if (value.is_boolean())
        row.set(name, value.get<bool>() ? 1.0 : 0.0);
      else if (value.is_null())
        row.set(name, std::numeric_limits<double>::quiet_NaN());  // written from a NaN / inf
      else
        row.set(name, dump_compact(value));  // a nested array or object, kept as its JSON text
    }
    rows.push_back(std::move(row));
  }
  if (in.bad()) throw IOError("read_metrics: error while reading " + quoted(path));
  return rows;
}

// ===========================================================================
// SVG charts
// ===========================================================================

namespace {

// Text for an XML document: the five special characters escaped, control
// characters XML forbids dropped, invalid UTF-8 bytes replaced by U+FFFD.
std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        default:
          if (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A multi-byte UTF-8 sequence: a lead byte 110xxxxx / 1110xxxx / 11110xxx
    // followed by that many 10xxxxxx bytes.
    const std::size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD, the replacement character
      ++i;
    }
  }
  return out;
}

// An XML comment may not contain "--" (nor end with '-').
std::string comment_safe(std::string s) {
  for (std::size_t p; (p = s.find("--")) != std::string::npos;) s.replace(p, 2, "- -");
  return s;
}

// Characters on screen, roughly: UTF-8 bytes that start a character.
std::size_t display_length(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string px(double v) { return format("%.2f", v); }

// "Nice" numbers (Heckbert, Graphics Gems 1990): 1, 2 or 5 times a power of ten.
// round = true picks the nearest; round = false the smallest one >= x.
double nice_number(double x, bool round) {
  const double e = std::floor(std::log10(x));
  const double f = x / std::pow(10.0, e);  // in [1, 10)
  double nf;
  if (round)
    nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  else
    nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return nf * std::pow(10.0, e);
}

// One axis: its range [lo, hi] and tick values. For a log axis lo and hi are
// log10 of the range (the ticks stay in data units).
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;
  std::vector<std::string> labels;

  // Position of a data value as a fraction of the axis: 0 at lo, 1 at hi.
  double fraction(double v) const { return ((log ? std::log10(v) : v) - lo) / (hi - lo); }
};

// Tick labels with as many digits as the tick step needs: steps of 0.05 give
// "0.05", "0.1", "0.15"; very large or small values use 1.5e+07 notation.
std::vector<std::string> linear_labels(const std::vector<double>& ticks, double step) {
  double max_abs = 0;
  for (double t : ticks) max_abs = std::max(max_abs, std::fabs(t));
  std::vector<std::string> labels;
  for (double t : ticks) {
    if (t == 0)
      labels.push_back("0");
    else if (max_abs < 1e6 && step >= 1)
      labels.push_back(format("%.0f", t));
    else if (max_abs < 1e6 && step >= 1e-4)
      labels.push_back(format("%.*f", static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), t));
    else {
      const int digits = static_cast<int>(std::floor(std::log10(max_abs)) - std::floor(std::log10(step)));
      labels.push_back(format("%.*e", std::clamp(digits, 0, 6), t));
    }
  }
  return labels;
}

// A linear axis covering [dmin, dmax] with about `target` nice ticks; the ends
// are rounded out to whole ticks. Equal ends (one point, a constant series)
// are widened by 10% of the value (or by 1 around 0): never a zero range.
Axis linear_axis(double dmin, double dmax, int target = 5) {
  if (!(dmin < dmax)) {
    const double pad = dmin == 0 ? 1 : std::fabs(dmin) * 0.1;
    dmin -= pad;
    dmax += pad;
  }
  Axis axis;
  const double range = nice_number(dmax - dmin, false);
  const double step = nice_number(range / (target - 1), true);
  axis.lo = std::floor(dmin / step) * step;
  axis.hi = std::ceil(dmax / step) * step;
  if (!std::isfinite(step) || !std::isfinite(axis.lo) || !std::isfinite(axis.hi) || !(axis.lo < axis.hi)) {
    // Ranges at the edge of what a double holds: plain ends, no rounding.
    axis.lo = dmin;
    axis.hi = dmax;
    axis.ticks = {dmin, dmax};
    axis.labels = {format("%.3g", dmin), format("%.3g", dmax)};
    return axis;
  }
  for (int k = 0; k < 4 * target; ++k) {
    double v = axis.lo + k * step;
    if (v > axis.hi + step * 1e-9) break;
    if (std::fabs(v) < step * 1e-9) v = 0;  // 0.30000000000000004 - 0.3 is 0
    axis.ticks.push_back(v);
  }
  axis.labels = linear_labels(axis.ticks, step);
  return axis;
}

// The 1-2-5 sequence (..., 0.5, 1, 2, 5, 10, 20, ...): the largest value <= v
// and the smallest value >= v.
double floor_125(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  const double m = v / p * (1 + 1e-12);
  return (m >= 5 ? 5 : m >= 2 ? 2 : 1) * p;
}
double ceil_125(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  const double m = v / p * (1 - 1e-12);
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

// A log axis from the largest 1-2-5 value <= dmin to the smallest >= dmax
// (both > 0). Ticks at 1, 2, 5 times powers of ten; if that is more than 7,
// only powers of ten; if still more than 7, every few decades.
Axis log_axis(double dmin, double dmax) {
  double lo = floor_125(dmin), hi = ceil_125(dmax);
  if (!(lo < hi)) {  // a constant value sitting on a 1-2-5 step: one step either side
    lo = floor_125(lo * 0.999);
    hi = ceil_125(hi * 1.001);
  }
  Axis axis;
  axis.log = true;
  axis.lo = std::log10(lo);
  axis.hi = std::log10(hi);
  auto in_range = [&](double v) { return v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9); };
  const int e0 = static_cast<int>(std::floor(axis.lo)), e1 = static_cast<int>(std::ceil(axis.hi));
  for (int e = e0; e <= e1; ++e)
    for (double m : {1.0, 2.0, 5.0})
      if (in_range(m * std::pow(10.0, e))) axis.ticks.push_back(m * std::pow(10.0, e));
  if (axis.ticks.size() > 7) {
    axis.ticks.clear();
    for (int e = e0; e <= e1; ++e)
      if (in_range(std::pow(10.0, e))) axis.ticks.push_back(std::pow(10.0, e));
    if (axis.ticks.size() > 7) {
      const std::size_t stride = (axis.ticks.size() + 5) / 6;
      std::vector<double> kept;
      for (std::size_t i = 0; i < axis.ticks.size(); i += stride) kept.push_back(axis.ticks[i]);
      axis.ticks = kept;
    }
  }
  for (double t : axis.ticks) axis.labels.push_back(format("%g", t));
  return axis;
}

// Ten colours that are easy to tell apart (matplotlib's "tab10").
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

std::string svg_line_chart(const std::vector<ChartSeries>& series, const ChartOptions& options) {
  if (options.width < 100 || options.height < 100)
    throw ValueError("svg_line_chart: width and height must be >= 100 pixels, got " +
                     std::to_string(options.width) + " x " + std::to_string(options.height));
  for (const auto& s : series) {
    if (s.x.size() != s.y.size())
      throw ValueError("svg_line_chart: series '" + s.name + "' has " + std::to_string(s.x.size()) +
                       " x values but " + std::to_string(s.y.size()) + " y values");
    if (!s.error.empty() && s.error.size() != s.y.size())
      throw ValueError("svg_line_chart: series '" + s.name + "' has " + std::to_string(s.error.size()) +
                       " error values for " + std::to_string(s.y.size()) + " points");
  }

  // 1. Which points can be drawn, and the range they (and their error bars) span.
  const double inf = std::numeric_limits<double>::infinity();
  auto drawable = [&](const ChartSeries& s, std::size_t i) {
    return std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && (!options.log_y || s.y[i] > 0);
  };
  auto error_of = [](const ChartSeries& s, std::size_t i) {  // 0 when there is no usable bar
    return !s.error.empty() && std::isfinite(s.error[i]) && s.error[i] > 0 ? s.error[i] : 0.0;
  };
  double xmin = inf, xmax = -inf, ymin = inf, ymax = -inf;
  std::vector<std::size_t> skipped(series.size(), 0);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const ChartSeries& s = series[k];
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s, i)) {
        ++skipped[k];
        continue;
      }
      const double e = error_of(s, i);
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      ymax = std::max(ymax, s.y[i] + e);
      // On a log axis a bar reaching 0 or below is cut at the bottom of the axis.
      ymin = std::min(ymin, options.log_y && s.y[i] - e <= 0 ? s.y[i] : s.y[i] - e);
    }
  }
  const bool no_data = !(xmin <= xmax);
  if (no_data) {
    xmin = 0, xmax = 1;
    ymin = options.log_y ? 1 : 0, ymax = options.log_y ? 10 : 1;
  }
  const Axis xaxis = linear_axis(xmin, xmax);
  const Axis yaxis = options.log_y ? log_axis(ymin, ymax) : linear_axis(ymin, ymax);

  // 2. Layout: the plot area is [left, right] x [top, bottom] in pixels (y grows down).
  const double W = options.width, H = options.height;
  const double left = 70, right = W - 20;
  const double top = options.title.empty() ? 20 : 40;
  const double bottom = H - (options.x_label.empty() ? 35 : 55);
  auto X = [&](double v) { return left + xaxis.fraction(v) * (right - left); };
  auto Y = [&](double v) { return bottom - yaxis.fraction(v) * (bottom - top); };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << options.width << "\" height=\"" << options.height
      << "\" viewBox=\"0 0 " << options.width << ' ' << options.height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    if (skipped[k] == 0) continue;
    svg << "<!-- " << comment_safe("series " + std::to_string(k) + " \"" + xml_escape(series[k].name) + "\": " +
                                   std::to_string(skipped[k]) + " of " + std::to_string(series[k].x.size()) +
                                   " points skipped (NaN or infinite" +
                                   (options.log_y ? ", or y <= 0 on the log axis)" : ")"))
        << " -->\n";
  }
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    svg << "<text x=\"" << px(W / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
        << xml_escape(options.title) << "</text>\n";

  // 3. Grid lines, ticks and their labels, the frame, the axis labels.
  svg << "<g stroke=\"#e5e5e5\">\n";
  for (double t : xaxis.ticks)
    svg << "<line x1=\"" << px(X(t)) << "\" y1=\"" << px(top) << "\" x2=\"" << px(X(t)) << "\" y2=\"" << px(bottom)
        << "\"/>\n";
  for (double t : yaxis.ticks)
    svg << "<line x1=\"" << px(left) << "\" y1=\"" << px(Y(t)) << "\" x2=\"" << px(right) << "\" y2=\"" << px(Y(t))
        << "\"/>\n";
  svg << "</g>\n<g fill=\"#333\">\n";
  for (std::size_t i = 0; i < xaxis.ticks.size(); ++i)
    svg << "<text x=\"" << px(X(xaxis.ticks[i])) << "\" y=\"" << px(bottom + 16) << "\" text-anchor=\"middle\">"
        << xml_escape(xaxis.labels[i]) << "</text>\n";
  for (std::size_t i = 0; i < yaxis.ticks.size(); ++i)
    svg << "<text x=\"" << px(left - 6) << "\" y=\"" << px(Y(yaxis.ticks[i])) << "\" dy=\"0.35em\" text-anchor=\"end\">"
        << xml_escape(yaxis.labels[i]) << "</text>\n";
  svg << "</g>\n";
  svg << "<rect x=\"" << px(left) << "\" y=\"" << px(top) << "\" width=\"" << px(right - left) << "\" height=\""
      << px(bottom - top) << "\" fill=\"none\" stroke=\"#333\"/>\n";
  if (!options.x_label.empty())
    svg << "<text x=\"" << px((left + right) / 2) << "\" y=\"" << px(H - 12) << "\" text-anchor=\"middle\">"
        << xml_escape(options.x_label) << "</text>\n";
  if (!options.y_label.empty())
    svg << "<text transform=\"translate(16 " << px((top + bottom) / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
        << xml_escape(options.y_label) << "</text>\n";

  // 4. The series: error bars (one <path> per series), the line, the dots.
  for (std::size_t k = 0; k < series.size(); ++k) {
    const ChartSeries& s = series[k];
    const std::string colour = kPalette[k % 10];
    const std::string dash = k >= 10 ? " stroke-dasharray=\"6 3\"" : "";  // after ten colours, dashed lines
    std::vector<std::size_t> points;
    for (std::size_t i = 0; i < s.x.size(); ++i)
      if (drawable(s, i)) points.push_back(i);
    svg << "<g>\n";
    std::string bars;
    for (std::size_t i : points) {
      const double e = error_of(s, i);
      if (e == 0) continue;
      const double lo = options.log_y && s.y[i] - e <= 0 ? bottom : Y(s.y[i] - e);
      const double hi = Y(s.y[i] + e);
      const double x = X(s.x[i]);
      // A vertical stroke with a short cap at each end.
      bars += "M" + px(x) + " " + px(lo) + "V" + px(hi) + "M" + px(x - 3) + " " + px(hi) + "H" + px(x + 3) + "M" +
              px(x - 3) + " " + px(lo) + "H" + px(x + 3);
    }
    if (!bars.empty())
      svg << "<path class=\"error-bars\" d=\"" << bars << "\" stroke=\"" << colour
          << "\" stroke-opacity=\"0.6\" fill=\"none\"/>\n";
    if (points.size() >= 2) {
      svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.8\"" << dash << " points=\"";
      for (std::size_t n = 0; n < points.size(); ++n)
        svg << (n ? " " : "") << px(X(s.x[points[n]])) << ',' << px(Y(s.y[points[n]]));
      svg << "\"/>\n";
    }
    if (points.size() == 1 || (points.size() <= options.markers_up_to))
      for (std::size_t i : points)
        svg << "<circle cx=\"" << px(X(s.x[i])) << "\" cy=\"" << px(Y(s.y[i])) << "\" r=\"2.5\" fill=\"" << colour
            << "\"/>\n";
    svg << "</g>\n";
  }

  // 5. The legend, in the top-right corner of the plot on a white box.
  std::vector<std::size_t> named;
  std::size_t longest = 0;
  for (std::size_t k = 0; k < series.size(); ++k) {
    if (series[k].name.empty()) continue;
    named.push_back(k);
    longest = std::max(longest, display_length(series[k].name));
  }
  if (!named.empty()) {
    const double box_w = 44 + 7.0 * static_cast<double>(longest), box_h = 8 + 18.0 * static_cast<double>(named.size());
    const double bx = right - box_w - 8, by = top + 8;
    svg << "<g class=\"legend\">\n<rect x=\"" << px(bx) << "\" y=\"" << px(by) << "\" width=\"" << px(box_w)
        << "\" height=\"" << px(box_h) << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n";
    for (std::size_t n = 0; n < named.size(); ++n) {
      const std::size_t k = named[n];
      const double cy = by + 13 + 18.0 * static_cast<double>(n);
      svg << "<line x1=\"" << px(bx + 8) << "\" y1=\"" << px(cy) << "\" x2=\"" << px(bx + 30) << "\" y2=\"" << px(cy)
          << "\" stroke=\"" << kPalette[k % 10] << "\" stroke-width=\"2\"" << (k >= 10 ? " stroke-dasharray=\"6 3\"" : "")
          << "/>\n<text x=\"" << px(bx + 36) << "\" y=\"" << px(cy) << "\" dy=\"0.35em\">" << xml_escape(series[k].name)
          << "</text>\n";
    }
    svg << "</g>\n";
  }
  if (no_data)
    svg << "<text x=\"" << px((left + right) / 2) << "\" y=\"" << px((top + bottom) / 2)
        << "\" text-anchor=\"middle\" fill=\"#999\">no data</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

std::string svg_loss_curve(const std::vector<double>& steps, const std::vector<double>& losses,
                           const std::string& title) {
  ChartOptions options;
  options.title = title;
  options.x_label = "step";
  options.y_label = "loss";
  return svg_line_chart({ChartSeries{"loss", steps, losses, {}}}, options);
}

// ===========================================================================
// SVG heatmaps
// ===========================================================================

namespace {

// The colour scale: matplotlib's "Blues" with its first colour made pure
// white, interpolated linearly between these nine anchors (the colour bars
// use the same anchors as gradient stops, and SVG interpolates them the same way).
const double kBlues[9][3] = {{255, 255, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                             {66, 146, 198},   {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};

struct Rgb {
  double r, g, b;
};

// t in [0, 1] (clamped; NaN is not expected here).
Rgb blues(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const double pos = t * 8;
  const int i = std::min(7, static_cast<int>(std::floor(pos)));
  const double f = pos - i;
  const double* a = kBlues[i];
  const double* b = kBlues[i + 1];
  return {a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f};
}

std::string hex(const Rgb& c) {
  auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0))); };
  return format("#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
}

// Text on a cell of this colour: white on dark cells, near-black on light ones.
const char* text_colour_on(const Rgb& c) {
  return (0.299 * c.r + 0.587 * c.g + 0.114 * c.b) / 255 < 0.5 ? "#ffffff" : "#222222";
}

// The <defs> shared by both heatmaps: the hatching of NaN cells (grey with
// darker diagonal stripes, no <rect> inside so that counting rects counts
// cells) and the colour scale as a gradient from low to high along `x1 y1 x2 y2`.
std::string heatmap_defs(const char* gradient_id, const char* direction) {
  std::string defs =
      "<defs>\n<pattern id=\"hl-nan\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\">\n<path d=\"M0 0H6V6H0Z\" fill=\"#e0e0e0\"/>\n"
      "<path d=\"M0 0V6\" stroke=\"#a0a0a0\" stroke-width=\"2\"/>\n</pattern>\n";
  defs += std::string("<linearGradient id=\"") + gradient_id + "\" " + direction + ">\n";
  for (int i = 0; i < 9; ++i)
    defs += "<stop offset=\"" + format("%.3f", i / 8.0) + "\" stop-color=\"" +
            hex({kBlues[i][0], kBlues[i][1], kBlues[i][2]}) + "\"/>\n";
  defs += "</linearGradient>\n</defs>\n";
  return defs;
}

// A label cut to at most `max_chars` characters: the first max_chars - 1 and "…".
std::string shorten(const std::string& s, std::size_t max_chars) {
  if (display_length(s) <= max_chars) return s;
  std::string out;
  std::size_t chars = 0;
  for (char c : s) {
    const bool starts_char = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_char && ++chars > max_chars - 1) break;
    out += c;
  }
  return out + "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS
}

// The labels to draw: the given ones, or 0, 1, 2, ... when none were given.
std::vector<std::string> labels_or_indices(const std::vector<std::string>& given, std::size_t n) {
  if (!given.empty()) return given;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back(std::to_string(i));
  return labels;
}

std::size_t longest(const std::vector<std::string>& labels) {
  std::size_t n = 0;
  for (const auto& s : labels) n = std::max(n, display_length(s));
  return n;
}

// A value in a cell: two decimals, never "-0.00"; NaN is "n/a".
std::string cell_text(double v) {
  if (std::isnan(v)) return "n/a";
  std::string s = format("%.2f", v);
  if (s == "-0.00") s = "0.00";
  return s;
}

// A value in a tooltip or on a colour bar: 4 significant digits.
std::string value_text(double v) { return std::isnan(v) ? "NaN" : format("%.4g", v); }

}  // namespace

std::string svg_heatmap(const std::vector<std::vector<double>>& values, const HeatmapOptions& options) {
  // 1. Checks.
  if (values.empty()) throw ValueError("svg_heatmap: values must be at least 1 x 1, got 0 rows");
  const std::size_t rows = values.size(), cols = values[0].size();
  if (cols == 0)
    throw ValueError("svg_heatmap: values must be at least 1 x 1, got " + std::to_string(rows) +
                     " rows of 0 values");
  for (std::size_t r = 1; r < rows; ++r)
    if (values[r].size() != cols)
      throw ValueError("svg_heatmap: values must be rectangular: row " + std::to_string(r) + " has " +
                       std::to_string(values[r].size()) + " values but row 0 has " + std::to_string(cols));
  if (!options.row_labels.empty() && options.row_labels.size() != rows)
    throw ValueError("svg_heatmap: " + std::to_string(options.row_labels.size()) + " row_labels for " +
                     std::to_string(rows) + " rows of values");
  if (!options.col_labels.empty() && options.col_labels.size() != cols)
    throw ValueError("svg_heatmap: " + std::to_string(options.col_labels.size()) + " col_labels for " +
                     std::to_string(cols) + " columns of values");
  if (options.cell < 4) throw ValueError("svg_heatmap: cell must be >= 4 pixels, got " + std::to_string(options.cell));
  if ((options.vmin && !std::isfinite(*options.vmin)) || (options.vmax && !std::isfinite(*options.vmax)))
    throw ValueError("svg_heatmap: vmin and vmax must be finite");
  if (options.vmin && options.vmax && !(*options.vmin < *options.vmax))
    throw ValueError("svg_heatmap: vmin (" + value_text(*options.vmin) + ") must be less than vmax (" +
                     value_text(*options.vmax) + ")");

  // 2. The colour scale [lo, hi]: the given ends, else the range of the finite values.
  const double inf = std::numeric_limits<double>::infinity();
  double dmin = inf, dmax = -inf;
  std::size_t nan_cells = 0;
  for (const auto& row : values)
    for (double v : row) {
      if (std::isnan(v)) ++nan_cells;
      if (!std::isfinite(v)) continue;
      dmin = std::min(dmin, v);
      dmax = std::max(dmax, v);
    }
  if (!(dmin <= dmax)) dmin = 0, dmax = 1;  // no finite value at all
  double lo = options.vmin ? *options.vmin : dmin;
  double hi = options.vmax ? *options.vmax : dmax;
  if (!(lo < hi)) {
    // Constant data, or one given end beyond all the data: widen the end(s) not given.
    auto pad = [](double v) { return v == 0 ? 1.0 : std::fabs(v) * 0.1; };
    if (options.vmin && !options.vmax)
      hi = lo + pad(lo);
    else if (options.vmax && !options.vmin)
      lo = hi - pad(hi);
    else {
      const double p = pad(lo);
      lo -= p;
      hi += p;
    }
    if (!(lo < hi)) lo -= 1, hi += 1;  // a pad too small to matter (denormals)
  }
  auto colour_of = [&](double v) { return blues((v - lo) / (hi - lo)); };  // +-inf clamp to the ends

  // 3. Layout (pixels; y grows down). Text widths are estimated at 7 px a
  // character for the 12 px labels: no font is measured.
  const std::vector<std::string> row_text = labels_or_indices(options.row_labels, rows);
  const std::vector<std::string> col_text = labels_or_indices(options.col_labels, cols);
  const double C = options.cell, char_w = 7;
  const double grid_w = C * static_cast<double>(cols), grid_h = C * static_cast<double>(rows);
  const double col_len = static_cast<double>(longest(col_text));
  const bool rotate_cols = col_len * char_w + 4 > C;
  const double col_label_h = rotate_cols ? col_len * char_w + 10 : 20;
  const double left = 10 + (options.y_label.empty() ? 0 : 22) + static_cast<double>(longest(row_text)) * char_w + 8;
  const double top = options.title.empty() ? 14 : 40;
  const double grid_bottom = top + grid_h, grid_right = left + grid_w;
  const double bar_x = grid_right + 18, bar_w = 14, bar_h = std::max(grid_h, 100.0);
  const std::string hi_text = value_text(hi), lo_text = value_text(lo);
  const double bar_label_w = static_cast<double>(std::max(display_length(hi_text), display_length(lo_text))) * char_w;
  const double title_w = static_cast<double>(display_length(options.title)) * 8.5 + 20;
  const double W = std::ceil(std::max(bar_x + bar_w + 6 + bar_label_w + 10, title_w));
  const double labels_bottom = grid_bottom + col_label_h + (options.x_label.empty() ? 0 : 22);
  const double H = std::ceil(std::max(labels_bottom, top + bar_h) + 12);

  std::ostringstream svg;
  const long long w_px = static_cast<long long>(W), h_px = static_cast<long long>(H);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w_px << "\" height=\"" << h_px
      << "\" viewBox=\"0 0 " << w_px << ' ' << h_px << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<!-- svg_heatmap: " << rows << " x " << cols << " values, colour scale " << lo_text << " (white) to "
      << hi_text << " (dark blue), " << nan_cells << " NaN cells -->\n";
  svg << heatmap_defs("hl-scale-v", "x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\"");
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    svg << "<text x=\"" << px(W / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
        << xml_escape(options.title) << "</text>\n";

  // 4. The cells, with a white line between them and a tooltip each, then a frame.
  svg << "<g class=\"grid\" stroke=\"white\" stroke-width=\"1\">\n";
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = values[r][c];
      const bool nan = std::isnan(v);
      svg << "<rect class=\"" << (nan ? "cell nan" : "cell") << "\" x=\"" << px(left + C * static_cast<double>(c))
          << "\" y=\"" << px(top + C * static_cast<double>(r)) << "\" width=\"" << options.cell
          << "\" height=\"" << options.cell
          << "\" fill=\"" << (nan ? std::string("url(#hl-nan)") : hex(colour_of(v))) << "\"><title>"
          << xml_escape(row_text[r] + ", " + col_text[c] + ": " + value_text(v)) << "</title></rect>\n";
    }
  svg << "</g>\n<rect x=\"" << px(left) << "\" y=\"" << px(top) << "\" width=\"" << px(grid_w) << "\" height=\""
      << px(grid_h) << "\" fill=\"none\" stroke=\"#bbb\"/>\n";

  // 5. The values in the cells, in a font small enough for the longest one.
  std::size_t text_len = 0;
  for (const auto& row : values)
    for (double v : row)
      if (options.annotate || std::isnan(v)) text_len = std::max(text_len, cell_text(v).size());
  if (text_len > 0) {
    const double font = std::min({12.0, C * 0.45, C * 0.9 / (0.6 * static_cast<double>(text_len))});
    svg << "<g class=\"values\" text-anchor=\"middle\" font-size=\"" << px(font) << "\">\n";
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const double v = values[r][c];
        if (!options.annotate && !std::isnan(v)) continue;
        svg << "<text x=\"" << px(left + C * (static_cast<double>(c) + 0.5)) << "\" y=\""
            << px(top + C * (static_cast<double>(r) + 0.5)) << "\" dy=\"0.35em\" fill=\""
            << (std::isnan(v) ? "#444444" : text_colour_on(colour_of(v))) << "\">" << cell_text(v) << "</text>\n";
      }
    svg << "</g>\n";
  }

  // 6. Row labels on the left, column labels underneath, the axis labels.
  svg << "<g fill=\"#333\">\n";
  for (std::size_t r = 0; r < rows; ++r)
    svg << "<text x=\"" << px(left - 6) << "\" y=\"" << px(top + C * (static_cast<double>(r) + 0.5))
        << "\" dy=\"0.35em\" text-anchor=\"end\">" << xml_escape(row_text[r]) << "</text>\n";
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = left + C * (static_cast<double>(c) + 0.5);
    if (rotate_cols)
      svg << "<text transform=\"translate(" << px(x) << ' ' << px(grid_bottom + 6)
          << ") rotate(-90)\" dy=\"0.35em\" text-anchor=\"end\">" << xml_escape(col_text[c]) << "</text>\n";
    else
      svg << "<text x=\"" << px(x) << "\" y=\"" << px(grid_bottom + 16) << "\" text-anchor=\"middle\">"
          << xml_escape(col_text[c]) << "</text>\n";
  }
  svg << "</g>\n";
  if (!options.x_label.empty())
    svg << "<text x=\"" << px(left + grid_w / 2) << "\" y=\"" << px(grid_bottom + col_label_h + 16)
        << "\" text-anchor=\"middle\">" << xml_escape(options.x_label) << "</text>\n";
  if (!options.y_label.empty())
    svg << "<text transform=\"translate(16 " << px(top + grid_h / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
        << xml_escape(options.y_label) << "</text>\n";

  // 7. The colour bar: low at the bottom, high at the top.
  svg << "<g class=\"colour-bar\">\n<rect x=\"" << px(bar_x) << "\" y=\"" << px(top) << "\" width=\"" << px(bar_w)
      << "\" height=\"" << px(bar_h) << "\" fill=\"url(#hl-scale-v)\" stroke=\"#999\"/>\n";
  svg << "<text x=\"" << px(bar_x + bar_w + 5) << "\" y=\"" << px(top + 6) << "\" dy=\"0.35em\" fill=\"#333\">"
      << hi_text << "</text>\n";
  svg << "<text x=\"" << px(bar_x + bar_w + 5) << "\" y=\"" << px(top + bar_h - 6) << "\" dy=\"0.35em\" fill=\"#333\">"
      << lo_text << "</text>\n</g>\n";
  svg << "</svg>\n";
  return svg.str();
}

namespace {

// The size of one attention panel and where its grid sits inside its box.
struct PanelLayout {
  std::vector<std::string> queries, keys;  // the labels as drawn (shortened)
  std::vector<std::string> query_tips, key_tips;  // the full labels, for the tooltips
  double pad_left = 0;   // room for a title wider than the grid and its query labels
  double query_w = 0;    // the query labels, left of the grid
  double grid_w = 0, grid_h = 0;
  double key_h = 0;      // the rotated key labels, under the grid
  double width = 0, height = 0;
};

}  // namespace

std::string svg_attention_grid(const std::vector<std::vector<AttentionPanel>>& panels,
                               const AttentionGridOptions& options) {
  // 1. Checks, panel by panel.
  if (options.cell < 2)
    throw ValueError("svg_attention_grid: cell must be >= 2 pixels, got " + std::to_string(options.cell));
  if (!options.row_titles.empty() && options.row_titles.size() != panels.size())
    throw ValueError("svg_attention_grid: " + std::to_string(options.row_titles.size()) + " row_titles for " +
                     std::to_string(panels.size()) + " rows of panels");
  std::size_t n_panels = 0, n_cells = 0;
  for (std::size_t r = 0; r < panels.size(); ++r)
    for (std::size_t c = 0; c < panels[r].size(); ++c) {
      const AttentionPanel& p = panels[r][c];
      const std::string where = "svg_attention_grid: panel '" + p.title + "' (row " + std::to_string(r) +
                                ", column " + std::to_string(c) + "): ";
      const std::size_t q = p.weights.size(), k = q ? p.weights[0].size() : 0;
      if (q == 0) throw ValueError(where + "weights must be at least 1 x 1, got 0 queries");
      if (k == 0)
        throw ValueError(where + "weights must be at least 1 x 1, got " + std::to_string(q) + " queries of 0 keys");
      for (std::size_t i = 1; i < q; ++i)
        if (p.weights[i].size() != k)
          throw ValueError(where + "weights must be rectangular: query " + std::to_string(i) + " has " +
                           std::to_string(p.weights[i].size()) + " weights but query 0 has " + std::to_string(k));
      if (!p.query_labels.empty() && p.query_labels.size() != q)
        throw ValueError(where + std::to_string(p.query_labels.size()) + " query_labels for " + std::to_string(q) +
                         " queries (rows of weights)");
      if (!p.key_labels.empty() && p.key_labels.size() != k)
        throw ValueError(where + std::to_string(p.key_labels.size()) + " key_labels for " + std::to_string(k) +
                         " keys (columns of weights)");
      ++n_panels;
      n_cells += q * k;
    }
  if (n_panels == 0)
    throw ValueError("svg_attention_grid: no panels to draw (" + std::to_string(panels.size()) + " rows, all empty)");

  // 2. Layout. Labels are drawn in a font of at most 10 px (smaller for cells
  // under 12 px, so that neighbouring labels do not overlap), about 0.6 of the
  // font size wide a character; panel titles in 11 px, 6.5 px a character.
  const double C = options.cell;
  const double font = std::min(10.0, C * 0.85), char_w = 0.6 * font;
  const double title_h = 18, gap_x = 24, gap_y = 14, margin = 12;
  std::vector<std::vector<PanelLayout>> layout(panels.size());
  std::vector<double> col_w, row_h(panels.size(), 0), heading_h(panels.size(), 0);
  for (std::size_t r = 0; r < panels.size(); ++r) {
    if (!options.row_titles.empty() && !options.row_titles[r].empty()) heading_h[r] = 22;
    for (std::size_t c = 0; c < panels[r].size(); ++c) {
      const AttentionPanel& p = panels[r][c];
      PanelLayout L;
      L.query_tips = labels_or_indices(p.query_labels, p.weights.size());
      L.key_tips = labels_or_indices(p.key_labels, p.weights[0].size());
      for (const auto& s : L.query_tips) L.queries.push_back(shorten(s, 8));
      for (const auto& s : L.key_tips) L.keys.push_back(shorten(s, 8));
      L.query_w = std::round(static_cast<double>(longest(L.queries)) * char_w + 6);
      L.key_h = std::round(static_cast<double>(longest(L.keys)) * char_w + 8);
      L.grid_w = C * static_cast<double>(p.weights[0].size());
      L.grid_h = C * static_cast<double>(p.weights.size());
      // The title is centred over the grid; if it is wider, the box grows on both sides.
      const double overhang = std::max(0.0, static_cast<double>(display_length(p.title)) * 6.5 / 2 - L.grid_w / 2);
      L.pad_left = std::round(std::max(0.0, overhang - L.query_w));
      L.width = L.pad_left + L.query_w + L.grid_w + std::round(overhang);
      L.height = title_h + L.grid_h + L.key_h;
      if (col_w.size() <= c) col_w.resize(c + 1, 0);
      col_w[c] = std::max(col_w[c], L.width);
      row_h[r] = std::max(row_h[r], L.height);
      layout[r].push_back(std::move(L));
    }
  }
  const double header_h = options.title.empty() ? 34 : 44;
  double content_w = 0;
  for (double w : col_w) content_w += w + gap_x;
  content_w -= gap_x;
  double W = margin + content_w + margin;
  W = std::max(W, static_cast<double>(display_length(options.title)) * 8.5 + 150);  // the title and the colour bar
  for (const auto& t : options.row_titles) W = std::max(W, static_cast<double>(display_length(t)) * 8 + 2 * margin);
  W = std::ceil(W);
  double H = header_h;
  for (std::size_t r = 0; r < panels.size(); ++r) H += heading_h[r] + row_h[r] + gap_y;
  H = std::ceil(H + margin - gap_y);

  std::ostringstream svg;
  const long long w_px = static_cast<long long>(W), h_px = static_cast<long long>(H);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w_px << "\" height=\"" << h_px
      << "\" viewBox=\"0 0 " << w_px << ' ' << h_px << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<!-- svg_attention_grid: " << panels.size() << " rows, " << n_panels << " panels, " << n_cells
      << " weights on a fixed scale 0 (white) to 1 (dark blue) -->\n";
  svg << heatmap_defs("hl-scale-h", "x1=\"0\" y1=\"0\" x2=\"1\" y2=\"0\"");
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    svg << "<text x=\"" << px(margin) << "\" y=\"26\" font-size=\"15\">" << xml_escape(options.title) << "</text>\n";
  // The colour bar, top right: "0 [white -> dark blue] 1".
  {
    const double bar_w = 80, bar_h = 10, bx = W - margin - 10 - bar_w, by = header_h / 2 - bar_h / 2 - 2;
    svg << "<g class=\"colour-bar\" font-size=\"10\" fill=\"#333\">\n<rect x=\"" << px(bx) << "\" y=\"" << px(by)
        << "\" width=\"" << px(bar_w) << "\" height=\"" << px(bar_h)
        << "\" fill=\"url(#hl-scale-h)\" stroke=\"#999\"/>\n<text x=\"" << px(bx - 4) << "\" y=\""
        << px(by + bar_h / 2) << "\" dy=\"0.35em\" text-anchor=\"end\">0</text>\n<text x=\"" << px(bx + bar_w + 4)
        << "\" y=\"" << px(by + bar_h / 2) << "\" dy=\"0.35em\">1</text>\n</g>\n";
  }

  // 3. The panels, row by row.
  const std::string arrow = " \xE2\x86\x92 ";  // U+2192 RIGHTWARDS ARROW
  double y = header_h;
  for (std::size_t r = 0; r < panels.size(); ++r) {
    if (heading_h[r] > 0)
      svg << "<text x=\"" << px(margin) << "\" y=\"" << px(y + 15) << "\" font-size=\"13\" font-weight=\"bold\">"
          << xml_escape(options.row_titles[r]) << "</text>\n";
    y += heading_h[r];
    double x = margin;
    for (std::size_t c = 0; c < panels[r].size(); ++c) {
      const AttentionPanel& p = panels[r][c];
      const PanelLayout& L = layout[r][c];
      const double gx = x + L.pad_left + L.query_w, gy = y + title_h;
      svg << "<g class=\"panel\">\n";
      if (!p.title.empty())
        svg << "<text x=\"" << px(gx + L.grid_w / 2) << "\" y=\"" << px(gy - 5)
            << "\" text-anchor=\"middle\" font-size=\"11\">" << xml_escape(p.title) << "</text>\n";
      svg << "<g shape-rendering=\"crispEdges\">\n";
      for (std::size_t i = 0; i < p.weights.size(); ++i)
        for (std::size_t j = 0; j < p.weights[i].size(); ++j) {
          const double v = p.weights[i][j];
          const bool nan = std::isnan(v);
          svg << "<rect class=\"" << (nan ? "cell nan" : "cell") << "\" x=\"" << px(gx + C * static_cast<double>(j))
              << "\" y=\"" << px(gy + C * static_cast<double>(i)) << "\" width=\"" << options.cell
              << "\" height=\"" << options.cell
              << "\" fill=\"" << (nan ? std::string("url(#hl-nan)") : hex(blues(v))) << "\"><title>"
              << xml_escape(L.query_tips[i] + arrow + L.key_tips[j] + ": " + value_text(v)) << "</title></rect>\n";
        }
      svg << "</g>\n<rect x=\"" << px(gx) << "\" y=\"" << px(gy) << "\" width=\"" << px(L.grid_w) << "\" height=\""
          << px(L.grid_h) << "\" fill=\"none\" stroke=\"#999\"/>\n";
      svg << "<g font-size=\"" << px(font) << "\" fill=\"#333\">\n";
      for (std::size_t i = 0; i < L.queries.size(); ++i)
        svg << "<text x=\"" << px(gx - 3) << "\" y=\"" << px(gy + C * (static_cast<double>(i) + 0.5))
            << "\" dy=\"0.35em\" text-anchor=\"end\">" << xml_escape(L.queries[i]) << "</text>\n";
      for (std::size_t j = 0; j < L.keys.size(); ++j)
        svg << "<text transform=\"translate(" << px(gx + C * (static_cast<double>(j) + 0.5)) << ' '
            << px(gy + L.grid_h + 4) << ") rotate(-90)\" dy=\"0.35em\" text-anchor=\"end\">" << xml_escape(L.keys[j])
            << "</text>\n";
      svg << "</g>\n</g>\n";
      x += col_w[c] + gap_x;
    }
    y += row_h[r] + gap_y;
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace headlab
