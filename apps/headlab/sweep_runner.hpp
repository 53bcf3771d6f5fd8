// sweep_runner.hpp: starting the `headlab train` runs of a plan as child processes, for `headlab
// ablate` and `headlab study run` (the plan itself is headlab/lab/sweep.hpp).
//
// A run is this executable started again as
//   headlab --threads T train <the run's train_args> [--resume]
// with stdout and stderr in RUN_DIR/log.txt. Up to `jobs` runs go at once (posix_spawn, then
// waitpid); the children share our process group, so a Ctrl-C in the terminal reaches them too:
// each saves its checkpoint and exits 130, and a SIGINT / SIGTERM sent to this process alone is
// passed on to them.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "headlab/lab/sweep.hpp"
#include "headlab/train/options.hpp"

namespace headlab::cli {

// This program's path (/proc/self/exe): the runs start it again. IOError when unknown.
std::string executable_path();

// Parses and validates one run's arguments exactly as `headlab train` will, so that a bad value
// (heads=3 with d_model 64, a typo) stops a sweep before any run starts. Returns the options the
// run will have (its config.ini is their to_config_ini()). ValueError naming the run.
TrainOptions check_train_arguments(const SweepRun& run);

struct SweepOutcome {
  std::map<std::string, std::string> notes;  // run name -> "failed: exit 1", "interrupted", ...
  std::size_t failed = 0, interrupted = 0;
  bool stopped = false;  // a SIGINT / SIGTERM arrived
};

// Runs `todo` (indices into plan.runs), at most `jobs` at once, until all have ended or a stop
// signal arrives (then no new run starts and the running ones are waited for). Each run gets
// `threads` threads, or with 0 its share of this process's (at least one), unless its own flags
// name --threads. A run that left a checkpoint resumes (--resume); a started one starts over.
SweepOutcome run_all(const std::string& exe, const SweepPlan& plan, const std::vector<std::size_t>& todo,
                     std::size_t jobs, int threads = 0);

}  // namespace headlab::cli
