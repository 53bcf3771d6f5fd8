// sweep on a cluster: the SLURM array script, job commands that cannot be one line, and runs
// collected from other directories (headlab/lab/sweep.hpp, headlab/lab/sweep_collect.hpp). The runs
// are summary.json and config.ini files written by hand; real runs on the command line are in
// tests/cli/ablate_cluster.sh.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "headlab/lab/sweep.hpp"
#include "headlab/lab/sweep_collect.hpp"
#include "headlab/train/options.hpp"
#include "sweep_test_files.hpp"
#include "test_support.hpp"

namespace test_sweep_cluster {

using namespace headlab;
using namespace headlab::testing;  // TempDir, write_file, value_error
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// heads=1,2 x seeds 1,2 planned in `dir`.
SweepPlan two_by_two(const fs::path& dir) {
  SweepSpec spec;
  spec.grid.push_back(parse_grid_axis("heads=1,2"));
  spec.seeds = {1, 2};
  return plan_sweep(spec, dir);
}

// The config.ini a run of `two_by_two` would write (a short stand-in for TrainOptions::to_config_ini).
std::string config_of(const SweepRun& run, int steps = 30) {
  return "# written by hand\n[train]\nheads=" + run.values[0] + "\nseed=" + std::to_string(run.seed) +
         "\nsteps=" + std::to_string(steps) + "\n";
}

std::map<std::string, std::string> planned_configs(const SweepPlan& plan) {
  std::map<std::string, std::string> configs;
  for (const SweepRun& run : plan.runs) configs[run.name] = config_of(run);
  return configs;
}

// A finished run (valid_loss = heads + seed / 10) or, `finished` false, one with only a log, in `dir`.
void write_run(const fs::path& dir, const SweepRun& run, bool finished = true, int steps = 30) {
  write_file(dir / "config.ini", config_of(run, steps));
  if (finished)
    write_file(dir / "summary.json", "{\"valid_loss\": " + std::to_string(std::stoi(run.values[0]) + run.seed / 10.0) + "}");
  else
    write_file(dir / "log.txt", "killed\n");
}

}  // namespace

TEST_CASE("sweep cluster: the SLURM script is an array of one task per command, chosen by the task id") {
  TempDir dir;
  const SweepPlan plan = two_by_two(dir.path / "heads");
  const std::vector<std::string> commands = {"echo zero", "echo one", "echo two"};
  const std::string script = slurm_array_script(plan, commands, 0);
  CHECK(script.rfind("#!/bin/bash\n", 0) == 0);
  CHECK(contains(script, "\n#SBATCH --array=0-2\n"));
  CHECK(contains(script, "\n#SBATCH --job-name=headlab-heads\n"));
  CHECK(contains(script, "\n#SBATCH --output=" + (plan.out_dir / "slurm").string() + "/%A_%a.out\n"));
  CHECK(contains(script, "\ncase \"$SLURM_ARRAY_TASK_ID\" in\n  0) echo zero ;;\n  1) echo one ;;\n  2) echo two ;;\n"));
  CHECK(contains(script, "is not a task of this array (0-2)\" >&2; exit 2 ;;\nesac\n"));
  // The #SBATCH lines come before the first command (sbatch reads no further).
  CHECK(script.find("#SBATCH --output") < script.find("\nif "));
  CHECK(contains(slurm_array_script(plan, commands, 2), "\n#SBATCH --array=0-2%2\n"));
  CHECK(slurm_output_dir(plan) == plan.out_dir / "slurm");
  CHECK(contains(value_error([&] { slurm_array_script(plan, {}, 0); }), "at least one run"));
}

TEST_CASE("sweep cluster: the SLURM script asks for the resources given and gives the runs SLURM's cores") {
  TempDir dir;
  const SweepPlan plan = two_by_two(dir.path / "heads");
  SlurmScriptText extra;
  CHECK(!contains(slurm_array_script(plan, {"true"}, 0, extra), "HEADLAB_THREADS"));
  extra.cpus_per_task = 4;
  extra.time = "1-02:00:00";
  extra.mem = "4G";
  extra.partition = "short,long";
  extra.account = "my_group";
  const std::string script = slurm_array_script(plan, {"true"}, 0, extra);
  for (const char* line : {"\n#SBATCH --cpus-per-task=4\n", "\n#SBATCH --time=1-02:00:00\n", "\n#SBATCH --mem=4G\n",
                           "\n#SBATCH --partition=short,long\n", "\n#SBATCH --account=my_group\n"})
    CHECK(contains(script, line));
  CHECK(script.find("#SBATCH --account") < script.find("\nif "));  // sbatch reads no further
  // A run whose line names no --threads uses the cores of its task.
  CHECK(contains(script, "\nexport HEADLAB_THREADS=\"${SLURM_CPUS_PER_TASK:-4}\"\ncase "));
  // A value that could end the #SBATCH line or start another option is refused, naming the flag.
  for (const auto& [field, value, flag] :
       {std::tuple{&SlurmScriptText::time, "2:00 --wrap=x", "--time"}, std::tuple{&SlurmScriptText::mem, "4G\n#", "--mem"},
        std::tuple{&SlurmScriptText::partition, "a b", "--partition"}, std::tuple{&SlurmScriptText::account, "x;y", "--account"}}) {
    SlurmScriptText bad = extra;
    bad.*field = value;
    const std::string error = value_error([&] { slurm_array_script(plan, {"true"}, 0, bad); });
    CHECK(error.rfind(std::string(flag) + " ", 0) == 0);
    CHECK(contains(error, "not a value SLURM takes"));
  }
}

TEST_CASE("sweep cluster: the last line of a run's log says why it stopped") {
  TempDir dir;
  CHECK(last_log_line(dir.path).empty());  // no log
  write_file(dir.path / "log.txt", "step 1\nstep 2\nheadlab: error: out of memory\n\n");
  CHECK(last_log_line(dir.path) == "headlab: error: out of memory");
  write_file(dir.path / "log.txt", std::string(100000, 'x') + "\nprogress 10%\rprogress 20%\x1b[0m\n");
  CHECK(last_log_line(dir.path) == "progress 20%?[0m");
  write_file(dir.path / "log.txt", std::string(300, 'y'));
  CHECK(last_log_line(dir.path) == std::string(200, 'y') + "...");
}

TEST_CASE("sweep cluster: a sweep path an #SBATCH line cannot hold sends the task output to the submit directory") {
  TempDir dir;
  for (const std::string name : {"my sweep", "100%", "it's"}) {
    const SweepPlan plan = two_by_two(dir.path / name);
    CHECK(slurm_output_dir(plan).empty());
    const std::string script = slurm_array_script(plan, {"true"}, 0);
    CHECK(contains(script, "\n#SBATCH --output=headlab-ablate-%A_%a.out\n"));
    CHECK(contains(script, "#SBATCH --job-name=headlab-"));
    CHECK(!contains(script, "#SBATCH --job-name=headlab-" + name));  // spaces, % and ' become _
  }
}

TEST_CASE("sweep cluster: a job command refuses a word with a line break or another control character") {
  TempDir dir;
  for (const std::string& bad : {std::string("a\nb"), std::string("a\rb"), std::string("a\tb"), std::string("a\x1b[31m")}) {
    SweepSpec spec;
    spec.grid.push_back(parse_grid_axis("heads=1,2"));
    spec.base_flags = {"--train", "data/" + bad + ".tsv"};
    const SweepPlan plan = plan_sweep(spec, dir.path / "s");
    const std::string error = value_error([&] { job_command("/opt/headlab", plan, plan.runs[0], 0, "/w"); });
    CHECK(contains(error, "run heads=1,seed=1: the argument 'data/a\\x"));
    CHECK(contains(error, "holds a control character"));
  }
  TempDir other;
  const SweepPlan plan = two_by_two(other.path / "s");
  CHECK(contains(value_error([&] { job_command("/opt/head\nlab", plan, plan.runs[0], 0, "/w"); }), "/opt/head\\x0Alab"));
}

TEST_CASE("sweep cluster: runs collected from folders, a sweep copy and a run directory are summarised as one sweep") {
  TempDir dir;
  const SweepPlan plan = two_by_two(dir.path / "sweep");
  // runs[0] alone as a run directory, runs[1] in a folder of runs, runs[2] in a sweep copy's runs/,
  // runs[3] nowhere; an unfinished copy of runs[1] beside the finished one; a folder that is no run.
  write_run(dir.path / "alone" / plan.runs[0].name, plan.runs[0]);
  write_run(dir.path / "node1" / plan.runs[1].name, plan.runs[1]);
  write_run(dir.path / "node2" / "runs" / plan.runs[2].name, plan.runs[2]);
  write_run(dir.path / "node2" / "runs" / plan.runs[1].name, plan.runs[1], /*finished=*/false);
  fs::create_directories(dir.path / "node1" / "logs");
  const CollectedRuns found = collect_sweep_runs(
      plan, {dir.path / "alone" / plan.runs[0].name, dir.path / "node1", dir.path / "node2"}, planned_configs(plan));
  CHECK(found.finished == 3);
  CHECK(found.run_dirs.at(plan.runs[0].name) == dir.path / "alone" / plan.runs[0].name);
  CHECK(found.run_dirs.at(plan.runs[1].name) == dir.path / "node1" / plan.runs[1].name);  // the finished copy
  CHECK(found.run_dirs.at(plan.runs[2].name) == dir.path / "node2" / "runs" / plan.runs[2].name);
  CHECK(found.run_dirs.count(plan.runs[3].name) == 0);
  CHECK(found.notes.at(plan.runs[3].name) == "not found in the 3 directories");
  REQUIRE(found.remarks.size() == 2);
  CHECK(contains(found.remarks[0], "skipped '" + (dir.path / "node1" / "logs").string() + "': not a run directory"));
  CHECK(contains(found.remarks[1], "not read: '" + (dir.path / "node2" / "runs" / plan.runs[1].name).string() +
                                       "' (started)"));

  // The summary reads the runs where they were found, and only there (plan.run_dir holds nothing).
  const SweepSummary summary = summarize_sweep(plan, found.notes, &found.run_dirs);
  REQUIRE(summary.cells.size() == 2);
  CHECK(summary.cells[0].finished == 2);
  CHECK(summary.cells[0].metrics.at("valid_loss").mean == doctest::Approx((1.1 + 1.2) / 2));
  CHECK(summary.cells[1].finished == 1);
  CHECK(summary.cells[1].metrics.at("valid_loss").mean == doctest::Approx(2.1));
  REQUIRE(summary.unfinished.size() == 1);
  CHECK(summary.unfinished[0].note == "not found in the 3 directories");
  // A run found only unfinished is named with its directory.
  const CollectedRuns partial = collect_sweep_runs(plan, {dir.path / "node2"}, planned_configs(plan));
  CHECK(partial.notes.at(plan.runs[1].name) == "started, in '" + (dir.path / "node2" / "runs" / plan.runs[1].name).string() + "'");
}

TEST_CASE("sweep cluster: collecting refuses runs of another grid, with other flags, finished twice or unnamed") {
  TempDir dir;
  const SweepPlan plan = two_by_two(dir.path / "sweep");
  const auto configs = planned_configs(plan);
  write_run(dir.path / "a" / plan.runs[0].name, plan.runs[0]);
  const auto refusal = [&](std::vector<fs::path> sources) {
    return value_error([&] { collect_sweep_runs(plan, sources, configs); });
  };

  SweepSpec other_spec;  // heads=4: another grid
  other_spec.grid.push_back(parse_grid_axis("heads=4"));
  const SweepPlan other = plan_sweep(other_spec, dir.path / "other");
  write_run(dir.path / "b" / other.runs[0].name, other.runs[0]);
  const std::string foreign = refusal({dir.path / "a", dir.path / "b"});
  CHECK(contains(foreign, "1 problem with the runs found for the sweep"));
  CHECK(contains(foreign, "'" + (dir.path / "b" / "heads=4,seed=1").string() +
                              "': not a run of this sweep (its grid is heads=1,2 with seeds 1,2"));

  write_run(dir.path / "c" / plan.runs[1].name, plan.runs[1], true, /*steps=*/20);
  CHECK(contains(refusal({dir.path / "c"}), "heads=1,seed=2': from another sweep: steps=20 there, steps=30 in this sweep"));

  write_run(dir.path / "d" / plan.runs[0].name, plan.runs[0]);
  CHECK(contains(refusal({dir.path / "a", dir.path / "d"}),
                 "run heads=1,seed=1 is finished in 2 places: '" + (dir.path / "a" / plan.runs[0].name).string() +
                     "' and '" + (dir.path / "d" / plan.runs[0].name).string() + "'; keep one"));

  write_file(dir.path / "e" / plan.runs[2].name / "summary.json", "{\"valid_loss\": 1}");
  CHECK(contains(refusal({dir.path / "e"}), "finished but has no config.ini"));

  write_file(dir.path / "f" / plan.runs[2].name / "config.ini", "[train]\nno such line\n");
  CHECK(contains(refusal({dir.path / "f"}), "its config.ini cannot be read"));

  // All problems at once, each with its directory.
  const std::string all = refusal({dir.path / "a", dir.path / "b", dir.path / "c", dir.path / "d"});
  CHECK(contains(all, "3 problems"));

  CHECK(contains(refusal({dir.path / "nowhere"}), "--collect '" + (dir.path / "nowhere").string() + "': no such directory"));
  CHECK(contains(refusal({dir.path / "a", dir.path / "a" / "."}), "is given twice"));
  CHECK(contains(refusal({}), "give the directories"));
}

TEST_CASE("sweep collect: a key a run's config.ini lacks matches only when the planned value is its default") {
  // A run trained before `unordered-answer` existed has no such line; it did what the default does.
  TempDir dir("config_difference");
  TrainOptions planned = TrainOptions::defaults_for(Task::recall);
  std::string old_text;  // the planned config.ini without its unordered-answer line
  {
    std::istringstream in(planned.to_config_ini());
    for (std::string line; std::getline(in, line);)
      if (line.rfind("unordered-answer=", 0) != 0) old_text += line + "\n";
  }
  REQUIRE(old_text.size() < planned.to_config_ini().size());
  write_file(dir.path / "config.ini", old_text);
  CHECK(config_difference(planned.to_config_ini(), dir.path / "config.ini").empty());
  planned.unordered_answer = true;  // not what the old run did: a difference, named
  CHECK(contains(config_difference(planned.to_config_ini(), dir.path / "config.ini"),
                 "unordered-answer missing there, unordered-answer=true in this sweep"));
  planned.unordered_answer = false;
  planned.steps += 1;  // a key the file holds is still compared
  CHECK(contains(config_difference(planned.to_config_ini(), dir.path / "config.ini"), "steps="));
}

TEST_CASE("sweep collect: a run's config.ini without heads-in-place matches either path (its default is not the old one)") {
  // Runs before 2026-12-06 took the composed steps (a recipe pins false), runs of 12-06/07 the
  // in-place heads (true); neither wrote the key.
  TempDir dir("config_heads_in_place");
  TrainOptions planned = TrainOptions::defaults_for(Task::recall);
  std::string old_text;
  {
    std::istringstream in(planned.to_config_ini());
    for (std::string line; std::getline(in, line);)
      if (line.rfind("heads-in-place=", 0) != 0) old_text += line + "\n";
  }
  REQUIRE(old_text.size() < planned.to_config_ini().size());
  write_file(dir.path / "config.ini", old_text);
  planned.heads_in_place = false;
  CHECK(config_difference(planned.to_config_ini(), dir.path / "config.ini").empty());
  planned.heads_in_place = true;
  CHECK(config_difference(planned.to_config_ini(), dir.path / "config.ini").empty());
  write_file(dir.path / "config.ini", planned.to_config_ini());  // a run that names its path is held to it
  planned.heads_in_place = false;
  CHECK(contains(config_difference(planned.to_config_ini(), dir.path / "config.ini"), "heads-in-place=true there"));
}
}  // namespace test_sweep_cluster
