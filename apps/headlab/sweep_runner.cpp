// sweep_runner.cpp: the runs of a plan as child processes (see sweep_runner.hpp).
#include "sweep_runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/lab/sweep_collect.hpp"
#include "headlab/train/run_dir.hpp"
#include "cli_errors.hpp"
#include "train_flags.hpp"

extern char** environ;

namespace headlab::cli {

namespace fs = std::filesystem;

std::string executable_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw IOError("cannot find the headlab executable (/proc/self/exe): " + ec.message());
  return exe.string();
}

TrainOptions check_train_arguments(const SweepRun& run) {
  CLI::App probe;
  TrainOptions options;
  const TrainCommand command = add_train_command(probe, options);
  std::vector<std::string> args = {"train"};
  args.insert(args.end(), run.train_args.begin(), run.train_args.end());
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    probe.parse(args);
    for (const CLI::App* train : probe.get_subcommands())  // --config "" (an unset variable), as train refuses it
      if (const std::string why = empty_path_refusal(*train, run.train_args); !why.empty()) throw ValueError(why);
    command.resolve();
    options.validate();
  } catch (const CLI::Error& e) {
    throw ValueError("run " + run.name + ": headlab train would refuse its flags: " + cli_error_text(e, probe.remaining()));
  } catch (const ValueError& e) {
    throw ValueError("run " + run.name + ": headlab train would refuse its flags: " + e.what());
  }
  return options;
}

std::map<std::string, std::string> planned_configs(const SweepPlan& plan) {
  std::map<std::string, std::string> planned;
  for (const SweepRun& run : plan.runs) planned[run.name] = check_train_arguments(run).to_config_ini();
  return planned;
}

std::map<std::string, std::string> runs_from_elsewhere(const SweepPlan& plan,
                                                       const std::map<std::string, std::string>& planned) {
  std::map<std::string, std::string> foreign;
  for (const SweepRun& run : plan.runs) {
    const fs::path config = plan.run_dir(run) / "config.ini";
    std::error_code ec;
    if (!fs::exists(config, ec)) continue;
    std::string difference;
    try {
      difference = config_difference(planned.at(run.name), config);
    } catch (const Error& e) {  // not a config.ini train writes
      difference = std::string("its config.ini cannot be read: ") + e.what();
    }
    if (!difference.empty())
      foreign[run.name] = plan.run_dir(run).string() + ": from another sweep: " + difference;
  }
  return foreign;
}

void refuse_runs_from_elsewhere(const std::map<std::string, std::string>& foreign, const std::string& advice) {
  if (foreign.empty()) return;
  std::string list;
  std::size_t shown = 0;
  for (const auto& entry : foreign) {
    if (shown++ == 5) break;
    list += "\n  " + entry.second;
  }
  if (foreign.size() > 5) list += "\n  and " + std::to_string(foreign.size() - 5) + " more";
  throw ValueError(std::to_string(foreign.size()) + " run director" + (foreign.size() == 1 ? "y holds" : "ies hold") +
                   " a run trained with other options than this plan gives it (never counted, resumed or "
                   "replaced):" + list + "\n" + advice);
}

std::size_t skip_runs_in_use(const SweepPlan& plan, std::vector<std::size_t>& todo) {
  std::vector<std::size_t> free;
  std::size_t busy = 0;
  for (std::size_t i : todo) {
    const std::string holder = run_dir_holder(plan.run_dir(plan.runs[i]));
    if (holder.empty()) {
      free.push_back(i);
      continue;
    }
    ++busy;
    std::cout << "busy   " << plan.runs[i].name << ": process " << holder
              << " holds its directory (a run in progress): left alone" << std::endl;
  }
  todo = free;
  return busy;
}

namespace {

// ---------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------

volatile std::sig_atomic_t g_stop_signal = 0;  // the SIGINT / SIGTERM received, 0 = none
void on_stop_signal(int signal) { g_stop_signal = signal; }

// Installs the handler for the lifetime of the object, then puts the old ones back.
struct StopSignals {
  struct sigaction old_int {}, old_term {};
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int);
    sigaction(SIGTERM, &action, &old_term);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------


// The last `count` lines of a file (a failed run's log, appended to by every attempt), each
// indented; only its last 64 KiB are read.
std::string tail_lines(const fs::path& path, std::size_t count) {
  std::ifstream in(path);
  std::error_code ec;
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > 64 * 1024) in.seekg(static_cast<std::streamoff>(size - 64 * 1024));
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > count) lines.pop_front();
  }
  std::string out;
  for (const auto& line : lines) out += "    " + line + "\n";
  return out;
}

// "exit 1", "killed by signal 9".
std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Starts one run: `exe train <args> --resume-or-start`, stdout and stderr appended to
// RUN_DIR/log.txt, stdin from /dev/null. Returns the child's pid.
// Each run gets `threads` threads (--threads before the command) unless its flags name their own.
pid_t start_run(const std::string& exe, const SweepPlan& plan, const SweepRun& run, int threads) {
  const fs::path dir = plan.run_dir(run);
  fs::create_directories(dir);
  const std::string log = (dir / "log.txt").string();

  std::vector<std::string> args = {exe};
  if (std::find(run.train_args.begin(), run.train_args.end(), "--threads") == run.train_args.end()) {
    args.push_back("--threads");
    args.push_back(std::to_string(threads));
  }
  args.push_back("train");
  args.insert(args.end(), run.train_args.begin(), run.train_args.end());
  args.push_back("--resume-or-start");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, exe.c_str(), &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (error != 0) throw IOError("cannot start '" + exe + "' for run " + run.name + ": " + std::strerror(error));
  return pid;
}

}  // namespace

SweepOutcome run_all(const std::string& exe, const SweepPlan& plan, const std::vector<std::size_t>& todo,
                     std::size_t jobs, int threads) {
  using clock = std::chrono::steady_clock;
  struct Running {
    std::size_t run;
    clock::time_point start;
  };
  StopSignals signals;
  SweepOutcome outcome;
  std::map<pid_t, Running> running;
  std::size_t next = 0, ended = 0;
  bool passed_on = false;  // the stop signal has been sent to the running children
  const std::string of_total = " of " + std::to_string(todo.size());
  // The runs at the same time share this process's threads (--threads), at least one each.
  const int threads_per_run =
      threads > 0 ? threads : std::max(1, headlab::threads() / static_cast<int>(std::max<std::size_t>(1, jobs)));

  while (running.size() > 0 || (next < todo.size() && g_stop_signal == 0)) {
    while (g_stop_signal == 0 && running.size() < jobs && next < todo.size()) {
      const SweepRun& run = plan.runs[todo[next]];
      const bool resume = run_state(plan.run_dir(run)) == RunState::Resumable;
      const pid_t pid = start_run(exe, plan, run, threads_per_run);
      running[pid] = {todo[next], clock::now()};
      ++next;
      std::cout << (resume ? "resume " : "start  ") << run.name << "  (run " << next << of_total << ")" << std::endl;
    }
    if (g_stop_signal != 0 && !passed_on) {
      // From a terminal the children got the signal already; a signal sent to us alone is passed on.
      for (const auto& child : running) ::kill(child.first, g_stop_signal);
      passed_on = true;
      outcome.stopped = true;
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid == 0 || (pid < 0 && errno == EINTR)) {
      // Nobody ended yet: look again shortly (polling keeps the signal handling simple).
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (pid < 0) throw IOError(std::string("waitpid: ") + std::strerror(errno));
    const auto it = running.find(pid);
    if (it == running.end()) continue;  // not one of ours
    const SweepRun& run = plan.runs[it->second.run];
    const double seconds = std::chrono::duration<double>(clock::now() - it->second.start).count();
    running.erase(it);
    ++ended;
    const fs::path log = plan.run_dir(run) / "log.txt";
    const std::string count = "  (" + std::to_string(ended) + of_total + " ended)";
    const bool exit_zero = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (exit_zero && run_state(plan.run_dir(run)) == RunState::Finished) {
      std::cout << "done   " << run.name << " in " << std::fixed << std::setprecision(1) << seconds << " s"
                << std::defaultfloat << count << std::endl;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 130) {
      ++outcome.interrupted;
      outcome.notes[run.name] = "interrupted: resumes on rerun";
      std::cout << "stopped " << run.name << ", checkpoint saved" << count << std::endl;
    } else if (g_stop_signal != 0 && WIFSIGNALED(status) &&
               (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM)) {
      // The stop signal (from the terminal, or passed on by us) reached the run before it could catch
      // it, while it was starting: nothing was saved and nothing failed; the rerun starts it again.
      ++outcome.interrupted;
      outcome.notes[run.name] = "interrupted while starting: starts again on rerun";
      std::cout << "stopped " << run.name << " while it was starting, nothing saved" << count << std::endl;
    } else {
      ++outcome.failed;
      const std::string why = exit_zero ? "exit 0 but no finished summary.json" : describe_status(status);
      outcome.notes[run.name] = "failed: " + why;
      std::cerr << "FAILED " << run.name << " (" << why << ")" << count << "; the end of " << log.string() << ":\n"
                << tail_lines(log, 8) << std::flush;
    }
  }
  if (g_stop_signal != 0) outcome.stopped = true;
  return outcome;
}


}  // namespace headlab::cli
