// sweep_summary.cpp: run states and the statistics of an ablation sweep over seeds: mean and
// standard deviation per grid cell, as CSV, Markdown and an SVG chart (headlab/lab/sweep.hpp).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "headlab/core/json_depth.hpp"
#include "headlab/lab/sweep.hpp"
#include "headlab/report/charts.hpp"
#include "headlab/report/text_table.hpp"
#include "sweep_text.hpp"

namespace headlab {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace sweep_text;

namespace {
// summary.json parsed, or a null json when it is missing or not a JSON object.
json read_summary(const fs::path& run_dir) {
  // Only a regular file of a sane size is read: a FIFO would block the open for ever, and a summary
  // headlab writes is a few hundred bytes.
  const fs::path path = run_dir / "summary.json";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > (1u << 20) || ec) return json();
  std::ifstream in(path);
  if (!in) return json();
  try {
    json doc = json::parse(in, json_depth_limit<json>("summary.json: "), /*allow_exceptions=*/false);
    return doc.is_object() ? doc : json();
  } catch (const FormatError&) {  // nested too deep: not a summary headlab wrote
    return json();
  }
}

bool finished_summary(const json& summary) {
  if (!summary.is_object()) return false;
  const auto it = summary.find("interrupted");
  if (it == summary.end() || it->is_null()) return true;
  if (it->is_boolean()) return !it->get<bool>();
  if (it->is_number()) return it->get<double>() == 0;
  return false;
}
}  // namespace

std::map<std::string, double> run_summary_numbers(const fs::path& run_dir) {
  std::map<std::string, double> numbers;
  const json summary = read_summary(run_dir);  // kept alive: items() only refers to it
  for (const auto& [name, value] : summary.items())
    if (value.is_number() || value.is_null()) numbers[name] = value.is_null() ? kNaN : value.get<double>();
  return numbers;
}

std::string summary_fault(const fs::path& run_dir) {
  const fs::path path = run_dir / "summary.json";
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return "";
  if (!fs::is_regular_file(path, ec)) return "its summary.json is not a regular file";
  if (fs::file_size(path, ec) > (1u << 20) || ec) return "its summary.json is over 1 MiB";
  return read_summary(run_dir).is_object() ? "" : "its summary.json is not a JSON object";
}

RunState run_state(const fs::path& run_dir) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return RunState::NotStarted;
  if (finished_summary(read_summary(run_dir))) return RunState::Finished;
  if (fs::exists(run_dir / "checkpoint.safetensors", ec)) return RunState::Resumable;
  return RunState::Started;
}

const char* to_string(RunState state) {
  switch (state) {
    case RunState::NotStarted: return "not started";
    case RunState::Started: return "started";
    case RunState::Resumable: return "resumable";
    case RunState::Finished: return "finished";
  }
  return "?";
}

std::string last_log_line(const fs::path& run_dir) {
  const fs::path path = run_dir / "log.txt";
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";  // (a FIFO would block the open)
  std::ifstream in(path, std::ios::binary);
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!in || ec) return "";
  const std::uintmax_t window = 64 * 1024;
  in.seekg(static_cast<std::streamoff>(size > window ? size - window : 0));
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
  std::string line = tail.substr(tail.find_last_of('\n') == std::string::npos ? 0 : tail.find_last_of('\n') + 1);
  // A progress bar redraws its line with '\r': what it shows last is after the last one.
  if (const std::size_t cr = line.find_last_of('\r'); cr != std::string::npos) line = line.substr(cr + 1);
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return line;
}

// ===========================================================================
// Statistics over seeds
// ===========================================================================

MetricStats mean_std(const std::vector<double>& values) {
  MetricStats s;
  s.n = values.size();
  if (s.n == 0) {
    s.mean = s.std = kNaN;
    return s;
  }
  // Sums of differences from the first value: equal values give exactly that value and std 0
  // (a plain sum / n can miss it by an ulp: 3 x 13358.22 / 3), and large offsets cancel less.
  const double shift = values.front();
  double sum = 0;
  for (double v : values) sum += v - shift;
  const double mean_offset = sum / double(s.n);
  s.mean = shift + mean_offset;
  if (s.n < 2) {
    s.std = kNaN;
    return s;
  }
  double squares = 0;  // sum (v - mean)^2
  for (double v : values) squares += (v - shift - mean_offset) * (v - shift - mean_offset);
  s.std = std::sqrt(squares / double(s.n - 1));
  return s;
}

SweepSummary summarize_sweep(const SweepPlan& plan, const std::map<std::string, std::string>& notes,
                             const std::map<std::string, fs::path>* located) {
  SweepSummary summary;
  summary.grid = plan.spec.grid;
  summary.seeds = plan.spec.seeds;
  summary.total_runs = plan.runs.size();
  std::map<std::vector<std::string>, std::size_t> cell_of;  // grid values -> index in cells
  std::vector<std::map<std::string, std::vector<double>>> samples;
  std::vector<std::string> found;  // metric names in the order first seen
  for (const SweepRun& run : plan.runs) {
    auto [it, added] = cell_of.emplace(run.values, summary.cells.size());
    if (added) {
      summary.cells.push_back({run.values, {}, 0, {}});
      samples.emplace_back();
    }
    SweepCell& cell = summary.cells[it->second];
    cell.runs.push_back(run.name);
    fs::path dir = plan.run_dir(run);
    if (located) {
      const auto where = located->find(run.name);
      dir = where == located->end() ? fs::path() : where->second;
    }
    const RunState state = dir.empty() ? RunState::NotStarted : run_state(dir);
    if (state != RunState::Finished) {
      const auto note = notes.find(run.name);
      summary.unfinished.push_back({run.name, state, note == notes.end() ? "" : note->second});
      continue;
    }
    ++cell.finished;
    for (const auto& [name, value] : run_summary_numbers(dir)) {
      if (std::find(std::begin(kNotMetrics), std::end(kNotMetrics), name) != std::end(kNotMetrics)) continue;
      samples[it->second][name].push_back(value);
      if (std::find(found.begin(), found.end(), name) == found.end()) found.push_back(name);
    }
  }
  for (const char* usual : kUsualMetrics)
    if (std::find(found.begin(), found.end(), usual) != found.end()) summary.metrics.push_back(usual);
  for (const std::string& name : found)
    if (std::find(summary.metrics.begin(), summary.metrics.end(), name) == summary.metrics.end())
      summary.metrics.push_back(name);
  for (std::size_t c = 0; c < summary.cells.size(); ++c)
    for (const auto& [name, values] : samples[c]) summary.cells[c].metrics[name] = mean_std(values);
  return summary;
}

std::string summary_csv(const SweepSummary& summary) {
  std::vector<std::string> header;
  for (const GridAxis& axis : summary.grid) header.push_back(csv_field(axis.key));
  header.push_back("n");
  for (const std::string& m : summary.metrics) {
    header.push_back(csv_field(m + "_mean"));
    header.push_back(csv_field(m + "_std"));
  }
  std::string out = join(header, ",") + "\n";
  for (const SweepCell& cell : summary.cells) {
    std::vector<std::string> row;
    for (const std::string& v : cell.values) row.push_back(csv_field(v));
    row.push_back(std::to_string(cell.finished));
    for (const std::string& m : summary.metrics) {
      const auto it = cell.metrics.find(m);
      const bool has = it != cell.metrics.end() && it->second.n > 0;
      row.push_back(has ? exact_number(it->second.mean) : "");
      row.push_back(has && it->second.n >= 2 ? exact_number(it->second.std) : "");
    }
    out += join(row, ",") + "\n";
  }
  return out;
}

namespace {
// A metric that says nothing to compare: every cell with a finished run has the same mean and no
// spread (the parameter count of a sweep over seeds or gates). Needs two such cells.
bool constant_metric(const SweepSummary& summary, const std::string& metric, double& value) {
  std::size_t cells = 0;
  for (const SweepCell& cell : summary.cells) {
    const auto it = cell.metrics.find(metric);
    if (it == cell.metrics.end() || it->second.n == 0) continue;
    const MetricStats& s = it->second;
    if (!(s.n < 2 || s.std == 0) || (cells > 0 && s.mean != value)) return false;
    value = s.mean;
    ++cells;
  }
  return cells >= 2;
}
}  // namespace

std::string summary_markdown(const SweepSummary& summary, const std::string& metric) {
  std::vector<std::string> seeds;
  for (auto s : summary.seeds) seeds.push_back(std::to_string(s));
  std::string out = "Mean ± sample standard deviation over " + std::string(seeds.size() == 1 ? "seed " : "seeds ") +
                    join(seeds, ", ") +
                    "; \"(n)\" after a value: only n of the cell's finished runs have it.\n\n";
  // The chosen metric first, then the others; those the same in every run go under the table.
  std::vector<std::string> shown, same;
  if (std::find(summary.metrics.begin(), summary.metrics.end(), metric) != summary.metrics.end()) shown.push_back(metric);
  for (const std::string& m : summary.metrics) {
    double value = 0;
    if (m == metric) continue;
    if (constant_metric(summary, m, value))
      same.push_back(m + " = " + readable_number(value, 4));
    else
      shown.push_back(m);
  }
  std::vector<std::string> header;
  for (const GridAxis& axis : summary.grid) header.push_back(axis.key);
  header.push_back("runs");
  for (const std::string& m : shown) header.push_back(m);
  TextTable table(header);
  for (const SweepCell& cell : summary.cells) {
    std::vector<std::string> row = cell.values;
    row.push_back(std::to_string(cell.finished) + "/" + std::to_string(cell.runs.size()));
    for (const std::string& m : shown) {
      const auto it = cell.metrics.find(m);
      if (it == cell.metrics.end() || it->second.n == 0) {
        row.push_back("-");
        continue;
      }
      const MetricStats& s = it->second;
      // "mean ± std"; no "± 0" (every seed gave the same value), and "(n)" only when fewer runs
      // than the runs column counts have this metric.
      std::string text = readable_number(s.mean, 4);
      if (s.n >= 2 && s.std != 0) text += " ± " + readable_number(s.std, 2);
      if (s.n != cell.finished) text += " (" + std::to_string(s.n) + ")";
      row.push_back(text);
    }
    table.add_row(row);
  }
  out += table.markdown();
  if (!same.empty()) out += "\nThe same in every run: " + join(same, ", ") + ".\n";
  out += "\n";
  if (summary.unfinished.empty()) {
    out += "All " + std::to_string(summary.total_runs) + " runs finished.\n";
  } else {
    std::vector<std::string> names;
    for (const UnfinishedRun& r : summary.unfinished)
      names.push_back("`" + r.name + "` (" + (r.note.empty() ? to_string(r.state) : r.note) + ")");
    out += "Missing or failed: " + std::to_string(summary.unfinished.size()) + " of " +
           std::to_string(summary.total_runs) + " runs are not finished: " + join(names, ", ") + ".\n";
  }
  return out;
}

std::string default_x_key(const std::vector<GridAxis>& grid) {
  for (const GridAxis& axis : grid)
    if (axis.key == "heads") return axis.key;
  for (const GridAxis& axis : grid)
    if (std::all_of(axis.values.begin(), axis.values.end(), is_number)) return axis.key;
  return grid.empty() ? "" : grid.front().key;
}

std::string summary_chart(const SweepSummary& summary, const std::string& x_key, const std::string& metric) {
  std::size_t ix = summary.grid.size();
  for (std::size_t k = 0; k < summary.grid.size(); ++k)
    if (summary.grid[k].key == x_key) ix = k;
  if (ix == summary.grid.size())
    throw ValueError("--x " + x_key + ": not a grid key (the grid has " + grid_text(summary.grid) + ")");
  const GridAxis& x_axis = summary.grid[ix];
  const bool numeric = std::all_of(x_axis.values.begin(), x_axis.values.end(), is_number);

  // One series per combination of the other keys, in the order the cells come.
  std::vector<ChartSeries> series;
  std::map<std::string, std::size_t> series_of;
  for (const SweepCell& cell : summary.cells) {
    std::vector<std::string> others;
    for (std::size_t k = 0; k < summary.grid.size(); ++k)
      if (k != ix) others.push_back(summary.grid[k].key + "=" + cell.values[k]);
    const std::string name = others.empty() ? metric : join(others, ",");
    const auto [it, added] = series_of.emplace(name, series.size());
    if (added) series.push_back({name, {}, {}, {}});
    ChartSeries& s = series[it->second];
    const std::string& v = cell.values[ix];
    const auto pos = std::find(x_axis.values.begin(), x_axis.values.end(), v);
    s.x.push_back(numeric ? to_number(v) : double(pos - x_axis.values.begin()));
    const auto m = cell.metrics.find(metric);
    const bool has = m != cell.metrics.end() && m->second.n > 0;
    s.y.push_back(has ? m->second.mean : kNaN);
    s.error.push_back(has && m->second.n >= 2 ? m->second.std : kNaN);
  }
  // Numeric x values may be given in any order (heads=8,4,2): draw each line left to right.
  for (ChartSeries& s : series) {
    std::vector<std::size_t> order(s.x.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return s.x[a] < s.x[b]; });
    ChartSeries sorted{s.name, {}, {}, {}};
    for (std::size_t i : order) {
      sorted.x.push_back(s.x[i]);
      sorted.y.push_back(s.y[i]);
      sorted.error.push_back(s.error[i]);
    }
    s = std::move(sorted);
  }

  ChartOptions options;
  options.title = metric + " by " + x_key + " (mean ± std over " + std::to_string(summary.seeds.size()) +
                  (summary.seeds.size() == 1 ? " seed)" : " seeds)");
  options.x_label = x_key;
  if (!numeric) {
    std::vector<std::string> named;
    for (std::size_t i = 0; i < x_axis.values.size(); ++i) named.push_back(std::to_string(i) + " = " + x_axis.values[i]);
    options.x_label += " (" + join(named, ", ") + ")";
  }
  options.y_label = metric;
  // Head counts (or any numeric key whose values are powers of two spanning a factor >= 4) on a
  // log2 axis: 1, 2, 4, 8, 16 evenly spaced, no empty tick at 3. Other positive values spanning a
  // factor >= 10 (learning rates 0.001 .. 0.03) on a log10 axis with 1-2-5 ticks.
  if (numeric) {
    double lo = 0, hi = 0;
    bool powers_of_two = !x_axis.values.empty(), positive = !x_axis.values.empty();
    for (const std::string& v : x_axis.values) {
      const double x = to_number(v);
      int e = 0;
      powers_of_two = powers_of_two && x > 0 && std::frexp(x, &e) == 0.5;
      positive = positive && x > 0;
      lo = lo == 0 ? x : std::min(lo, x);
      hi = std::max(hi, x);
    }
    options.log2_x = powers_of_two && hi >= 4 * lo;
    options.log_x = !options.log2_x && positive && hi >= 10 * lo;
  }
  options.series_offset = series.size() > 1 ? 5 : 0;  // points of several series at one x side by side
  return svg_line_chart(series, options);
}

void write_sweep_outputs(const fs::path& out_dir, const SweepSummary& summary, const std::string& x_key,
                         const std::string& metric) {
  fs::create_directories(out_dir);
  write_text_file(out_dir / "summary.csv", summary_csv(summary));
  write_text_file(out_dir / "summary.md", summary_markdown(summary, metric));
  write_text_file(out_dir / "chart.svg", summary_chart(summary, x_key, metric));
}

}  // namespace headlab
