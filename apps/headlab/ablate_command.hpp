// ablate_command.hpp: `headlab ablate`, a sweep of `headlab train` runs over a grid of flags x seeds.
//
//   headlab ablate --out DIR --grid heads=1,2,4,8 --grid gate=none,headwise [--seeds 1,2,3] [-j N]
//                  [--metric valid_loss] [--x heads] [--emit-jobs FILE] [--emit-slurm FILE]
//                  -- <flags for every headlab train run>
//   headlab ablate --out DIR --collect      (re)write the summary from whatever runs are finished
//   headlab ablate --out DIR --collect D1 D2 ...   the same from runs made elsewhere and copied to
//                                           D1, D2, ... (headlab/lab/sweep_collect.hpp)
//
// The plan, the run states and the statistics are headlab/lab/sweep.hpp; this file
// reads the flags and starts the runs (this same executable, `train`, up to -j
// at a time), each writing DIR/runs/<name>/ and its log there.
//
// Exit status: 0 all runs finished; 1 a run failed (the others still run) or a
// file cannot be used; 2 a usage error (bad --grid, a flag both in the grid and
// after `--`, DIR holding a different sweep, ...), before anything runs;
// 130 interrupted (SIGINT / SIGTERM): the runs save their checkpoints, and the
// same command again resumes them. A run directory holding a run of other options ("from another
// sweep") is refused (2), one that another process holds now (a run in progress) is left alone and
// named (exit 1 when the others are done). --emit-* exit 0 when their files are written; --collect
// exits 0 when every run is finished, 1 naming each missing or failed run with the last line of its
// log (the summary of the finished ones is still written), 2 on a usage error or collected runs that
// do not fit the sweep, 1 on a file that cannot be read or written.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "headlab/lab/sweep.hpp"

namespace CLI {
class App;
}

namespace headlab::cli {

struct AblateOptions {
  std::string out_dir;
  std::vector<std::string> grid;         // one "KEY=V1,V2,..." per --grid
  std::string seeds;                     // "1,2,3"; "" = seed 1
  std::size_t jobs = 0;                  // runs at the same time; 0 = not given (1; no limit for --emit-slurm)
  std::string metric = "valid_loss";     // the chart's y (a summary.json field)
  std::string x_key;                     // the chart's x (a grid key); "" = headlab::default_x_key
  std::string emit_jobs;                 // write the commands of the unfinished runs here instead of running them
  std::string emit_slurm;                // write them as a SLURM array script here instead of running them
  int job_threads = 0;                   // --threads given to headlab: every emitted command gets it;
                                         // 0 = not given (each run uses its machine's default)
  // --collect [D...]: only summarise DIR (its sweep.json says what the runs are), from DIR/runs
  // or from the directories given. Empty = not given; {""} = given without directories.
  std::vector<std::string> collect;
  std::vector<std::string> train_flags;  // everything after `--`, given to every run
  SlurmScriptText slurm;                 // --cpus-per-task, --time, --mem, --partition, --account
};

// Adds the `ablate` subcommand to `app`, its flags writing into `options`
// (which must outlive the parse). Returns the subcommand (true once parsed).
CLI::App* add_ablate_command(CLI::App& app, AblateOptions& options);

// Plans, runs and summarises the sweep; returns the exit status above.
int run_ablate(const AblateOptions& options);

}  // namespace headlab::cli
