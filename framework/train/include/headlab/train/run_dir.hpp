// headlab/train/run_dir.hpp: a directory a command writes its outputs into (a training run, the
// head lab's tables, a sweep), held by that command for its whole life.
//
// Opening a RunDir, in this order:
//   1. creates the directory if it is missing
//   2. takes an exclusive lock: flock() on DIR/.lock, which holds the holder's pid. A second process
//      is refused, naming that pid; the lock dies with its process (kill -9 included), so a dead
//      holder never blocks. The lock file is removed again when the RunDir is destroyed.
//   3. looks for the command's markers (the files that say "a run is here") and does as told:
//        refuse     (the default) a marker is present: RunDirRefused, naming the flag that allows it
//        resume     the run is kept: the caller continues it (train --resume)
//        overwrite  every file the command writes is removed; no other file is touched
//        reuse      everything is kept (a sweep skips the runs it finished)
//   4. once accepted, removes temporary files (NAME.tmp.PID) of processes that no longer live
// Nothing else in the directory changes: a command that refuses its inputs later leaves it as it was.
//
// cut_metrics_to_step() is the other half of resuming: the log is cut back to the checkpoint.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"

namespace headlab {

// A directory that cannot be used as asked: it holds a run and no flag allows touching it, or
// another process holds it. A usage error (the CLI exits 2), so a ValueError. The message starts
// with the directory, the CLI puts the command before it:
//   "'runs/copy' already holds a run (checkpoint.safetensors, metrics.jsonl); give --resume to
//    continue it or --overwrite to replace it, or choose another --run-dir"
//   "'runs/copy' is in use by process 4242 (it holds 'runs/copy/.lock'); wait for it to end or ..."
struct RunDirRefused : ValueError {
  using ValueError::ValueError;
};

enum class ExistingRun { refuse, resume, overwrite, reuse };

// What a command writes into its directory.
struct RunDirSpec {
  std::string command;               // "train", "heads": names the command in IOError messages
  std::string dir_flag;              // "--run-dir", "--out": how the user names the directory
  std::vector<std::string> markers;  // any of these present: the directory holds a run
  std::vector<std::string> outputs;  // every file the command writes (what overwrite removes)
  bool can_resume = false;           // the refusal offers --resume as well as --overwrite
  ExistingRun existing = ExistingRun::refuse;
};

class RunDir {
 public:
  // Steps 1-4 above. RunDirRefused as described; IOError when the directory or its lock file
  // cannot be made.
  RunDir(std::filesystem::path dir, const RunDirSpec& spec);
  ~RunDir();  // removes DIR/.lock and releases the lock
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path file(const std::string& name) const { return dir_ / name; }
  bool held_run() const { return held_run_; }  // a marker was present when it was opened

 private:
  std::filesystem::path dir_;
  int lock_fd_ = -1;
  bool held_run_ = false;
};

// The pid in DIR/.lock when a live process holds the lock ("(unknown pid)" when it cannot be read),
// else "" (no lock file, or one left by a process that died). A look, not a hold: the lock is tried
// shared and released at once, so a process taking it in that instant is refused once (it names
// this pid) and can be started again.
std::string run_dir_holder(const std::filesystem::path& dir);

// What `headlab train` writes into --run-dir, and how it treats a run already there: resume with
// --resume, overwrite with --overwrite (both at once: RunDirRefused), refuse otherwise.
RunDirSpec train_run_dir_spec(bool resume, bool overwrite);

// Cuts a metrics.jsonl back to the lines whose "step" is at most `step` (what a resumed checkpoint
// has seen), and drops a torn last line (no newline at its end, or not JSON: a kill or a full disk
// in the middle of a write). Rewritten atomically, and only when a line goes. A missing file is
// left missing. Returns how many lines were dropped. FormatError naming FILE:LINE for a complete
// line before the last that is not a JSON object with a numeric "step".
std::size_t cut_metrics_to_step(const std::filesystem::path& file, std::size_t step);

}  // namespace headlab
