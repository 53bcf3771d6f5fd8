// sweep.cpp: grids, plans, run states and the statistics of an ablation sweep
// (see headlab/lab/sweep.hpp). Starting the runs is in apps/headlab/ablate_command.cpp.
#include "headlab/lab/sweep.hpp"
#include "headlab/train/options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <numeric>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/report/report.hpp"

namespace headlab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Flags every run gets from the sweep itself; neither a grid key nor a base flag may set them.
const char* const kSweepOwnedFlags[] = {"--seed", "--run-dir", "--resume", "--progress"};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

bool is_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Checks one axis (also for specs built without parse_grid_axis). `what` is how to name it in messages.
void check_axis(const GridAxis& axis, const std::string& what) {
  if (axis.key.empty()) throw ValueError("--grid '" + what + "': the key before '=' is empty");
  if (!std::all_of(axis.key.begin(), axis.key.end(), is_key_char) || axis.key.front() == '-' ||
      axis.key.front() == '_')
    throw ValueError("--grid '" + what + "': the key '" + axis.key +
                     "' must be a train flag name without the dashes (letters, digits, '_', '-'), e.g. heads");
  if (axis.values.empty()) throw ValueError("--grid '" + what + "': no values after '='");
  for (std::size_t i = 0; i < axis.values.size(); ++i) {
    if (axis.values[i].empty())
      throw ValueError("--grid '" + what + "': value " + std::to_string(i + 1) + " is empty");
    for (std::size_t j = 0; j < i; ++j)
      if (axis.values[j] == axis.values[i])
        throw ValueError("--grid '" + what + "': the value '" + axis.values[i] + "' is given twice");
  }
}

std::string axis_text(const GridAxis& axis) { return axis.key + "=" + join(axis.values, ","); }

std::string grid_text(const std::vector<GridAxis>& grid) {
  std::vector<std::string> parts;
  for (const auto& a : grid) parts.push_back(axis_text(a));
  return parts.empty() ? "(none)" : join(parts, " ");
}

// "--heads" given as a train argument: "--heads" (a value follows) or "--heads=2".
bool sets_flag(const std::string& arg, const std::string& flag) {
  return arg == flag || arg.rfind(flag + "=", 0) == 0;
}

// The run name of one cell and seed, before sanitising: "heads=2,gate=none,seed=1".
std::string raw_run_name(const std::vector<GridAxis>& grid, const std::vector<std::string>& values,
                         std::uint64_t seed) {
  std::string name;
  for (std::size_t k = 0; k < grid.size(); ++k) name += grid[k].key + "=" + values[k] + ",";
  return name + "seed=" + std::to_string(seed);
}

// Every combination of grid values, the first axis varying slowest (an odometer).
std::vector<std::vector<std::string>> grid_cells(const std::vector<GridAxis>& grid) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::size_t> index(grid.size(), 0);
  while (true) {
    std::vector<std::string> values;
    for (std::size_t k = 0; k < grid.size(); ++k) values.push_back(grid[k].values[index[k]]);
    cells.push_back(std::move(values));
    std::size_t k = grid.size();
    while (k > 0 && ++index[k - 1] == grid[k - 1].values.size()) index[--k] = 0;
    if (k == 0) return cells;
  }
}

// Writes `text` to `path` through a temporary file and a rename: a reader never sees half a file.
void write_text_file(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IOError("cannot write '" + tmp.string() + "'");
    out << text;
    out.flush();
    if (!out) throw IOError("writing '" + tmp.string() + "' failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw IOError("cannot rename '" + tmp.string() + "' to '" + path.string() + "': " + ec.message());
}

bool is_number(const std::string& text) {
  if (text.empty()) return false;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() && std::isfinite(v);
}

double to_number(const std::string& text) {
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

// Shortest text that reads back as the same double ("0.1", "1234", "1e-05"); NaN -> "nan".
std::string exact_number(double v) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "nan";
}

// A number for people: whole numbers and numbers from 10^4 up (parameters 104320, FLOPs 13358)
// rounded to an integer, others to `digits` significant digits (2.256, 0.0053).
std::string readable_number(double v, int digits) {
  if (std::isnan(v)) return "nan";
  char buf[64];
  if (std::isfinite(v) && (v == std::round(v) || std::fabs(v) >= 1e4) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The metrics most sweeps are about come first in tables, in this order; others follow as found.
const char* const kUsualMetrics[] = {"valid_loss",  "valid_accuracy",   "valid_bleu",    "test_bleu_greedy",
                                     "test_bleu_beam", "parameters",   "flops_per_token", "train_seconds",
                                     "steps"};
// Numeric fields of summary.json that are not results.
const char* const kNotMetrics[] = {"interrupted", "seed"};

}  // namespace

// ===========================================================================
// The grid and the plan
// ===========================================================================

GridAxis parse_grid_axis(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos)
    throw ValueError("--grid '" + text + "': expected KEY=V1,V2,... (e.g. heads=1,2,4)");
  GridAxis axis;
  axis.key = text.substr(0, eq);
  std::replace(axis.key.begin(), axis.key.end(), '-', '_');
  const std::string values = text.substr(eq + 1);
  if (!values.empty()) axis.values = split(values, ',');
  check_axis(axis, text);
  return axis;
}

std::vector<std::uint64_t> parse_seeds(const std::string& text) {
  std::vector<std::uint64_t> seeds;
  for (const std::string& part : split(text, ',')) {
    std::uint64_t seed = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), seed);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size())
      throw ValueError("--seeds '" + text + "': '" + part + "' is not a non-negative integer (expected e.g. 1,2,3)");
    if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end())
      throw ValueError("--seeds '" + text + "': the seed " + part + " is given twice");
    seeds.push_back(seed);
  }
  return seeds;
}

std::string train_flag_for(const std::string& key) {
  // A grid key is a TrainOptions field (ff_dim) or a flag name (ff, kv-heads or kv_heads): the
  // options table (headlab/train/options.hpp) knows both.
  const OptionInfo* info = find_option_by_field(key);
  if (!info) info = find_option_by_flag(key);
  if (!info) {
    std::string dashed = key;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    info = find_option_by_flag(dashed);
  }
  if (!info) {
    std::string dashed = key;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    throw ValueError("--grid " + key + ": `headlab train` has no flag --" + dashed + " (see headlab train --help)");
  }
  return std::string("--") + info->flag;
}

bool is_boolean_train_flag(const std::string& flag) {
  const OptionInfo* info = find_option_by_flag(flag);
  return info != nullptr && info->kind == OptionKind::flag;
}

std::vector<std::string> grid_value_arguments(const std::string& key, const std::string& value, bool boolean_flag) {
  const std::string flag = train_flag_for(key);
  if (boolean_flag) {
    if (value == "on") return {flag};
    if (value == "off") return {flag + "=false"};
    throw ValueError("--grid " + key + ": " + flag + " is a flag without a value; its grid values are on and off, got '" +
                     value + "'");
  }
  if (key == "head_dim" && value == "compute") return {flag, "0"};  // d = d_model / heads
  return {flag, value};
}

std::string sanitize_run_name(const std::string& name) {
  std::string out = name;
  for (char& c : out)
    if (!(is_key_char(c) || c == '=' || c == ',' || c == '.')) c = '_';
  return out;
}

void validate_sweep(const SweepSpec& spec) {
  if (spec.grid.empty()) throw ValueError("give at least one --grid KEY=V1,V2,... (e.g. --grid heads=1,2,4)");
  std::map<std::string, std::string> key_of_flag;  // "--ff" -> the key that set it
  for (const GridAxis& axis : spec.grid) {
    check_axis(axis, axis_text(axis));
    const std::string flag = train_flag_for(axis.key);
    if (axis.key == "seed")
      throw ValueError("--grid " + axis_text(axis) + ": the seed is not a grid key; give the seeds with --seeds 1,2,3");
    for (const char* owned : kSweepOwnedFlags)
      if (flag == owned)
        throw ValueError("--grid " + axis_text(axis) + ": the sweep sets " + flag + " of every run itself");
    const auto [it, added] = key_of_flag.emplace(flag, axis.key);
    if (!added)
      throw ValueError(it->second == axis.key
                           ? "--grid: the key '" + axis.key + "' is given twice"
                           : "--grid: '" + it->second + "' and '" + axis.key + "' both set " + flag);
    for (const std::string& value : axis.values)
      grid_value_arguments(axis.key, value, spec.boolean_flags.count(flag) > 0);
  }
  for (const std::string& arg : spec.base_flags) {
    for (const char* owned : kSweepOwnedFlags)
      if (sets_flag(arg, owned))
        throw ValueError("'" + arg + "' after '--': the sweep sets " + owned + " of every run itself" +
                         (std::string(owned) == "--seed" ? " (give the seeds with --seeds 1,2,3)" : ""));
    for (const auto& [flag, key] : key_of_flag)
      if (sets_flag(arg, flag))
        throw ValueError("'" + arg + "' after '--' sets " + flag + ", which is also the --grid key '" + key +
                         "': give it in one place");
  }
  if (spec.seeds.empty()) throw ValueError("--seeds: give at least one seed");
  for (std::size_t i = 0; i < spec.seeds.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (spec.seeds[i] == spec.seeds[j])
        throw ValueError("--seeds: the seed " + std::to_string(spec.seeds[i]) + " is given twice");
  std::map<std::string, std::string> raw_of_name;
  for (const auto& values : grid_cells(spec.grid)) {
    const std::string raw = raw_run_name(spec.grid, values, spec.seeds.front());
    const auto [it, added] = raw_of_name.emplace(sanitize_run_name(raw), raw);
    if (!added)
      throw ValueError("--grid: the runs '" + it->second + "' and '" + raw + "' would share the directory '" +
                       it->first + "' (characters outside [A-Za-z0-9=,._-] become '_')");
  }
}

SweepPlan plan_sweep(const SweepSpec& spec, const fs::path& out_dir) {
  validate_sweep(spec);
  SweepPlan plan;
  plan.spec = spec;
  plan.out_dir = fs::absolute(out_dir).lexically_normal();
  for (const auto& values : grid_cells(spec.grid)) {
    for (const std::uint64_t seed : spec.seeds) {
      SweepRun run;
      run.name = sanitize_run_name(raw_run_name(spec.grid, values, seed));
      run.values = values;
      run.seed = seed;
      run.train_args = spec.base_flags;
      for (std::size_t k = 0; k < spec.grid.size(); ++k) {
        const bool boolean = spec.boolean_flags.count(train_flag_for(spec.grid[k].key)) > 0;
        for (std::string& a : grid_value_arguments(spec.grid[k].key, values[k], boolean))
          run.train_args.push_back(std::move(a));
      }
      for (std::string a : {std::string("--seed"), std::to_string(seed), std::string("--run-dir"),
                            plan.run_dir(run).string(), std::string("--progress"), std::string("none")})
        run.train_args.push_back(std::move(a));
      plan.runs.push_back(std::move(run));
    }
  }
  return plan;
}

void write_sweep_json(const SweepPlan& plan, const std::string& executable) {
  nlohmann::ordered_json grid = nlohmann::ordered_json::array();
  for (const GridAxis& axis : plan.spec.grid) grid.push_back({{"key", axis.key}, {"values", axis.values}});
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const SweepRun& run : plan.runs) {
    std::vector<std::string> argv = {executable, "train"};
    argv.insert(argv.end(), run.train_args.begin(), run.train_args.end());
    runs.push_back({{"name", run.name}, {"seed", run.seed}, {"values", run.values}, {"argv", argv}});
  }
  const nlohmann::ordered_json doc = {{"version", 1},  // ordered: the keys stay in this order in the file
                    {"grid", grid},
                    {"seeds", plan.spec.seeds},
                    {"base_flags", plan.spec.base_flags},
                    {"runs", runs}};
  fs::create_directories(plan.out_dir);
  write_text_file(plan.out_dir / "sweep.json", doc.dump(2) + "\n");
}

SweepPlan read_sweep_json(const fs::path& out_dir) {
  const fs::path path = out_dir / "sweep.json";
  std::ifstream in(path);
  if (!in) throw IOError("cannot read '" + path.string() + "' (is this a sweep directory?)");
  const auto bad = [&](const std::string& why) {
    return FormatError("read_sweep_json: '" + path.string() + "': " + why);
  };
  SweepPlan plan;
  plan.out_dir = fs::absolute(out_dir).lexically_normal();
  try {
    const json doc = json::parse(in);
    if (!doc.is_object() || doc.value("version", 0) != 1) throw bad("not a sweep.json of version 1");
    for (const json& axis : doc.at("grid"))
      plan.spec.grid.push_back({axis.at("key").get<std::string>(), axis.at("values").get<std::vector<std::string>>()});
    plan.spec.seeds = doc.at("seeds").get<std::vector<std::uint64_t>>();
    plan.spec.base_flags = doc.at("base_flags").get<std::vector<std::string>>();
    for (const json& r : doc.at("runs")) {
      SweepRun run;
      run.name = r.at("name").get<std::string>();
      run.seed = r.at("seed").get<std::uint64_t>();
      run.values = r.at("values").get<std::vector<std::string>>();
      const auto argv = r.at("argv").get<std::vector<std::string>>();
      if (argv.size() < 2) throw bad("run '" + run.name + "' has no argv");
      run.train_args.assign(argv.begin() + 2, argv.end());
      if (run.values.size() != plan.spec.grid.size() || run.name != sanitize_run_name(run.name) ||
          run.name.empty() || run.name == "." || run.name == "..")
        throw bad("run '" + run.name + "' does not match the grid");
      plan.runs.push_back(std::move(run));
    }
  } catch (const json::exception& e) {
    throw bad(e.what());
  }
  return plan;
}

std::string sweep_difference(const SweepSpec& saved, const SweepSpec& wanted) {
  const auto same_grid = [](const std::vector<GridAxis>& a, const std::vector<GridAxis>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
      if (a[k].key != b[k].key || a[k].values != b[k].values) return false;
    return true;
  };
  const auto seeds_text = [](const std::vector<std::uint64_t>& seeds) {
    std::vector<std::string> parts;
    for (auto s : seeds) parts.push_back(std::to_string(s));
    return join(parts, ",");
  };
  if (!same_grid(saved.grid, wanted.grid))
    return "the grid differs: " + grid_text(saved.grid) + " there, " + grid_text(wanted.grid) + " here";
  if (saved.seeds != wanted.seeds)
    return "the seeds differ: " + seeds_text(saved.seeds) + " there, " + seeds_text(wanted.seeds) + " here";
  if (saved.base_flags != wanted.base_flags)
    return "the flags after '--' differ: '" + join(saved.base_flags, " ") + "' there, '" +
           join(wanted.base_flags, " ") + "' here";
  return "";
}

// ===========================================================================
// Runs on disk
// ===========================================================================

namespace {
// summary.json parsed, or a null json when it is missing or not a JSON object.
json read_summary(const fs::path& run_dir) {
  std::ifstream in(run_dir / "summary.json");
  if (!in) return json();
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() ? doc : json();
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

SweepSummary summarize_sweep(const SweepPlan& plan, const std::map<std::string, std::string>& notes) {
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
    const fs::path dir = plan.run_dir(run);
    const RunState state = run_state(dir);
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

std::string summary_markdown(const SweepSummary& summary) {
  std::vector<std::string> seeds;
  for (auto s : summary.seeds) seeds.push_back(std::to_string(s));
  std::string out = "Mean ± sample standard deviation over " + std::string(seeds.size() == 1 ? "seed " : "seeds ") +
                    join(seeds, ", ") +
                    " (n = finished runs with that value).\n\n";
  std::vector<std::string> header, rule;
  for (const GridAxis& axis : summary.grid) header.push_back(markdown_cell(axis.key));
  header.push_back("runs");
  for (const std::string& m : summary.metrics) header.push_back(markdown_cell(m));
  rule.assign(header.size(), "---");
  out += "| " + join(header, " | ") + " |\n|" + join(rule, "|") + "|\n";
  for (const SweepCell& cell : summary.cells) {
    std::vector<std::string> row;
    for (const std::string& v : cell.values) row.push_back(markdown_cell(v));
    row.push_back(std::to_string(cell.finished) + "/" + std::to_string(cell.runs.size()));
    for (const std::string& m : summary.metrics) {
      const auto it = cell.metrics.find(m);
      if (it == cell.metrics.end() || it->second.n == 0) {
        row.push_back("-");
        continue;
      }
      const MetricStats& s = it->second;
      std::string text = readable_number(s.mean, 4);
      if (s.n >= 2) text += " ± " + readable_number(s.std, 2);
      row.push_back(text + " (" + std::to_string(s.n) + ")");
    }
    out += "| " + join(row, " | ") + " |\n";
  }
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
  return svg_line_chart(series, options);
}

void write_sweep_outputs(const fs::path& out_dir, const SweepSummary& summary, const std::string& x_key,
                         const std::string& metric) {
  fs::create_directories(out_dir);
  write_text_file(out_dir / "summary.csv", summary_csv(summary));
  write_text_file(out_dir / "summary.md", summary_markdown(summary));
  write_text_file(out_dir / "chart.svg", summary_chart(summary, x_key, metric));
}

// ===========================================================================
// Jobs for another scheduler
// ===========================================================================

std::string shell_quote(const std::string& word) {
  const auto safe = [](char c) {
    return is_key_char(c) || c == '.' || c == '/' || c == '=' || c == ',' || c == ':' || c == '@' || c == '%' ||
           c == '+';
  };
  if (!word.empty() && std::all_of(word.begin(), word.end(), safe)) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string job_command(const std::string& executable, const SweepPlan& plan, const SweepRun& run, bool resume) {
  const fs::path dir = plan.run_dir(run);
  std::string line = "mkdir -p " + shell_quote(dir.string()) + " && " + shell_quote(executable) + " train";
  for (const std::string& a : run.train_args) line += " " + shell_quote(a);
  if (resume) line += " --resume";
  line += (resume ? " >> " : " > ") + shell_quote((dir / "log.txt").string()) + " 2>&1";
  return line;
}

}  // namespace headlab
