// The run directory (headlab/train/run_dir.hpp): refusing, resuming and overwriting a run, the
// lock (a second holder is refused with the first one's pid, and a killed holder never blocks), stale
// temporary files, and metrics.jsonl cut back to the checkpoint on resume.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "headlab/core/file_writer.hpp"
#include "headlab/core/machine.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/report/metrics.hpp"
#include "headlab/train/run_dir.hpp"
#include "headlab/train/trainer.hpp"
#include "child_process.hpp"
#include "read_bytes.hpp"
#include "test_support.hpp"
#include "tiny_train_run.hpp"

namespace test_run_dir {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::Child;
using headlab::testing::fork_child;
using headlab::testing::read_bytes;
using headlab::testing::TempDir;
using headlab::testing::tiny_copy_run;

namespace {

// Every file of a directory and its bytes.
std::map<std::string, std::string> contents(const TempDir& dir) {
  std::map<std::string, std::string> files;
  for (const std::string& name : dir.listing()) files[name] = read_bytes(dir.path / name);
  return files;
}

RunDirSpec heads_like(ExistingRun existing) {
  RunDirSpec spec;
  spec.command = "heads";
  spec.dir_flag = "--out";
  spec.markers = spec.outputs = {"heads.csv", "attention_maps.svg"};
  spec.existing = existing;
  return spec;
}

std::string refusal_of(const fs::path& dir, const RunDirSpec& spec) {
  try {
    RunDir again(dir, spec);
  } catch (const RunDirRefused& e) {
    return e.what();
  }
  return "";
}

// The pid of a process that has ended.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

// A child process holding `dir` until it is killed; returns its pid once it holds it.
pid_t hold_in_child(const fs::path& dir) {
  const Child child = fork_child([&](int to_parent) {
    RunDir held(dir, heads_like(ExistingRun::reuse));
    (void)!::write(to_parent, "y", 1);
    for (;;) ::pause();
  });
  char c = 0;
  CHECK(::read(child.from_child, &c, 1) == 1);
  ::close(child.from_child);
  return child.pid;
}


}  // namespace

TEST_CASE("RunDir: a directory holding the command's output is refused and left as it was") {
  TempDir dir("rundir_refuse");
  dir.write("heads.csv", "site,head\n");
  dir.write("notes.txt", "mine");
  dir.write("heads.csv.tmp." + std::to_string(dead_pid()), "a dead writer's");  // kept: the command is refused
  const auto before = contents(dir);
  const std::string why = refusal_of(dir.path, heads_like(ExistingRun::refuse));
  CAPTURE(why);
  CHECK(why.find("already holds a run (heads.csv)") != std::string::npos);
  CHECK(why.find("--overwrite") != std::string::npos);
  CHECK(why.find("another --out") != std::string::npos);
  CHECK(why.find("--resume") == std::string::npos);  // heads cannot resume
  CHECK(contents(dir) == before);                     // no .lock left either

  const RunDirSpec train = train_run_dir_spec(false, false);
  dir.write("checkpoint.safetensors", "x");
  CHECK(refusal_of(dir.path, train).find("give --resume to continue it or --overwrite to replace it") !=
        std::string::npos);
  CHECK_THROWS_AS(train_run_dir_spec(true, true), RunDirRefused);
}

TEST_CASE("RunDir: resume keeps the run, overwrite removes the command's files and nothing else") {
  TempDir dir("rundir_overwrite");
  dir.write("heads.csv", "old");
  dir.write("notes.txt", "mine");
  {
    RunDir kept(dir.path, heads_like(ExistingRun::resume));
    CHECK(kept.held_run());
    CHECK(fs::exists(dir.path / ".lock"));
  }
  CHECK(fs::exists(dir.path / "heads.csv"));
  CHECK_FALSE(fs::exists(dir.path / ".lock"));  // removed with the RunDir
  {
    RunDir replaced(dir.path, heads_like(ExistingRun::overwrite));
    CHECK(replaced.held_run());
  }
  CHECK(dir.listing() == std::vector<std::string>{"notes.txt"});
  RunDir fresh(dir.path / "new" / "run", heads_like(ExistingRun::refuse));  // created, nothing to refuse
  CHECK_FALSE(fresh.held_run());
  CHECK(fs::is_directory(dir.path / "new" / "run"));
}

TEST_CASE("RunDir: a second holder is refused with the first one's pid, and a killed holder never blocks") {
  TempDir dir("rundir_lock");
  {
    RunDir first(dir.path, heads_like(ExistingRun::reuse));
    const std::string why = refusal_of(dir.path, heads_like(ExistingRun::reuse));
    CAPTURE(why);
    CHECK(why.find("is in use by process " + std::to_string(::getpid())) != std::string::npos);
  }
  const pid_t child = hold_in_child(dir.path);
  const std::string why = refusal_of(dir.path, heads_like(ExistingRun::reuse));
  CHECK(why.find("is in use by process " + std::to_string(child)) != std::string::npos);
  ::kill(child, SIGKILL);  // dies holding the lock: .lock stays, with a dead pid in it
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(fs::exists(dir.path / ".lock"));
  RunDir after(dir.path, heads_like(ExistingRun::reuse));  // flock died with its holder
  CHECK(read_bytes(dir.path / ".lock") == std::to_string(::getpid()) + "\n");
}

TEST_CASE("RunDir: temporary files of dead processes are removed when it is opened") {
  TempDir dir("rundir_stale");
  dir.write("checkpoint.safetensors.tmp." + std::to_string(dead_pid()), "half a checkpoint");
  dir.write("summary.json.tmp." + std::to_string(::getpid()), "ours, still being written");
  RunDir opened(dir.path, heads_like(ExistingRun::refuse));
  CHECK(dir.listing() == std::vector<std::string>{".lock", "summary.json.tmp." + std::to_string(::getpid())});
}

TEST_CASE("cut_metrics_to_step: lines after the checkpoint and a torn last line go, the rest stays") {
  TempDir dir("metrics_cut");
  const fs::path file = dir.path / "metrics.jsonl";
  std::string whole;
  for (int s = 1; s <= 6; ++s) whole += "{\"step\":" + std::to_string(s) + ",\"loss\":1.5}\n";
  dir.write("metrics.jsonl", whole + "{\"step\":7,\"lo");  // killed mid-line
  CHECK(cut_metrics_to_step(file, 4) == 3);
  const auto rows = read_metrics(file);
  REQUIRE(rows.size() == 4);
  CHECK(rows.back().number("step") == 4);
  CHECK_FALSE(fs::exists(dir.path / ("metrics.jsonl.tmp." + std::to_string(::getpid()))));

  CHECK(cut_metrics_to_step(file, 4) == 0);  // nothing to drop: not rewritten
  dir.write("metrics.jsonl", whole + "{\"step\":7,\"loss\":\n");  // a complete but broken last line
  CHECK(cut_metrics_to_step(file, 10) == 1);
  CHECK(read_bytes(file) == whole);
  dir.write("metrics.jsonl", "{\"step\":1}\nnot json\n{\"step\":2}\n");  // broken in the middle: refused
  CHECK_THROWS_WITH_AS(cut_metrics_to_step(file, 5), doctest::Contains("metrics.jsonl':2: not a JSON object"),
                       FormatError);
  CHECK(cut_metrics_to_step(dir.path / "none.jsonl", 3) == 0);
}

TEST_CASE("train: a resume after a kill logs every step once (lines after the checkpoint, a torn line dropped)") {
  TempDir dir("rundir_resume");
  std::ostringstream log;
  train(tiny_copy_run(dir.path, 4), log);  // checkpoint at step 4
  {
    AppendFile more(dir.path / "metrics.jsonl", "test");  // what a killed run leaves after its last save
    more.write("{\"step\":5,\"loss\":1}\n{\"step\":6,\"loss\":1}\n{\"step\":7,");
  }
  TrainOptions resume = tiny_copy_run(dir.path, 8);
  resume.resume = true;
  train(resume, log);
  const auto rows = read_metrics(dir.path / "metrics.jsonl");
  REQUIRE(rows.size() == 8);
  for (std::size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].number("step") == double(i + 1));
}

TEST_CASE("train: a finished run is refused without --resume or --overwrite, byte for byte untouched") {
  TempDir dir("rundir_train_refuse");
  std::ostringstream log;
  train(tiny_copy_run(dir.path, 3), log);
  dir.write("notes.txt", "mine");
  const auto before = contents(dir);
  CHECK_THROWS_WITH_AS(train(tiny_copy_run(dir.path, 2), log), doctest::Contains("already holds a run"), RunDirRefused);
  CHECK(contents(dir) == before);

  TrainOptions refused = tiny_copy_run(dir.path, 6);  // a resume refused for other options changes nothing either
  refused.resume = true;
  refused.ff_dim = 48;
  CHECK_THROWS_AS(train(refused, log), ValueError);
  CHECK(contents(dir) == before);

  TrainOptions again = tiny_copy_run(dir.path, 2);
  again.overwrite = true;
  CHECK(train(again, log).steps_done == 2);
  CHECK(read_metrics(dir.path / "metrics.jsonl").size() == 2);  // the old run's lines are gone
  CHECK(read_bytes(dir.path / "notes.txt") == "mine");
  CHECK(again.to_config_ini().find("overwrite") == std::string::npos);  // not a stored option
}

TEST_CASE("run_dir_holder: names the live holder of a directory, never a dead one, and takes nothing") {
  TempDir dir("rundir_holder");
  CHECK(run_dir_holder(dir.path).empty());  // no lock file
  const pid_t child = hold_in_child(dir.path);
  CHECK(run_dir_holder(dir.path) == std::to_string(child));
  CHECK(run_dir_holder(dir.path) == std::to_string(child));  // looking twice changes nothing
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(fs::exists(dir.path / ".lock"));  // left by the killed holder
  CHECK(run_dir_holder(dir.path).empty());
  RunDir after(dir.path, heads_like(ExistingRun::reuse));  // the look left the lock free
  CHECK(run_dir_holder(dir.path) == std::to_string(::getpid()));
}

TEST_CASE("train --resume-or-start: starts a new run, continues one with a checkpoint, restarts one without") {
  TempDir dir("rundir_resume_or_start");
  std::ostringstream log;
  TrainOptions first = tiny_copy_run(dir.path, 4);
  first.resume_or_start = true;
  CHECK(train(first, log).steps_done == 4);  // nothing there: started
  dir.write("log.txt", "the first attempt's log\n");
  TrainOptions more = tiny_copy_run(dir.path, 6);
  more.resume_or_start = true;
  CHECK(train(more, log).steps_done == 6);  // continued from step 4, like --resume
  CHECK(log.str().find("resumed from") != std::string::npos);
  CHECK(read_metrics(dir.path / "metrics.jsonl").size() == 6);
  fs::remove(dir.path / "checkpoint.safetensors");  // a run killed before its first save
  fs::remove(dir.path / "summary.json");
  TrainOptions again = tiny_copy_run(dir.path, 3);
  again.resume_or_start = true;
  CHECK(train(again, log).steps_done == 3);  // started over, like --overwrite
  CHECK(read_metrics(dir.path / "metrics.jsonl").size() == 3);
  CHECK(read_bytes(dir.path / "log.txt") == "the first attempt's log\n");  // not a file train writes
  TrainOptions both = tiny_copy_run(dir.path, 3);
  both.resume_or_start = both.resume = true;
  CHECK_THROWS_WITH_AS(train(both, log), doctest::Contains("give it alone"), ValueError);
  CHECK(again.to_config_ini().find("resume") == std::string::npos);  // not a stored option
}

// Before: summary.json named only the machine that wrote it, though a resumed run's earlier steps
// may have been made on another.
TEST_CASE("train: a run resumed on other arithmetic names both, in its checkpoint and summary.json") {
  TempDir dir("rundir_arithmetic");
  std::ostringstream log;
  const fs::path checkpoint = dir.path / "checkpoint.safetensors";
  const auto saved = [&] { return load_safetensors(checkpoint.string()).metadata.at("arithmetic"); };
  const auto summary = [&] {
    return nlohmann::json::parse(read_bytes(dir.path / "summary.json")).at("arithmetic").get<std::string>();
  };
  const auto resume_to = [&](std::size_t steps) {
    TrainOptions o = tiny_copy_run(dir.path, steps);
    o.resume = true;
    train(o, log);
  };
  const auto recorded_as = [&](const char* arithmetic) {  // the checkpoint as another machine left it
    TensorFile file = load_safetensors(checkpoint.string());
    if (arithmetic) file.metadata["arithmetic"] = arithmetic;
    else file.metadata.erase("arithmetic");  // saved before the record
    save_safetensors(checkpoint.string(), file);
  };
  const std::string here = arithmetic_fingerprint();
  train(tiny_copy_run(dir.path, 2), log);
  CHECK(saved() == here);
  CHECK(summary() == here);
  resume_to(3);  // here again: still one part
  CHECK(summary() == here);
  recorded_as("GenuineIntel family 6 model 85; OpenBLAS 0.3.21 kernels SkylakeX; gcc 12.2.0 for AVX512F AVX2 FMA");
  resume_to(4);
  const std::string both =
      "GenuineIntel family 6 model 85; OpenBLAS 0.3.21 kernels SkylakeX; gcc 12.2.0 for AVX512F AVX2 FMA, then " + here;
  CHECK(summary() == both);
  CHECK(saved() == both);
  resume_to(5);  // here again: no third part
  CHECK(summary() == both);
  recorded_as(nullptr);
  resume_to(6);
  CHECK(summary() == "unrecorded, then " + here);
  recorded_as(std::string(3000, 'x').c_str());
  CHECK_THROWS_WITH_AS(resume_to(7), doctest::Contains("metadata 'arithmetic': not the record of a machine"), FormatError);
  // A long history keeps its first part and this machine's within 2000 bytes, and loads again.
  const std::string long_history = std::string(1500, 'a') + ", then " + std::string(450, 'b');
  const std::string kept = continued_arithmetic(long_history);
  CHECK(kept.size() <= 2000);
  CHECK(kept.rfind(std::string(100, 'a'), 0) == 0);
  CHECK(kept.find(", then ..., then " + here) != std::string::npos);
  CHECK(continued_arithmetic(std::string(2000, 'a')).size() <= 2000);
}
}  // namespace test_run_dir
