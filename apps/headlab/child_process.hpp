// child_process.hpp: run a program with a time limit and capture what it prints (the course
// command runs the test binary and git through it).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace headlab::cli {

struct Run {
  bool started = false;     // the binary could be run at all
  bool timed_out = false;
  int exit_code = -1;       // -1: killed by a signal
  std::string output;       // stdout and stderr together: the first and last MiB when longer
  std::size_t dropped_bytes = 0;  // left out of the middle of output
  int stopped_by_signal = 0;      // SIGINT or SIGTERM came while it ran (forwarded to it; it was stopped)
};

// What of a child's output run_process keeps: its first head_bytes and last tail_bytes (the middle
// is counted and left out, so that a program printing without end costs bounded memory), and
// whether stderr goes with stdout (else to /dev/null).
struct RunOutput {
  std::size_t head_bytes = std::size_t(1) << 20;
  std::size_t tail_bytes = std::size_t(1) << 20;
  bool stderr_too = true;
};

// SIGINT or SIGTERM stopped a run (run_process forwarded it to the child): the caller stops too.
struct StoppedBySignal {
  int signal;
};

// Runs `binary args...` (an absolute or relative path: no PATH search) with `extra_env` added to
// the environment ("NAME=value", replacing the inherited value); stdout and stderr captured
// together (as `keep` says: by default at most the first and last MiB); killed with its process group after `timeout_s`
// seconds. A SIGINT or SIGTERM that comes meanwhile is forwarded to the child's process group, which
// is then stopped: Run::stopped_by_signal says which (the caller should stop too).
Run run_process(const std::string& binary, const std::vector<std::string>& args,
                const std::vector<std::string>& extra_env, int timeout_s, const RunOutput& keep = {});

// The first executable `name` in the directories of $PATH, or "" when there is none.
std::string find_in_path(const std::string& name);

}  // namespace headlab::cli
