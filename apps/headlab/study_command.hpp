// study_command.hpp: `headlab study`, a study run from its pinned recipe (headlab/lab/study.hpp).
//
//   headlab study run RECIPE --runs DIR [-j N] [--quick] [--emit-jobs FILE] [--emit-slurm FILE]
//       trains every cell x seed of RECIPE into DIR/runs/<cell>-seed<S>, N at a time, each with the
//       recipe's thread count; finished runs are skipped (and checked to hold the recipe's options),
//       a stopped one resumes. --emit-jobs / --emit-slurm write the commands of the unfinished runs
//       for GNU parallel or a SLURM array instead (headlab/lab/sweep.hpp quotes every word).
//   headlab study report RECIPE --runs DIR [--out DIR2] [--commit TEXT] [--quick]
//       reads the finished runs: DIR2 (default DIR) gets runs.csv, summary.csv, comparisons.csv,
//       report.md and chart.svg; the comparisons and verdicts are printed. A run whose config.ini
//       differs from what the recipe gives it is refused (--quick: the quick plan, and report.md
//       says it is a check of the pipeline, not a result); no finished run at all is refused.
//   headlab study report RECIPE --from-csv RUNS.CSV --out DIR2
//       the same statistics from a runs.csv that a study's own measuring script wrote (all but
//       runs.csv written).
//
// Refused before anything runs (exit 2): a recipe that does not pin every train option (a later
// default would change its runs), a cell whose flags train would refuse, DIR holding a finished run
// trained with other options. Exit 1: a run failed, a file cannot be read or written; 130 when
// interrupted (the same command resumes).
#pragma once

#include <cstddef>
#include <string>

#include "headlab/lab/sweep.hpp"

namespace CLI {
class App;
}

namespace headlab::cli {

struct StudyOptions {
  std::string recipe;
  std::string runs;        // --runs DIR
  std::size_t jobs = 1;    // -j
  bool quick = false;      // the recipe's quick flags and first two seeds (run and report)
  std::string emit_jobs, emit_slurm;
  SlurmScriptText slurm;   // run: --cpus-per-task (default: the recipe's threads), --time, --mem, ...
  std::string out;         // report: where the files go ("" = DIR)
  std::string from_csv;    // report: a measured runs.csv instead of the run directories
  std::string commit;      // report: the commit of the binary that trained, for runs.csv
  bool overwrite = false;  // report: replace report files in an --out that is neither the runs' nor the recipe's folder
};

// Adds `study` with its `run` and `report` subcommands; returns `study` (true once parsed).
CLI::App* add_study_command(CLI::App& app, StudyOptions& options);
int run_study(const CLI::App& study, const StudyOptions& options);

}  // namespace headlab::cli
