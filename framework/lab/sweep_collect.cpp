// sweep_collect.cpp: the runs of a sweep made elsewhere, found in the directories they were copied to
// and checked against the plan (headlab/lab/sweep_collect.hpp).
#include "headlab/lab/sweep_collect.hpp"

#include <algorithm>
#include <set>
#include <system_error>

#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/train/config_file.hpp"
#include "headlab/train/options.hpp"
#include "sweep_text.hpp"

namespace headlab {

namespace fs = std::filesystem;
using namespace sweep_text;

namespace {

// At most this many problems are listed in the refusal (then "... and N more").
constexpr std::size_t kListedProblems = 12;

bool holds_run_files(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "config.ini", ec) || fs::exists(dir / "summary.json", ec);
}

// The directories under `source` that may be runs (see the header), sorted by path.
std::vector<fs::path> run_candidates(const fs::path& given) {
  fs::path source = given.lexically_normal();  // "node1/heads=1,seed=1/" -> its name is heads=1,seed=1
  if (!source.has_filename()) source = source.parent_path();
  if (holds_run_files(source)) return {source};
  std::error_code ec;
  const fs::path base = fs::is_directory(source / "runs", ec) ? source / "runs" : source;
  std::vector<fs::path> dirs;
  for (const fs::directory_entry& entry : fs::directory_iterator(base, ec))
    if (entry.is_directory(ec)) dirs.push_back(entry.path());
  if (ec)
    throw IOError("--collect " + quote_clipped(source.string()) + ": cannot list " + quote_clipped(base.string()) +
                  ": " + ec.message());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// A config value for a message: as it is when short and printable, else quoted and clipped.
std::string shown(const std::string& value) {
  const bool plain = value.size() <= 60 && std::none_of(value.begin(), value.end(), [](char c) {
                       return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
                     });
  return plain ? value : quote_clipped(value, 60);
}

// The [train] entries of a config text, key -> value.
std::map<std::string, std::string> config_entries(const std::vector<ConfigEntry>& entries) {
  std::map<std::string, std::string> out;
  for (const ConfigEntry& e : entries) out[e.key] = e.value;
  return out;
}


}  // namespace

std::string config_difference(const std::string& planned_text, const fs::path& config_path) {
  const auto planned = config_entries(parse_config_text(planned_text, "the planned run's config"));
  const auto found = config_entries(read_config_file(config_path.string()));
  // A key the run's config.ini lacks is an option added after that run was trained: the run did what
  // the option's default does (an option is added with the old behaviour as its default), so it
  // matches when the planned value is that default for the planned task.
  std::map<std::string, std::string> defaults;
  if (const auto task = planned.find("task"); task != planned.end()) {
    try {
      defaults = config_entries(
          parse_config_text(TrainOptions::defaults_for(parse_task(task->second)).to_config_ini(), "the defaults"));
    } catch (const ValueError&) {  // not a task of this build: no defaults, every missing key differs
    }
  }
  std::vector<std::string> differences;
  for (const auto& [key, value] : planned) {
    const auto it = found.find(key);
    const auto by_default = defaults.find(key);
    if (it == found.end() && by_default != defaults.end() && by_default->second == value) continue;
    if (const OptionInfo* info = find_option_by_flag(key); it == found.end() && info && unknown_when_missing(*info))
      continue;  // made before the option, whose default is not what every earlier run did
    if (it == found.end())
      differences.push_back(key + " missing there, " + key + "=" + shown(value) + " in this sweep");
    else if (it->second != value)
      differences.push_back(key + "=" + shown(it->second) + " there, " + key + "=" + shown(value) + " in this sweep");
  }
  for (const auto& [key, value] : found)
    if (planned.count(key) == 0) differences.push_back(key + "=" + shown(value) + " there, not in this sweep");
  if (differences.size() > 3) {
    const std::size_t more = differences.size() - 3;
    differences.resize(3);
    differences.push_back("and " + std::to_string(more) + " more");
  }
  return join(differences, "; ");
}

CollectedRuns collect_sweep_runs(const SweepPlan& plan, const std::vector<fs::path>& sources,
                                 const std::map<std::string, std::string>& planned_configs) {
  if (sources.empty()) throw ValueError("--collect: give the directories to collect the runs from");
  std::map<std::string, const SweepRun*> planned;
  for (const SweepRun& run : plan.runs) planned[run.name] = &run;

  // 1. The directories themselves.
  std::vector<fs::path> roots;
  for (const fs::path& source : sources) {
    std::error_code ec;
    if (source.empty() || !fs::is_directory(source, ec))
      throw ValueError("--collect " + quote_clipped(source.string()) +
                       (fs::exists(source, ec) ? ": not a directory" : ": no such directory"));
    const fs::path canonical = fs::weakly_canonical(source, ec);
    for (std::size_t i = 0; i < roots.size(); ++i)
      if (fs::weakly_canonical(roots[i], ec) == canonical)
        throw ValueError("--collect: the directory " + quote_clipped(source.string()) + " is given twice");
    roots.push_back(source);
  }

  // 2. Every run directory under them: which planned run, which state; problems gathered.
  CollectedRuns out;
  std::vector<std::string> problems;
  std::map<std::string, std::vector<std::pair<fs::path, RunState>>> copies;  // run name -> its copies
  for (const fs::path& root : roots) {
    for (const fs::path& dir : run_candidates(root)) {
      const std::string name = dir.filename().string();
      const auto run = planned.find(name);
      if (run == planned.end()) {
        if (holds_run_files(dir))
          problems.push_back(quote_clipped(dir.string()) + ": not a run of this sweep (its grid is " +
                             grid_text(plan.spec.grid) + " with seeds " + seeds_text(plan.spec.seeds) +
                             ", its runs named like " + plan.runs.front().name + ")");
        else
          out.remarks.push_back("skipped " + quote_clipped(dir.string()) +
                                ": not a run directory (no config.ini or summary.json)");
        continue;
      }
      const RunState state = run_state(dir);
      std::error_code ec;
      if (fs::exists(dir / "config.ini", ec)) {
        try {
          const std::string difference = config_difference(planned_configs.at(name), dir / "config.ini");
          if (!difference.empty()) {
            problems.push_back(quote_clipped(dir.string()) + ": from another sweep: " + difference);
            continue;
          }
        } catch (const ValueError& e) {
          problems.push_back(quote_clipped(dir.string()) + ": its config.ini cannot be read: " + e.what());
          continue;
        }
      } else if (state == RunState::Finished) {
        problems.push_back(quote_clipped(dir.string()) +
                           ": finished but has no config.ini, so nothing tells which run it is");
        continue;
      }
      copies[name].push_back({dir, state});
    }
  }

  // 3. One copy per planned run: the finished one; two finished copies are refused.
  for (const SweepRun& run : plan.runs) {
    const auto found = copies.find(run.name);
    if (found == copies.end()) {
      out.notes[run.name] = "not found in the " + std::to_string(roots.size()) +
                            (roots.size() == 1 ? " directory" : " directories");
      continue;
    }
    std::vector<fs::path> finished;
    for (const auto& [dir, state] : found->second)
      if (state == RunState::Finished) finished.push_back(dir);
    if (finished.size() > 1) {
      std::vector<std::string> where;
      for (const fs::path& dir : finished) where.push_back(quote_clipped(dir.string()));
      problems.push_back("run " + run.name + " is finished in " + std::to_string(finished.size()) +
                         " places: " + join(where, " and ") + "; keep one");
      continue;
    }
    const auto chosen = finished.empty() ? found->second.front() : std::make_pair(finished.front(), RunState::Finished);
    out.run_dirs[run.name] = chosen.first;
    if (chosen.second == RunState::Finished) ++out.finished;
    else out.notes[run.name] = std::string(to_string(chosen.second)) + ", in " + quote_clipped(chosen.first.string());
    for (const auto& [dir, state] : found->second)
      if (dir != chosen.first)
        out.remarks.push_back("not read: " + quote_clipped(dir.string()) + " (" + to_string(state) + "); " +
                              run.name + " is read from " + quote_clipped(chosen.first.string()));
  }

  if (!problems.empty()) {
    const std::size_t total = problems.size();
    if (total > kListedProblems) {
      problems.resize(kListedProblems);
      problems.push_back("... and " + std::to_string(total - kListedProblems) + " more");
    }
    throw ValueError("--collect: " + std::to_string(total) + (total == 1 ? " problem" : " problems") +
                     " with the runs found for the sweep " + quote_clipped(plan.out_dir.string()) +
                     ", so nothing was written:\n  " + join(problems, "\n  "));
  }
  return out;
}

}  // namespace headlab
