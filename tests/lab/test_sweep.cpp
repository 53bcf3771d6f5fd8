// sweep: the grid, the plan, run states and job commands behind `headlab ablate`
// (headlab/lab/sweep.hpp); the statistics and summaries are in test_sweep_summary.cpp. Nothing here
// starts a process: the runs' files are written by hand into a directory under the system temp dir
// (removed at scope exit). The command itself, with real runs, is tested in tests/cli/ablate.cmake.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/lab/sweep.hpp"
#include "sweep_test_files.hpp"
#include "test_support.hpp"

namespace test_sweep {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::spec_of;
using headlab::testing::TempDir;
using headlab::testing::value_error;
using headlab::testing::write_file;

namespace {

// The index of `arg` in `args`, or args.size().
std::size_t position(const std::vector<std::string>& args, const std::string& arg) {
  std::size_t i = 0;
  while (i < args.size() && args[i] != arg) ++i;
  return i;
}

}  // namespace

// ---------------------------------------------------------------------------
// Reading the grid
// ---------------------------------------------------------------------------

TEST_CASE("sweep: parse_grid_axis reads KEY=V1,V2,... and writes dashes in keys as underscores") {
  const GridAxis heads = parse_grid_axis("heads=1,2,4,8");
  CHECK(heads.key == "heads");
  CHECK(heads.values == std::vector<std::string>{"1", "2", "4", "8"});
  const GridAxis kv = parse_grid_axis("kv-heads=1");
  CHECK(kv.key == "kv_heads");
  CHECK(kv.values == std::vector<std::string>{"1"});
  CHECK(parse_grid_axis("gate=none,headwise").values == std::vector<std::string>{"none", "headwise"});
}

TEST_CASE("sweep: parse_grid_axis refuses malformed text, naming --grid and the text") {
  for (const std::string bad : {"heads", "heads=", "heads=1,,2", "heads=1,2,", "=1,2", "--heads=1,2", "he ads=1",
                                "heads=1,1"}) {
    CAPTURE(bad);
    const std::string message = value_error([&] { parse_grid_axis(bad); });
    CHECK(message.find("--grid") != std::string::npos);
    CHECK(message.find(bad) != std::string::npos);
  }
  CHECK(value_error([] { parse_grid_axis("heads=1,1"); }).find("given twice") != std::string::npos);
  CHECK(value_error([] { parse_grid_axis("heads=1,,2"); }).find("empty") != std::string::npos);
}

TEST_CASE("sweep: parse_seeds reads a comma list and refuses anything else") {
  CHECK(parse_seeds("1,2,3") == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(parse_seeds("42") == std::vector<std::uint64_t>{42});
  for (const std::string bad : {"", "1,,2", "a", "-1", "1.5", "1,2,1", " 1"}) {
    CAPTURE(bad);
    CHECK(value_error([&] { parse_seeds(bad); }).find("--seeds") != std::string::npos);
  }
}

TEST_CASE("sweep: grid keys become train flags and values become their arguments") {
  CHECK(train_flag_for("heads") == "--heads");
  CHECK(train_flag_for("kv_heads") == "--kv-heads");
  CHECK(train_flag_for("ff_dim") == "--ff");
  CHECK(train_flag_for("norm_first") == "--pre-ln");
  CHECK(grid_value_arguments("heads", "4", false) == std::vector<std::string>{"--heads", "4"});
  CHECK(grid_value_arguments("head_dim", "compute", false) == std::vector<std::string>{"--head-dim", "0"});
  CHECK(grid_value_arguments("head_dim", "16", false) == std::vector<std::string>{"--head-dim", "16"});
  CHECK(grid_value_arguments("pre_ln", "on", true) == std::vector<std::string>{"--pre-ln"});
  CHECK(grid_value_arguments("pre_ln", "off", true) == std::vector<std::string>{"--pre-ln=false"});
  CHECK(value_error([] { grid_value_arguments("pre_ln", "yes", true); }).find("on and off") != std::string::npos);
}

TEST_CASE("sweep: run names keep only letters, digits and the characters =,._-") {
  CHECK(sanitize_run_name("heads=2,gate=none,seed=1") == "heads=2,gate=none,seed=1");
  CHECK(sanitize_run_name("lr_factor=0.5,x=a b/c'd,seed=1") == "lr_factor=0.5,x=a_b_c_d,seed=1");
}

TEST_CASE("sweep: validate_sweep refuses duplicate keys, seed, conflicts and empty lists") {
  const auto message = [](const SweepSpec& spec) { return value_error([&] { validate_sweep(spec); }); };
  CHECK(message(spec_of({"heads=1,2", "gate=none"})).empty());
  CHECK(message(spec_of({})).find("--grid") != std::string::npos);
  CHECK(message(spec_of({"heads=1,2", "heads=4"})).find("'heads' is given twice") != std::string::npos);
  CHECK(message(spec_of({"heads=1,2", "kv-heads=1", "kv_heads=2"})).find("kv_heads") != std::string::npos);
  CHECK(message(spec_of({"ff=32", "ff_dim=64"})).find("both set --ff") != std::string::npos);
  const std::string seed = message(spec_of({"seed=1,2"}));
  CHECK(seed.find("seed") != std::string::npos);
  CHECK(seed.find("--seeds") != std::string::npos);
  CHECK(message(spec_of({"run_dir=a,b"})).find("--run-dir") != std::string::npos);
  CHECK(message(spec_of({"progress=none"})).find("--progress") != std::string::npos);
  // A grid key also given after `--`, spelled either way.
  CHECK(message(spec_of({"heads=1,2"}, {1}, {"--task", "copy", "--heads", "2"})).find("--heads") != std::string::npos);
  CHECK(message(spec_of({"heads=1,2"}, {1}, {"--heads=2"})).find("give it in one place") != std::string::npos);
  CHECK(message(spec_of({"ff_dim=1,2"}, {1}, {"--ff", "8"})).find("--ff") != std::string::npos);
  CHECK(message(spec_of({"heads=1,2"}, {1}, {"--seed", "3"})).find("--seeds") != std::string::npos);
  CHECK(message(spec_of({"heads=1,2"}, {1}, {"--run-dir", "x"})).find("--run-dir") != std::string::npos);
  CHECK(message(spec_of({"heads=1,2"}, {1}, {"--overwrite"})).find("the sweep sets --overwrite") != std::string::npos);
  CHECK(message(spec_of({"heads=1,2"}, {})).find("--seeds") != std::string::npos);
  CHECK(message(spec_of({"heads=1,2"}, {1, 1})).find("twice") != std::string::npos);
  // A flag without a value takes on / off only.
  SweepSpec boolean = spec_of({"pre_ln=on,maybe"});
  boolean.boolean_flags = {"--pre-ln"};
  CHECK(message(boolean).find("maybe") != std::string::npos);
  // Two values that become the same directory name.
  CHECK(message(spec_of({"gate=a b,a_b"})).find("share the directory") != std::string::npos);
}

// ---------------------------------------------------------------------------
// The plan
// ---------------------------------------------------------------------------

TEST_CASE("sweep: the plan is the grid product, first key slowest, seeds fastest") {
  TempDir dir;
  const SweepSpec spec = spec_of({"heads=1,2", "gate=none,headwise,elementwise"}, {7, 3}, {"--task", "copy"});
  const SweepPlan plan = plan_sweep(spec, dir.path / "sweep");
  REQUIRE(plan.runs.size() == 2 * 3 * 2);
  CHECK(plan.out_dir.is_absolute());
  const std::vector<std::string> expected = {
      "heads=1,gate=none,seed=7",        "heads=1,gate=none,seed=3",     "heads=1,gate=headwise,seed=7",
      "heads=1,gate=headwise,seed=3",    "heads=1,gate=elementwise,seed=7", "heads=1,gate=elementwise,seed=3",
      "heads=2,gate=none,seed=7",        "heads=2,gate=none,seed=3",     "heads=2,gate=headwise,seed=7",
      "heads=2,gate=headwise,seed=3",    "heads=2,gate=elementwise,seed=7", "heads=2,gate=elementwise,seed=3"};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(plan.runs[i].name == expected[i]);
  }
  const SweepRun& run = plan.runs[9];  // heads=2, gate=headwise, seed 3
  CHECK(run.values == std::vector<std::string>{"2", "headwise"});
  CHECK(run.seed == 3);
  CHECK(plan.run_dir(run) == plan.out_dir / "runs" / "heads=2,gate=headwise,seed=3");
  const std::vector<std::string> args = {"--task",    "copy", "--heads",  "2",
                                         "--gate",    "headwise", "--seed", "3",
                                         "--run-dir", plan.run_dir(run).string(), "--progress", "none"};
  CHECK(run.train_args == args);
}

TEST_CASE("sweep: head_dim=compute passes --head-dim 0 and keeps its name") {
  TempDir dir;
  const SweepPlan plan = plan_sweep(spec_of({"heads=2,4", "head_dim=compute,8"}), dir.path);
  REQUIRE(plan.runs.size() == 4);
  CHECK(plan.runs[0].name == "heads=2,head_dim=compute,seed=1");
  const auto& args = plan.runs[0].train_args;
  const std::size_t at = position(args, "--head-dim");
  REQUIRE(at + 1 < args.size());
  CHECK(args[at + 1] == "0");
  CHECK(plan.runs[1].train_args[position(plan.runs[1].train_args, "--head-dim") + 1] == "8");
}

TEST_CASE("sweep: sweep.json reads back, and sweep_difference names what changed") {
  TempDir dir;
  const SweepPlan plan = plan_sweep(spec_of({"heads=1,2", "gate=none,headwise"}, {1, 2}, {"--steps", "30"}), dir.path);
  write_sweep_json(plan, "/opt/headlab");
  const SweepPlan back = read_sweep_json(dir.path);
  CHECK(sweep_difference(back.spec, plan.spec).empty());
  REQUIRE(back.runs.size() == plan.runs.size());
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    CHECK(back.runs[i].name == plan.runs[i].name);
    CHECK(back.runs[i].values == plan.runs[i].values);
    CHECK(back.runs[i].train_args == plan.runs[i].train_args);
  }
  CHECK(sweep_difference(plan.spec, spec_of({"heads=1,2,4", "gate=none,headwise"}, {1, 2}, {"--steps", "30"}))
            .find("grid") != std::string::npos);
  CHECK(sweep_difference(plan.spec, spec_of({"heads=1,2", "gate=none,headwise"}, {1}, {"--steps", "30"}))
            .find("seeds") != std::string::npos);
  CHECK(sweep_difference(plan.spec, spec_of({"heads=1,2", "gate=none,headwise"}, {1, 2}, {"--steps", "40"}))
            .find("--steps 40") != std::string::npos);
  write_file(dir.path / "sweep.json", "{\"version\": 1, \"grid\": 3}");
  CHECK_THROWS_AS(read_sweep_json(dir.path), FormatError);
  CHECK_THROWS_AS(read_sweep_json(dir.path / "nowhere"), IOError);
}

TEST_CASE("sweep: run states come from summary.json and checkpoint.safetensors") {
  TempDir dir;
  const fs::path run = dir.path / "run";
  CHECK(run_state(run) == RunState::NotStarted);
  fs::create_directories(run);
  CHECK(run_state(run) == RunState::Started);
  write_file(run / "checkpoint.safetensors", "x");
  CHECK(run_state(run) == RunState::Resumable);
  write_file(run / "summary.json", R"({"valid_loss": 1.5, "interrupted": true})");
  CHECK(run_state(run) == RunState::Resumable);
  write_file(run / "summary.json", R"({"valid_loss": 1.5, "interrupted": false})");
  CHECK(run_state(run) == RunState::Finished);
  write_file(run / "summary.json", R"({"valid_loss": 1.5})");  // no "interrupted": finished
  CHECK(run_state(run) == RunState::Finished);
  write_file(run / "summary.json", R"({"valid_loss": 1.)");  // cut short while written
  CHECK(run_state(run) == RunState::Resumable);
  CHECK(std::string(to_string(RunState::Finished)) == "finished");
}

TEST_CASE("sweep: a damaged summary.json is named (a study report once left its run out without a word)") {
  TempDir dir;
  const fs::path run = dir.path / "run";
  fs::create_directories(run);
  CHECK(summary_fault(run).empty());  // none yet: an unfinished run, nothing damaged
  write_file(run / "summary.json", R"({"valid_loss": 1.5})");
  CHECK(summary_fault(run).empty());
  write_file(run / "summary.json", R"({"valid_loss": 1.)");
  CHECK(summary_fault(run) == "its summary.json is not a JSON object");
  write_file(run / "summary.json", "[1, 2]");
  CHECK(summary_fault(run) == "its summary.json is not a JSON object");
  fs::remove(run / "summary.json");
  fs::create_symlink("/dev/zero", run / "summary.json");
  CHECK(summary_fault(run) == "its summary.json is not a regular file");
}

TEST_CASE("sweep: job commands quote their arguments for the shell") {
  CHECK(shell_quote("--heads") == "--heads");
  CHECK(shell_quote("/tmp/a,b=c") == "/tmp/a,b=c");
  CHECK(shell_quote("") == "''");
  CHECK(shell_quote("a b") == "'a b'");
  CHECK(shell_quote("it's") == "'it'\\''s'");
  TempDir dir;
  const SweepPlan plan = plan_sweep(spec_of({"heads=1,2"}, {1}, {"--train", "my data.tsv"}), dir.path);
  const std::string run_dir = plan.run_dir(plan.runs[0]).string();
  const std::string line = job_command("/opt/headlab", plan, plan.runs[0], 0, "/home/me/my study");
  // The same line whatever the run's state: it continues a run from its checkpoint or starts it,
  // and appends to the log (a requeued task, a retry); it runs where the sweep was planned.
  CHECK(line == "mkdir -p " + run_dir + " && { cd '/home/me/my study' && /opt/headlab train --train 'my data.tsv' "
                "--heads 1 --seed 1 --run-dir " + run_dir + " --progress none --resume-or-start; } >> " + run_dir +
                "/log.txt 2>&1");
  CHECK(job_command("/opt/headlab", plan, plan.runs[0], 0, "").find("{ /opt/headlab train ") != std::string::npos);
  // A thread count goes before the command, as `headlab --threads N train` takes it.
  const std::string threaded = job_command("/opt/headlab", plan, plan.runs[0], 4, "/w");
  CHECK(threaded.find(" && /opt/headlab --threads 4 train --train ") != std::string::npos);
  // A cd that fails on a node goes into the run's log too: the line still runs (bash), says why there.
  TempDir run_here;
  const SweepPlan here = plan_sweep(spec_of({"heads=1"}), run_here.path);
  const std::string missing = job_command("/bin/true", here, here.runs[0], 0, run_here.path / "no such dir");
  CHECK(std::system(("bash -c " + shell_quote(missing) + " 2> /dev/null").c_str()) != 0);
  CHECK(headlab::testing::read_text(here.run_dir(here.runs[0]) / "log.txt").find("no such dir") != std::string::npos);
  // The sweep's own flags are refused after `--`, the new one too.
  CHECK(value_error([&] { plan_sweep(spec_of({"heads=1,2"}, {1}, {"--resume-or-start"}), dir.path / "x"); })
            .find("--resume-or-start") != std::string::npos);
}
}  // namespace test_sweep
