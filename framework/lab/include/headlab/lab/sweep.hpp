// headlab/lab/sweep.hpp: ablation sweeps, a grid of `headlab train` flags times seeds.
//
//   headlab ablate --out DIR --grid heads=1,2,4 --grid gate=none,headwise --seeds 1,2,3 -- --task copy
//
// The plan is the cartesian product of the grid, the first key varying slowest,
// times the seeds: 3 x 2 x 3 = 18 runs, each with its own run directory
//   DIR/runs/heads=1,gate=none,seed=1   DIR/runs/heads=1,gate=none,seed=2   ...
// Running them is the command line's job (apps/headlab/ablate_command.cpp).
// This file holds everything that needs no process: reading the grid, expanding
// the plan, DIR/sweep.json, telling finished runs from unfinished ones, and the
// statistics over seeds written as DIR/summary.csv, DIR/summary.md and DIR/chart.svg.
//
// What a sweep reads from a run: DIR/runs/<name>/summary.json, a JSON object
// written by the trainer at the end of a run. A run is finished when that file
// exists and its "interrupted" field is absent or false. Every other top-level
// field that is a number is a metric ("valid_loss", "valid_accuracy",
// "valid_bleu", "parameters", "flops_per_token", "train_seconds", "steps", ...);
// null counts as NaN (a diverged loss stays visible); texts, arrays and objects
// are ignored.
//
// Errors (see errors.hpp):
//   ValueError   a bad grid, seed list or flag combination; the message names
//                the flag (--grid, --seeds, or the train flag) and the value
//   IOError      sweep.json or an output file cannot be written
//   FormatError  sweep.json is not what this file writes (names the file)
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace headlab {

// ---------------------------------------------------------------------------
// The grid and the plan
// ---------------------------------------------------------------------------

// One `--grid KEY=V1,V2,...`.
struct GridAxis {
  std::string key;                  // the key as given with '-' -> '_': "kv_heads"
  std::vector<std::string> values;  // in the order given: {"1", "2", "4"}
};

// "heads=1,2,4" -> {"heads", {"1", "2", "4"}}; "kv-heads=1,2" -> {"kv_heads", ...}.
// ValueError (naming --grid and the text) when there is no '=', the key is
// empty or not [A-Za-z0-9_-], a value is empty ("heads=1,,2", "heads="), or a
// value is given twice.
GridAxis parse_grid_axis(const std::string& text);

// "1,2,3" -> {1, 2, 3}. ValueError naming --seeds for an empty list, an entry
// that is not a non-negative integer, or a seed given twice.
std::vector<std::uint64_t> parse_seeds(const std::string& text);

// The `headlab train` flag a grid key sets, from the options table (headlab/train/options.hpp):
// a TrainOptions field ("ff_dim" -> "--ff", "norm_first" -> "--pre-ln") or a flag name
// ("kv-heads" or "kv_heads" -> "--kv-heads"). ValueError naming the key when it is neither.
std::string train_flag_for(const std::string& key);
// True when the train flag ("--pre-ln") takes no value (its grid values are on / off).
bool is_boolean_train_flag(const std::string& flag);

// The train arguments of one grid value:
//   heads=4           -> {"--heads", "4"}
//   head_dim=compute  -> {"--head-dim", "0"}   (0 = d_model / heads: "fixed compute")
//   pre_ln=on / off   -> {"--pre-ln"} / {"--pre-ln=false"}   (only when `boolean_flag`: a flag
//                        without a value; "off" is spelled out so that a task whose default is on,
//                        like the induction task's pre-LN, is still switched off)
// ValueError for a boolean flag's value other than on / off.
std::vector<std::string> grid_value_arguments(const std::string& key, const std::string& value, bool boolean_flag);

// "heads=2,gate=none,seed=1" with every character outside [A-Za-z0-9=,._-]
// replaced by '_': safe as a directory name and in a shell.
std::string sanitize_run_name(const std::string& name);

// What defines a sweep: two invocations with equal specs share their runs.
struct SweepSpec {
  std::vector<GridAxis> grid;            // at least one axis
  std::vector<std::uint64_t> seeds{1};   // at least one
  std::vector<std::string> base_flags;   // the flags after `--`, given to every run verbatim
  // Not part of the identity (and not saved): the train flags that take no
  // value, whose grid values are on / off (the CLI reads them off the real
  // `train` command). Keys are flags: "--pre-ln".
  std::set<std::string> boolean_flags;
};

// Checks a spec; ValueError naming the problem:
//   no --grid at all; a key given twice (also "ff" and "ff_dim", the same flag);
//   "seed" as a grid key (use --seeds); a flag the sweep sets itself (seed,
//   run_dir, resume, progress) in the grid or after `--`; a grid key also given
//   after `--` ("--heads 2" or "--heads=2"); no seeds or a seed twice; two runs
//   whose names become equal once sanitised.
void validate_sweep(const SweepSpec& spec);

struct SweepRun {
  std::string name;                 // "heads=2,gate=none,seed=1" (sanitised)
  std::vector<std::string> values;  // one per grid axis, as given ("compute", not "0")
  std::uint64_t seed = 1;
  // The arguments after `headlab train`, in this order: base flags, grid flags,
  //   --seed S --run-dir <absolute DIR>/runs/<name> --progress none
  // (a run that resumes gets --resume appended when it is started).
  std::vector<std::string> train_args;
};

struct SweepPlan {
  SweepSpec spec;
  std::filesystem::path out_dir;  // absolute
  std::vector<SweepRun> runs;     // grid product (first key slowest) x seeds (fastest)

  std::filesystem::path run_dir(const SweepRun& run) const { return out_dir / "runs" / run.name; }
};

// Validates `spec` and expands it. `out_dir` is made absolute (the run
// directories in the arguments must not depend on the working directory).
SweepPlan plan_sweep(const SweepSpec& spec, const std::filesystem::path& out_dir);

// out_dir/sweep.json: {"version":1, "grid":[{"key":..,"values":[..]}], "seeds":[..],
// "base_flags":[..], "runs":[{"name":.., "seed":.., "values":[..], "argv":[..]}]},
// where argv is the full command line of the run (argv[0] the headlab executable).
void write_sweep_json(const SweepPlan& plan, const std::string& executable);
// Reads it back (the runs keep their saved arguments; out_dir is `out_dir`,
// which may differ from where the sweep was planned: a copied directory).
// IOError if missing, FormatError naming the file if it is not a sweep.json.
SweepPlan read_sweep_json(const std::filesystem::path& out_dir);
// "" when `a` and `b` describe the same sweep (grid, seeds, base flags), else
// what differs, for a message: "the grid differs: heads=1,2 there, heads=1,2,4 here".
std::string sweep_difference(const SweepSpec& saved, const SweepSpec& wanted);

// ---------------------------------------------------------------------------
// Runs on disk
// ---------------------------------------------------------------------------

enum class RunState {
  NotStarted,  // no run directory
  Started,     // a directory, but no checkpoint and no finished summary: starts again from scratch
  Resumable,   // checkpoint.safetensors but no finished summary: restarts with --resume
  Finished,    // summary.json with "interrupted" absent or false
};
RunState run_state(const std::filesystem::path& run_dir);
// The numeric fields of run_dir/summary.json (null read as NaN); empty when the file is missing
// or not a JSON object.
std::map<std::string, double> run_summary_numbers(const std::filesystem::path& run_dir);
// Why run_dir/summary.json, which exists, cannot be read as a summary ("its summary.json is not a
// JSON object", "... is not a regular file", "... is over 1 MiB"); "" when it is missing or readable.
std::string summary_fault(const std::filesystem::path& run_dir);
const char* to_string(RunState state);  // "not started", "started", "resumable", "finished"
// The last line of run_dir/log.txt that is not blank (read from the file's last 64 KiB), at most
// 200 bytes of it, control characters as '?': why a run stopped. "" when there is no log.
std::string last_log_line(const std::filesystem::path& run_dir);

// ---------------------------------------------------------------------------
// Statistics over seeds
// ---------------------------------------------------------------------------

// Mean and sample standard deviation sqrt(sum (v - mean)^2 / (n - 1)).
// n = 0: mean and std NaN; n = 1: std NaN (undefined, printed empty).
struct MetricStats {
  std::size_t n = 0;
  double mean = 0;
  double std = 0;
};
MetricStats mean_std(const std::vector<double>& values);

// One grid cell: the runs of one combination of grid values, over the seeds.
struct SweepCell {
  std::vector<std::string> values;              // one per grid axis
  std::vector<std::string> runs;                // every planned run's name
  std::size_t finished = 0;                     // how many of them are finished
  std::map<std::string, MetricStats> metrics;   // only metrics some finished run of the cell has
};

struct UnfinishedRun {
  std::string name;
  RunState state = RunState::NotStarted;
  std::string note;  // e.g. "failed: exit 1" (from the caller), else empty
};

struct SweepSummary {
  std::vector<GridAxis> grid;
  std::vector<std::uint64_t> seeds;
  std::vector<std::string> metrics;  // column order: the usual ones first, then others as found
  std::vector<SweepCell> cells;      // in plan order
  std::size_t total_runs = 0;
  std::vector<UnfinishedRun> unfinished;
};

// Reads every finished run's summary.json and groups the runs by grid cell (a
// summary.json that is not a JSON object, e.g. cut short, leaves its run unfinished).
// `notes` (run name -> text) marks unfinished runs, e.g. {"heads=2,seed=1", "failed: exit 1"}.
// `located` (run name -> directory), when given, says where each run is instead of
// plan.run_dir(run), and a run missing from it counts as not started: the runs collected from
// other directories (headlab/lab/sweep_collect.hpp).
SweepSummary summarize_sweep(const SweepPlan& plan, const std::map<std::string, std::string>& notes = {},
                             const std::map<std::string, std::filesystem::path>* located = nullptr);

// summary.csv: a header "<grid keys...>,n,<metric>_mean,<metric>_std,..." and one row per cell;
// numbers round-trip exactly; an empty field where a value is undefined (std with n < 2).
std::string summary_csv(const SweepSummary& summary);
// summary.md: a Markdown table whose columns line up, one row per cell, a "mean ± std" column per
// metric (`metric`, the chart's, first; no "± 0" when every seed gave the same value; "(n)" after
// it when only n of the cell's finished runs have the metric), a line "The same in every run: parameters = 1000."
// for the metrics with one value and no spread in every cell (left out of the table), and a line
// naming the runs that are not finished (and why, when known).
std::string summary_markdown(const SweepSummary& summary, const std::string& metric = "");

// The grid key on the chart's x axis when none is asked for: "heads" if it is a
// grid key, else the first key whose values are all numbers, else the first key.
std::string default_x_key(const std::vector<GridAxis>& grid);
// chart.svg: x = the values of `x_key` (their numbers, or for a key with a
// value that is not a number, the value's index, named in the x label), one
// series per combination of the other keys ("gate=headwise"), y = the mean of
// `metric`, error bars = its std, the series 5 pixels apart. A numeric key whose values are
// powers of two spanning a factor >= 4 (heads=1,2,4,8) gets a log2 x axis with ticks at those
// powers only; other positive values spanning a factor >= 10 (lr=0.001,...,0.03) get a log10 x
// axis with 1-2-5 ticks. ValueError if `x_key` is not a grid key.
std::string summary_chart(const SweepSummary& summary, const std::string& x_key, const std::string& metric);

// Writes out_dir/summary.csv, summary.md and chart.svg (IOError if one cannot be written).
void write_sweep_outputs(const std::filesystem::path& out_dir, const SweepSummary& summary,
                         const std::string& x_key, const std::string& metric);

// ---------------------------------------------------------------------------
// Jobs for another scheduler
// ---------------------------------------------------------------------------

// The code is in sweep_jobs.cpp.

// `word` quoted for a POSIX shell: unchanged when it holds only [A-Za-z0-9_./=,:@%+-],
// else in single quotes with each ' written as '\''. (Inside single quotes nothing is special to
// bash, sh or GNU parallel, which hands each line to the shell as it is.)
std::string shell_quote(const std::string& word);
// One line for bash, GNU parallel or a SLURM array, for one run:
//   mkdir -p RUN_DIR && { cd WORKING_DIR && EXE [--threads N] train ARGS... --resume-or-start; } >> RUN_DIR/log.txt 2>&1
// Every line can be run again as it is (a requeued or preempted task, a retry): --resume-or-start
// continues from the run's checkpoint or starts it over, and the log is appended to, never cut.
// `working_dir` (absolute; empty: no cd) is where the sweep was planned, so relative paths after `--`
// (--text base.txt, --config my.ini, and the paths inside that file) mean on a node what they meant
// there. `threads` > 0: --threads N, so that the run on another machine uses the thread count of the
// sweep, and the same seed gives the same numbers.
// ValueError naming the run when a word (the executable, a directory, a flag after `--`) holds a
// control character: a line break would split the command over two lines of the file.
std::string job_command(const std::string& executable, const SweepPlan& plan, const SweepRun& run, int threads,
                        const std::filesystem::path& working_dir);

// A bash script for `sbatch`: a SLURM job array of one task per command, task i running
// commands[i] (the lines of job_command), chosen by $SLURM_ARRAY_TASK_ID in a case statement:
//   #!/bin/bash
//   #SBATCH --job-name=headlab-<sweep directory's name>
//   #SBATCH --array=0-<commands - 1>[%<max_running>]
//   #SBATCH --output=<out_dir>/slurm/%A_%a.out     (%A the job id, %a the task id)
//   case "$SLURM_ARRAY_TASK_ID" in 0) <command 0> ;; 1) ... ;; *) refused, exit 2 ;; esac
// The script's exit status is that of its run. --output is the directory `slurm_output_dir`
// gives (the caller creates it; sbatch does not) when out_dir's path holds only [A-Za-z0-9_./+-]
// (an #SBATCH line is not shell-quoted, and % starts a SLURM pattern); else a file in the
// directory sbatch is run from. `max_running` 0 = no limit. ValueError when `commands` is empty.
// `extra`: who wrote it and what to run after (comments), and the resources each task asks for.
// cpus_per_task > 0: #SBATCH --cpus-per-task=N and `export HEADLAB_THREADS=$SLURM_CPUS_PER_TASK`, so a
// run whose line names no --threads uses the cores SLURM gave it (not every core of the node).
// time, mem, partition, account: an #SBATCH line each when not empty; ValueError naming the flag
// (--time, ...) for a value outside the characters such values use (check_slurm_resources).
struct SlurmScriptText {
  std::string writer;      // "headlab ablate" when empty
  std::string then;        // "headlab ablate --out DIR --collect" when empty
  int cpus_per_task = 0;
  std::string time, mem, partition, account;
};
void check_slurm_resources(const SlurmScriptText& extra);
std::string slurm_array_script(const SweepPlan& plan, const std::vector<std::string>& commands,
                               std::size_t max_running, const SlurmScriptText& extra = {});
// out_dir/slurm, or "" when the path cannot stand in an #SBATCH line (see above).
std::filesystem::path slurm_output_dir(const SweepPlan& plan);

}  // namespace headlab
