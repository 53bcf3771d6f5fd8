// ablate_command.cpp: `headlab ablate` (see ablate_command.hpp): flags, checks, and the plan.
//
// A run is this executable started again as
//   headlab train <flags after --> <grid flags> --seed S --run-dir DIR/runs/<name> --progress none
// with stdout and stderr in DIR/runs/<name>/log.txt, by sweep_runner.hpp.
#include "ablate_command.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <utility>

#include <CLI/CLI.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/lab/sweep.hpp"
#include "headlab/lab/sweep_collect.hpp"
#include "headlab/train/run_dir.hpp"
#include "headlab/train/trainer.hpp"
#include "cli_values.hpp"
#include "sweep_runner.hpp"
#include "train_flags.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

CLI::App* add_ablate_command(CLI::App& app, AblateOptions& o) {
  auto* ablate = app.add_subcommand(
      "ablate", "run `headlab train` over a grid of flags x seeds; write mean ± std tables and a chart");
  ablate->add_option("--out", o.out_dir, "the sweep directory (sweep.json, runs/, summary.csv, summary.md, chart.svg)")->type_name("DIR")
      ->required();
  ablate->add_option("--grid", o.grid, "KEY=V1,V2,...: a train flag without dashes and its values (repeatable; "
                                       "head_dim=compute means d_model/heads; flags without a value take on/off)")
      ->allow_extra_args(false);
  ablate->add_option("--seeds", o.seeds, "seeds of every grid cell, e.g. 1,2,3 (default 1)")
      ->check(CLI::Validator(
          [](std::string& text) { return text.empty() ? std::string("empty: name the seeds, e.g. 1,2,3") : std::string(); },
          "SEEDS"));
  ablate->add_option("-j,--jobs", o.jobs, "runs at the same time (default 1); with --emit-slurm, array tasks at once")
      ->check(whole_number(1, 1024));
  ablate->add_option("--metric", o.metric, "summary.json field on the chart's y axis")->capture_default_str();
  ablate->add_option("--x", o.x_key, "grid key on the chart's x axis (default: heads, else the first numeric key)");
  ablate->add_option("--emit-jobs", o.emit_jobs,
                     "write one shell command per unfinished run to this file instead of running them "
                     "(bash FILE, parallel < FILE)")->type_name("FILE");
  ablate->add_option("--emit-slurm", o.emit_slurm,
                     "write a SLURM array script (sbatch FILE), one task per unfinished run, instead of running them")->type_name("FILE");
  ablate->add_option("--collect", o.collect,
                     "only (re)write the summary of DIR from its finished runs, or from the run directories "
                     "copied to the directories given (runs made on other machines)")->type_name("DIR")
      ->expected(0, CLI::detail::expected_max_vector_size);
  add_slurm_flags(ablate, o.slurm);
  ablate->add_option("train_flags", o.train_flags, "after `--`: flags for every `headlab train` run");
  return ablate;
}

namespace {

// ---------------------------------------------------------------------------
// Checks against the real `train` flags
// ---------------------------------------------------------------------------

// The flags of `headlab train` that take no value (--pre-ln, ...), for the grid keys; a key
// that is no train option is a usage error (train_flag_for throws).
std::set<std::string> boolean_grid_flags(const std::vector<GridAxis>& grid) {
  std::set<std::string> booleans;
  for (const GridAxis& axis : grid) {
    const std::string flag = train_flag_for(axis.key);
    if (is_boolean_train_flag(flag)) booleans.insert(flag);
  }
  return booleans;
}

// ---------------------------------------------------------------------------
// The command
// ---------------------------------------------------------------------------

// summary.csv, summary.md and chart.svg from the runs finished now; the table goes to stdout.
// `located`: where the runs are when not in DIR/runs (see summarize_sweep).
void summarise(const SweepPlan& plan, const AblateOptions& o, const std::string& x_key,
               const std::map<std::string, std::string>& notes,
               const std::map<std::string, fs::path>* located = nullptr) {
  const SweepSummary summary = summarize_sweep(plan, notes, located);
  write_sweep_outputs(plan.out_dir, summary, x_key, o.metric);
  if (summary.unfinished.size() < summary.total_runs &&
      std::find(summary.metrics.begin(), summary.metrics.end(), o.metric) == summary.metrics.end())
    std::cerr << "headlab ablate: note: no finished run has '" << o.metric
              << "' in its summary.json, so chart.svg has no points\n";
  std::cout << "\n" << summary_markdown(summary, o.metric);
  std::cout << "wrote " << (plan.out_dir / "summary.csv").string() << ", summary.md and chart.svg" << std::endl;
}

std::string chart_x_key(const AblateOptions& o, const std::vector<GridAxis>& grid) {
  if (o.x_key.empty()) return default_x_key(grid);
  std::string key = o.x_key;
  std::replace(key.begin(), key.end(), '-', '_');
  for (const GridAxis& axis : grid)
    if (axis.key == key) return key;
  std::vector<std::string> keys;
  for (const GridAxis& axis : grid) keys.push_back(axis.key);
  std::string list;
  for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
  throw ValueError("--x " + o.x_key + ": not a grid key (the grid keys are " + list + ")");
}

// The sweep directory as a run directory: locked while ablate works in it, every file kept.
RunDirSpec sweep_dir_spec() {
  RunDirSpec spec;
  spec.command = "ablate";
  spec.dir_flag = "--out";
  spec.existing = ExistingRun::reuse;
  return spec;
}

// After --collect: 0 when every run is finished, else 1, naming each run that is not with why
// (its state, the note) and the last line of its log.
int report_unfinished(const SweepPlan& plan, const std::map<std::string, std::string>& notes,
                      const std::map<std::string, fs::path>& located) {
  const SweepSummary summary = summarize_sweep(plan, notes, &located);
  if (summary.unfinished.empty()) return 0;
  std::cerr << "headlab ablate: " << summary.unfinished.size() << " of " << summary.total_runs
            << " runs are not finished (the summary holds the others):\n";
  for (const UnfinishedRun& run : summary.unfinished) {
    std::cerr << "  " << run.name << ": " << (run.note.empty() ? to_string(run.state) : run.note);
    const auto where = located.find(run.name);
    const std::string last = last_log_line(where != located.end() ? where->second : plan.out_dir / "runs" / run.name);
    if (!last.empty()) std::cerr << "; its log ends: " << last;
    std::cerr << "\n";
  }
  return 1;
}

int collect(const AblateOptions& o) {
  if (!o.grid.empty() || !o.seeds.empty() || !o.train_flags.empty() || !o.emit_jobs.empty() ||
      !o.emit_slurm.empty() || o.jobs != 0)
    throw ValueError("--collect reads the sweep from " + (fs::path(o.out_dir) / "sweep.json").string() +
                     " and runs nothing; give it with --out (and --metric, --x) only");
  check_slurm_flags(o.slurm, false);
  std::vector<fs::path> sources;  // --collect D1 D2 ...; none: DIR/runs
  for (const std::string& dir : o.collect)
    if (!dir.empty()) sources.push_back(dir);
  if (!sources.empty() && sources.size() != o.collect.size())
    throw ValueError("--collect: a directory name is empty");
  const SweepPlan plan = read_sweep_json(o.out_dir);
  const RunDir held(plan.out_dir, sweep_dir_spec());
  const std::string x_key = chart_x_key(o, plan.spec.grid);
  const std::map<std::string, std::string> planned = planned_configs(plan);
  if (sources.empty()) {
    // DIR/runs: a run trained with other options than the plan's is named and not counted.
    const std::map<std::string, std::string> foreign = runs_from_elsewhere(plan, planned);
    std::map<std::string, fs::path> located;
    for (const SweepRun& run : plan.runs)
      if (!foreign.count(run.name)) located[run.name] = plan.run_dir(run);
    std::map<std::string, std::string> notes;
    for (const auto& [name, text] : foreign) notes[name] = text.substr(text.find(": from another sweep") + 2);
    summarise(plan, o, x_key, notes, &located);
    return report_unfinished(plan, notes, located);
  }
  const CollectedRuns found = collect_sweep_runs(plan, sources, planned);
  for (const std::string& remark : found.remarks) std::cout << "note: " << remark << "\n";
  std::cout << "collected " << found.finished << " finished of " << plan.runs.size() << " runs from "
            << sources.size() << (sources.size() == 1 ? " directory" : " directories") << std::endl;
  summarise(plan, o, x_key, found.notes, &found.run_dirs);
  return report_unfinished(plan, found.notes, found.run_dirs);
}

// The flags that go with --emit-jobs / --emit-slurm; ValueError (a usage error) otherwise.
void check_emit_flags(const AblateOptions& o) {
  check_slurm_flags(o.slurm, !o.emit_slurm.empty());
  if (o.emit_jobs.empty() && o.emit_slurm.empty()) return;
  if (!o.emit_jobs.empty() && o.emit_jobs == o.emit_slurm)
    throw ValueError("--emit-jobs and --emit-slurm name the same file " + quote_clipped(o.emit_jobs) +
                     ": give two files");
  // A directory, device, FIFO or socket, another program's file, a missing directory: refused
  // (the file kept) before the sweep is planned.
  check_emit_file("--emit-jobs", o.emit_jobs, false);
  check_emit_file("--emit-slurm", o.emit_slurm, true);
  if (o.emit_slurm.empty() && o.jobs != 0)
    throw ValueError("-j with --emit-jobs: the jobs file runs nothing itself; give the number at once to the "
                     "scheduler (parallel -j N < FILE), or use -j with --emit-slurm (at most N array tasks at once)");
}

// --out DIR without sweep.json is a new sweep: refused when DIR already holds a file the sweep writes
// (another program's summary.csv would be replaced).
void refuse_foreign_outputs(const fs::path& dir, const std::string& flag_value) {
  std::error_code ec;
  if (fs::exists(dir / "sweep.json", ec)) return;
  std::string found;
  for (const char* name : {"summary.csv", "summary.md", "chart.svg", "runs"})
    if (fs::exists(dir / name, ec)) found += (found.empty() ? "" : ", ") + std::string(name);
  if (!found.empty())
    throw ValueError("--out " + quote_clipped(flag_value) + ": not a sweep directory (no sweep.json) but it holds " +
                     found + ", which a sweep writes; choose another --out");
}

int sweep(const AblateOptions& o) {
  // 1. The plan, checked completely before anything runs (usage errors, exit 2).
  SweepSpec spec;
  for (const std::string& text : o.grid) spec.grid.push_back(parse_grid_axis(text));
  if (!o.seeds.empty()) spec.seeds = parse_seeds(o.seeds);
  spec.base_flags = o.train_flags;
  validate_sweep(spec);  // duplicates, seed, conflicts with the flags after --
  spec.boolean_flags = boolean_grid_flags(spec.grid);
  const SweepPlan plan = plan_sweep(spec, o.out_dir);
  const std::string x_key = chart_x_key(o, spec.grid);
  check_emit_flags(o);
  const std::map<std::string, std::string> planned = planned_configs(plan);  // every run as train reads it
  if (fs::exists(plan.out_dir / "sweep.json")) {
    const std::string difference = sweep_difference(read_sweep_json(plan.out_dir).spec, spec);
    if (!difference.empty())
      throw ValueError(o.out_dir + " holds a different sweep (" + difference +
                       "); use another --out, or remove its sweep.json and runs/ to start over");
  }
  refuse_foreign_outputs(plan.out_dir, o.out_dir);
  // The sweep directory is ours until the end; its finished runs are kept (and skipped).
  const RunDir held(plan.out_dir, sweep_dir_spec());
  refuse_runs_from_elsewhere(runs_from_elsewhere(plan, planned),
                             "remove them to train them again, or use another --out");
  const std::string exe = executable_path();
  if (!o.emit_jobs.empty() || !o.emit_slurm.empty())  // a word no job file can hold: refused before any file
    for (const SweepRun& run : plan.runs) job_command(exe, plan, run, 0, fs::current_path());
  write_sweep_json(plan, exe);

  // 2. What is left to do.
  std::vector<std::size_t> todo;
  std::size_t finished = 0;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    if (run_state(plan.run_dir(plan.runs[i])) == RunState::Finished)
      ++finished;
    else
      todo.push_back(i);
  }
  if (finished > 0) std::cout << "skipping " << finished << " finished runs" << std::endl;
  const std::size_t busy = skip_runs_in_use(plan, todo);

  if (!o.emit_jobs.empty() || !o.emit_slurm.empty()) {
    EmitFiles files{o.emit_jobs, o.emit_slurm, o.jobs, o.slurm};
    // Each task asks for the cores its run uses: --threads when given, else one (SLURM's own default;
    // this machine's core count says nothing of a node's).
    if (files.slurm.cpus_per_task == 0) files.slurm.cpus_per_task = o.job_threads > 0 ? o.job_threads : 1;
    emit_run_commands(exe, plan, todo, o.job_threads, files, "ablate");
    std::cout << "then: headlab ablate --out " << shell_quote(o.out_dir)
              << " --collect (or --collect D1 D2 ... with the run directories copied back from each machine)"
              << std::endl;
    return 0;
  }

  // 3. Run, then summarise whatever is finished.
  const std::size_t jobs = o.jobs == 0 ? 1 : o.jobs;
  std::cout << "sweep: " << plan.runs.size() << " runs, " << todo.size() << " to run, " << jobs
            << " at a time; logs in " << (plan.out_dir / "runs").string() << "/<name>/log.txt" << std::endl;
  const SweepOutcome outcome = run_all(exe, plan, todo, jobs);
  summarise(plan, o, x_key, outcome.notes);
  if (outcome.stopped) {
    std::cerr << "headlab ablate: interrupted; " << outcome.interrupted
              << " runs stopped (those that had begun training saved a checkpoint). Run the same command again to "
                 "resume the sweep.\n";
    return 130;
  }
  if (outcome.failed > 0) {
    std::cerr << "headlab ablate: " << outcome.failed << " of " << todo.size()
              << " runs failed (see FAILED above); run the same command again to retry them\n";
    return 1;
  }
  if (busy > 0) {
    std::cerr << "headlab ablate: " << busy << " runs are in progress in another process (busy above); "
              << "run the same command (or --collect) again when they end\n";
    return 1;
  }
  return 0;
}

}  // namespace

int run_ablate(const AblateOptions& o) {
  try {
    return !o.collect.empty() ? collect(o) : sweep(o);
  } catch (const ValueError& e) {  // the flags, the grid or DIR do not make a sweep: nothing ran
    std::cerr << "headlab ablate: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace headlab::cli
