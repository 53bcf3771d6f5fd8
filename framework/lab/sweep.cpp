// sweep.cpp: grids, plans and the sweep.json of an ablation sweep (see headlab/lab/sweep.hpp;
// run states and statistics are in sweep_summary.cpp, the jobs for other schedulers in sweep_jobs.cpp,
// collecting runs made elsewhere in sweep_collect.cpp). Starting the runs is in apps/headlab/ablate_command.cpp.
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
#include "headlab/core/json_depth.hpp"
#include "headlab/core/user_input.hpp"
#include "sweep_text.hpp"

namespace headlab {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace sweep_text;

namespace {

// Flags every run gets from the sweep itself; neither a grid key nor a base flag may set them.
// Each run is started with --resume-or-start: it continues from its checkpoint, or starts over.
const char* const kSweepOwnedFlags[] = {"--seed", "--run-dir", "--resume", "--overwrite", "--resume-or-start",
                                        "--progress"};

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
      throw ValueError("--seeds " + quote_clipped(text) + ": " + quote_clipped(part) +
                       " is not a non-negative integer (expected e.g. 1,2,3)");
    if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end())
      throw ValueError("--seeds " + quote_clipped(text) + ": the seed " + part + " is given twice");
    seeds.push_back(seed);
  }
  return seeds;
}

std::string train_flag_for(const std::string& key) {
  // A grid key is a TrainOptions field (ff_dim) or a flag name (ff, kv-heads or kv_heads): the
  // options table (headlab/train/options.hpp) knows both.
  std::string dashed = key;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  const OptionInfo* info = find_option_by_field(key);
  if (!info) info = find_option_by_flag(dashed);
  if (!info) throw ValueError("--grid " + key + ": `headlab train` has no flag --" + dashed + " (see headlab train --help)");
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
    const bool print_config = arg == "--print-config" ||
                              (arg.rfind("--print-config=", 0) == 0 && arg != "--print-config=false" && arg != "--print-config=0");
    if (print_config)  // each run would print its options and end without training
      throw ValueError("'" + arg + "' after '--': it prints the options and trains nothing; to see a run's options, "
                       "run headlab train with them and --print-config");
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
    const json doc = json::parse(in, json_depth_limit<json>("read_sweep_json: '" + path.string() + "': "));
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
    throw bad(json_error_text(e.what()));
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
  if (!same_grid(saved.grid, wanted.grid))
    return "the grid differs: " + grid_text(saved.grid) + " there, " + grid_text(wanted.grid) + " here";
  if (saved.seeds != wanted.seeds)
    return "the seeds differ: " + seeds_text(saved.seeds) + " there, " + seeds_text(wanted.seeds) + " here";
  if (saved.base_flags != wanted.base_flags)
    return "the flags after '--' differ: '" + join(saved.base_flags, " ") + "' there, '" +
           join(wanted.base_flags, " ") + "' here";
  return "";
}

}  // namespace headlab
