// child_process.cpp: fork, exec, read the child's output through a pipe until it closes or the
// time runs out (child_process.hpp).
#include "child_process.hpp"

#include <fcntl.h>
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

}  // namespace

Run run_process(const std::string& binary, const std::vector<std::string>& args,
                const std::vector<std::string>& extra_env, int timeout_s, const RunOutput& keep) {
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

  // SIGINT and SIGTERM are blocked from before the fork until the handlers know the child's group,
  // so that none is lost or kills this process while the child runs on.
  sigset_t stop_signals, old_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop_signals, &old_mask);
  const pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    return run;
  }
  if (pid == 0) {  // the child: its own process group, no input, output into the pipe
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    const int null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(pipe_fd[1], STDOUT_FILENO);
    dup2(keep.stderr_too || null_fd < 0 ? pipe_fd[1] : null_fd, STDERR_FILENO);
    if (null_fd > STDERR_FILENO) close(null_fd);
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(pipe_fd[1]);
  setpgid(pid, pid);  // (also here: the child may not have run its setpgid yet)
  run.started = true;
  stop_signal = 0;
  child_group = pid;
  struct sigaction forward {}, old_int {}, old_term {};
  forward.sa_handler = forward_to_child;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, &old_int);
  sigaction(SIGTERM, &forward, &old_term);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);  // a signal that came meanwhile is delivered now
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string tail;  // the last bytes once the head is full
  char buffer[65536];
  while (true) {
    if (stop_signal != 0) {
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
    const std::size_t room = keep.head_bytes - std::min(keep.head_bytes, run.output.size());
    const std::size_t to_head = std::min(static_cast<std::size_t>(n), room);
    run.output.append(buffer, to_head);
    tail.append(buffer + to_head, static_cast<std::size_t>(n) - to_head);
    if (tail.size() > 2 * keep.tail_bytes) {
      run.dropped_bytes += tail.size() - keep.tail_bytes;
      tail.erase(0, tail.size() - keep.tail_bytes);
    }
  }
  if (tail.size() > keep.tail_bytes) {
    run.dropped_bytes += tail.size() - keep.tail_bytes;
    tail.erase(0, tail.size() - keep.tail_bytes);
  }
  if (run.dropped_bytes > 0) run.output += "\n[... " + std::to_string(run.dropped_bytes) + " bytes of output left out ...]\n";
  run.output += tail;
  close(pipe_fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Until the handlers are put back, a signal is still caught (and noted here).
  sigprocmask(SIG_BLOCK, &stop_signals, nullptr);
  child_group = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  run.stopped_by_signal = stop_signal;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
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
