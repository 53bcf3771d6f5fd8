// headlab/lab/sweep_collect.hpp: the runs of a sweep made elsewhere, gathered from directories.
//
// On a cluster without a shared disk each node trains some runs of the sweep (the commands of
// `headlab ablate --emit-jobs` / `--emit-slurm`) and their run directories are copied back, one
// folder per node, say:
//   results/node1/heads=1,seed=1/   results/node2/heads=1,seed=2/   results/node2/heads=2,seed=1/ ...
//   headlab ablate --out runs/heads --collect results/node1 results/node2
// then summarises them as if they had run in runs/heads/runs/ (the same summary.csv, summary.md
// and chart.svg; the plan is runs/heads/sweep.json).
//
// Where runs are looked for in each directory D given:
//   D itself, when it holds config.ini or summary.json (D is one run directory);
//   else every subdirectory of D/runs, when there is one (D is a copy of a sweep directory);
//   else every subdirectory of D.
// A subdirectory is a run of the sweep when its name is a planned run's name ("heads=2,seed=1");
// one that is not and holds neither config.ini nor summary.json is skipped (and said so).
//
// Refused (ValueError listing every problem found, "DIR/NAME: why", before anything is written):
//   a D that is not a directory, or the same D twice;
//   a run directory whose name is no run of this sweep ("not a run of this sweep": another grid);
//   a run whose config.ini differs from the planned run's ("from another sweep: steps=60 there,
//     steps=30 in this sweep"), or a finished run without config.ini (nothing tells which run it is);
//   a run finished in two places (both named: keep one).
// Accepted and said so: an unfinished copy next to a finished one (the finished one is read).
// A planned run found nowhere, or only unfinished, stays missing, and the summary names it with
// where it was looked for.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "headlab/lab/sweep.hpp"

namespace headlab {

struct CollectedRuns {
  std::map<std::string, std::filesystem::path> run_dirs;  // planned run name -> the copy to read
  std::map<std::string, std::string> notes;  // planned run name -> "resumable, in DIR", "not found in the 2 directories"
  std::vector<std::string> remarks;          // for the user: copies not read, directories skipped
  std::size_t finished = 0;                  // planned runs with a finished copy
};

// `planned_configs`: planned run name -> the config.ini text that run writes
// (TrainOptions::to_config_ini of its arguments; the CLI parses them as `headlab train` does).
// Only the [train] entries are compared, not comments or spacing.
CollectedRuns collect_sweep_runs(const SweepPlan& plan, const std::vector<std::filesystem::path>& sources,
                                 const std::map<std::string, std::string>& planned_configs);

// "" when the config.ini at `config_path` holds the options of `planned_text` (a config.ini text),
// else what differs: "steps=60 there, steps=30 in this sweep; heads=4 there, heads=2 in this sweep"
// (at most three named). A key the file lacks matches when the planned value is that option's
// default for the planned task (an option added after the run was trained, at its old behaviour).
// ValueError / IOError from reading the file.
std::string config_difference(const std::string& planned_text, const std::filesystem::path& config_path);

}  // namespace headlab
