// sweep_runner.hpp: starting the `headlab train` runs of a plan as child processes, for `headlab
// ablate` and `headlab study run` (the plan itself is headlab/lab/sweep.hpp).
//
// A run is this executable started again as
//   headlab --threads T train <the run's train_args> --resume-or-start
// with stdout and stderr in RUN_DIR/log.txt. Up to `jobs` runs go at once (posix_spawn, then
// waitpid); the children share our process group, so a Ctrl-C in the terminal reaches them too:
// each saves its checkpoint and exits 130, and a SIGINT / SIGTERM sent to this process alone is
// passed on to them.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "headlab/lab/sweep.hpp"

namespace CLI {
class App;
}
#include "headlab/train/options.hpp"

namespace headlab::cli {

// This program's path (/proc/self/exe): the runs start it again. IOError when unknown.
std::string executable_path();

// Parses and validates one run's arguments exactly as `headlab train` will, so that a bad value
// (heads=3 with d_model 64, a typo) stops a sweep before any run starts. Returns the options the
// run will have (its config.ini is their to_config_ini()). ValueError naming the run.
TrainOptions check_train_arguments(const SweepRun& run);

// The config.ini text each planned run writes (run name -> text), from check_train_arguments: a run
// whose flags train would refuse stops the sweep here.
std::map<std::string, std::string> planned_configs(const SweepPlan& plan);

// Each run directory of the plan that holds a config.ini other than the plan's, as
// "DIR/runs/NAME: from another sweep: steps=60 there, steps=30 in this sweep" (name -> text).
// Such a run is never counted as the plan's, resumed or replaced.
std::map<std::string, std::string> runs_from_elsewhere(const SweepPlan& plan,
                                                       const std::map<std::string, std::string>& planned);
// ValueError listing them (at most 5, then how many more), ending with `advice`; nothing when none.
void refuse_runs_from_elsewhere(const std::map<std::string, std::string>& foreign, const std::string& advice);

// Takes out of `todo` the runs whose directory a live process holds now (a train running there,
// started by another sweep or an array task: its .lock), saying so on stdout. They are neither
// started, emitted nor touched. Returns how many.
std::size_t skip_runs_in_use(const SweepPlan& plan, std::vector<std::size_t>& todo);

struct SweepOutcome {
  std::map<std::string, std::string> notes;  // run name -> "failed: exit 1", "interrupted", ...
  std::size_t failed = 0, interrupted = 0;
  bool stopped = false;  // a SIGINT / SIGTERM arrived
};

// Runs `todo` (indices into plan.runs), at most `jobs` at once, until all have ended or a stop
// signal arrives (then no new run starts and the running ones are waited for). Each run gets
// `threads` threads, or with 0 its share of this process's (at least one), unless its own flags
// name --threads. Every run is started with --resume-or-start (a run that left a checkpoint goes
// on, any other starts over) and its log.txt is appended to: a failed attempt's log stays.
SweepOutcome run_all(const std::string& exe, const SweepPlan& plan, const std::vector<std::size_t>& todo,
                     std::size_t jobs, int threads = 0);

// --emit-jobs FILE / --emit-slurm FILE: the job lines of the runs in `todo` (headlab/lab/sweep.hpp:
// job_command, each with `threads`, from this process's working directory) written for GNU parallel
// or a SLURM array. Nothing in the runs' directories changes. `command` names the writer in
// messages ("ablate", "study run").
struct EmitFiles {
  std::string jobs_file, slurm_file;
  std::size_t max_running = 0;  // -j: array tasks at once (0: no limit)
  SlurmScriptText slurm;        // writer, then, cpus_per_task, time, mem, partition, account
};
void emit_run_commands(const std::string& exe, const SweepPlan& plan, const std::vector<std::size_t>& todo,
                       int threads, const EmitFiles& files, const std::string& command);

// --emit-jobs / --emit-slurm FILE that exists: replaced only when it is empty or an earlier jobs
// file (its first line a job line) or SLURM script of headlab (its second line "# headlab ...");
// any other file, or one of `inputs` (a recipe), is a ValueError naming the flag, before any run is
// started or emitted; so is a directory, device, FIFO or socket (check_output_file), and a file
// whose directory does not exist. "" is no file (nothing checked).
void check_emit_file(const char* flag, const std::string& file, bool slurm,
                     const std::vector<std::filesystem::path>& inputs = {});

// The SLURM flags of `ablate` and `study run`: --cpus-per-task, --time, --mem, --partition,
// --account (each writes an #SBATCH line of --emit-slurm's script; see SlurmScriptText).
void add_slurm_flags(CLI::App* command, SlurmScriptText& slurm);
// ValueError when one of them is given without --emit-slurm, or has a value SLURM would not take.
void check_slurm_flags(const SlurmScriptText& slurm, bool emit_slurm);

}  // namespace headlab::cli
