// child_process.cpp: fork, exec, read the child's output through a pipe until it closes or the
// time runs out (child_process.hpp).
#include "child_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

extern char** environ;

namespace headlab::cli {
namespace {

// While a child runs, SIGINT and SIGTERM go on to its process group, and the run stops.
volatile sig_atomic_t child_group = 0;
volatile sig_atomic_t stop_signal = 0;

void forward_to_child(int sig) {
  stop_signal = sig;
  if (child_group > 0) kill(-static_cast<pid_t>(child_group), sig);
}

// The output kept: its first and last kKeptBytes (doctest's summary is at the end), the middle
// counted, so that a test printing without end costs bounded memory.
constexpr std::size_t kKeptBytes = std::size_t(1) << 20;

}  // namespace

Run run_process(const std::string& binary, const std::vector<std::string>& args,
                const std::vector<std::string>& extra_env, int timeout_s) {
  Run run;
  int pipe_fd[2];
  if (pipe(pipe_fd) != 0) return run;
  std::vector<std::string> env_strings(extra_env);
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool overridden = false;
    for (const std::string& x : extra_env) overridden = overridden || entry.rfind(x.substr(0, x.find('=') + 1), 0) == 0;
    if (!overridden) env_strings.push_back(entry);
  }
  std::vector<char*> argv{const_cast<char*>(binary.c_str())}, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    return run;
  }
  if (pid == 0) {  // the child: its own process group, output into the pipe
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    dup2(pipe_fd[1], STDOUT_FILENO);
    dup2(pipe_fd[1], STDERR_FILENO);
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(pipe_fd[1]);
  setpgid(pid, pid);  // (also here: a signal may come before the child has run setpgid)
  run.started = true;
  stop_signal = 0;
  child_group = pid;
  struct sigaction forward {}, old_int {}, old_term {};
  forward.sa_handler = forward_to_child;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string tail;  // the last bytes once the head is full
  char buffer[65536];
  while (true) {
    if (stop_signal != 0) {
      run.stopped_by_signal = stop_signal;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{pipe_fd[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = read(pipe_fd[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of output: the child is done (or closed it)
    const std::size_t to_head = std::min(static_cast<std::size_t>(n), kKeptBytes - std::min(kKeptBytes, run.output.size()));
    run.output.append(buffer, to_head);
    tail.append(buffer + to_head, static_cast<std::size_t>(n) - to_head);
    if (tail.size() > 2 * kKeptBytes) {
      run.dropped_bytes += tail.size() - kKeptBytes;
      tail.erase(0, tail.size() - kKeptBytes);
    }
  }
  if (tail.size() > kKeptBytes) {
    run.dropped_bytes += tail.size() - kKeptBytes;
    tail.erase(0, tail.size() - kKeptBytes);
  }
  if (run.dropped_bytes > 0) run.output += "\n[... " + std::to_string(run.dropped_bytes) + " bytes of output left out ...]\n";
  run.output += tail;
  close(pipe_fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  child_group = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (run.exit_code == 127 && run.output.empty()) run.started = false;  // execve failed
  return run;
}

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::filesystem::path candidate = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

}  // namespace headlab::cli
