// child_process.hpp: run a program with a time limit and capture what it prints (the course
// command runs the test binary and git through it).
#pragma once

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

// Runs `binary args...` (an absolute or relative path: no PATH search) with `extra_env` added to
// the environment ("NAME=value", replacing the inherited value); stdout and stderr captured
// together (at most its first and last MiB); killed with its process group after `timeout_s`
// seconds. A SIGINT or SIGTERM that comes meanwhile is forwarded to the child's process group, which
// is then stopped: Run::stopped_by_signal says which (the caller should stop too).
Run run_process(const std::string& binary, const std::vector<std::string>& args,
                const std::vector<std::string>& extra_env, int timeout_s);

// The first executable `name` in the directories of $PATH, or "" when there is none.
std::string find_in_path(const std::string& name);

}  // namespace headlab::cli
