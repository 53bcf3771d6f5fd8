// course_command.cpp: `headlab course status` and `headlab course grade` (course_command.hpp).
//
// A task's result comes from running its doctest cases in a child process and reading doctest's
// console output: the summary line "test cases: N | P passed | F failed", the name of every failing
// case ("TEST CASE:  task 2.1: ...") with its first error, and the NotImplemented messages that say
// whether the task itself, or one of its prerequisites, is still blank.
#include "course_command.hpp"
#include "cli_values.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/course/course.hpp"

extern char** environ;

namespace headlab::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kTaskTimeoutSeconds = 600;

struct Run {
  bool started = false;     // the binary could be run at all
  bool timed_out = false;
  int exit_code = -1;       // -1: killed by a signal
  std::string output;       // stdout and stderr together
};

// Runs `binary args...` with `extra_env` added to the environment; output captured, killed (with its
// process group) after `timeout_s`.
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
    dup2(pipe_fd[1], STDOUT_FILENO);
    dup2(pipe_fd[1], STDERR_FILENO);
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(pipe_fd[1]);
  run.started = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buffer[65536];
  while (true) {
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
    run.output.append(buffer, static_cast<std::size_t>(n));
  }
  close(pipe_fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (run.exit_code == 127 && run.output.empty()) run.started = false;  // execve failed
  return run;
}

struct Failure {
  std::string test_case, message;
};

struct CaseCounts {
  std::size_t cases = 0, passed = 0, failed = 0;
  bool summary = false;  // doctest printed its summary (no crash)
  std::vector<Failure> failures;
};

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Reads doctest's console output (run with --no-colors).
CaseCounts read_doctest_output(const std::string& output) {
  CaseCounts c;
  static const std::regex summary(R"(test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed)");
  std::istringstream in(output);
  std::string line;
  Failure* current = nullptr;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, summary)) {
      c.cases = std::stoul(m[1]);
      c.passed = std::stoul(m[2]);
      c.failed = std::stoul(m[3]);
      c.summary = true;
      continue;
    }
    const auto tc = line.find("TEST CASE:");
    if (tc != std::string::npos) {
      const std::string name = trimmed(line.substr(tc + 10));
      if (c.failures.empty() || c.failures.back().test_case != name) c.failures.push_back({name, ""});
      current = &c.failures.back();
      continue;
    }
    const auto err = line.find("ERROR:");
    if (current && current->message.empty() && err != std::string::npos) current->message = trimmed(line.substr(err + 6));
  }
  for (Failure& f : c.failures) {
    if (f.message.size() > 400) f.message = f.message.substr(0, 400) + " ...";
  }
  return c;
}

// The ids of the tasks whose NotImplemented message the output contains.
std::vector<std::string> blank_tasks_named(const std::string& output) {
  std::vector<std::string> ids;
  for (const course::Task& t : course::tasks()) {
    if (output.find("TASK " + t.id + " (" + t.title + ") is not implemented yet") != std::string::npos) {
      ids.push_back(t.id);
    }
  }
  return ids;
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

struct TaskResult {
  const course::Task* task = nullptr;
  std::string status;   // pass | fail | not started | waiting for X | no tests
  std::size_t cases = 0, passed = 0;
  int points = 0;
  std::vector<Failure> failures;
};

// Runs one task's cases in `binary` (when it exists) and folds them into `r`.
void run_task_cases(const std::string& binary, const course::Task& t, const CourseOptions& o, TaskResult& r,
                    const std::string& which) {
  std::vector<std::string> env{"OPENBLAS_NUM_THREADS=1"};
  if (o.seed_given) env.push_back("HEADLAB_COURSE_SEED=" + std::to_string(o.seed));
  const Run run = run_process(binary, {"-tc=task " + t.id + ":*", "--no-colors"}, env, kTaskTimeoutSeconds);
  if (!run.started) throw IOError("course: cannot run " + binary);
  const CaseCounts c = read_doctest_output(run.output);
  r.cases += c.cases;
  r.passed += c.passed;
  for (const Failure& f : c.failures) r.failures.push_back({which + f.test_case, f.message});
  const bool ok = run.exit_code == 0 && c.summary && c.failed == 0;
  if (ok) return;
  std::string status;
  if (run.timed_out) {
    status = "fail";
    r.failures.push_back({which + "task " + t.id, "stopped after " + std::to_string(kTaskTimeoutSeconds) + " s"});
  } else if (!c.summary) {
    status = "fail";
    r.failures.push_back({which + "task " + t.id, "the test binary crashed (exit " + std::to_string(run.exit_code) +
                                                      "); run it yourself: " + binary + " -tc=\"task " + t.id + ":*\""});
  } else {
    const std::vector<std::string> blank = blank_tasks_named(run.output);
    bool self = false;
    std::string others;
    for (const std::string& id : blank) {
      if (id == t.id) {
        self = true;
      } else {
        others += (others.empty() ? "" : " ") + id;
      }
    }
    if (self && c.passed == 0) {
      status = "not started";
    } else if (!others.empty()) {
      status = "waiting for " + others;
    } else {
      status = "fail";
    }
  }
  if (r.status.empty() || r.status == "pass") r.status = status;
}

fs::path build_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path().parent_path();  // BUILD/apps/headlab -> BUILD
}

std::string pad(const std::string& s, std::size_t n) { return s.size() >= n ? s + " " : s + std::string(n - s.size(), ' '); }

int run_course_tasks(const CourseOptions& o, bool grade) {
  const std::string who = grade ? "headlab course grade" : "headlab course status";
  const std::string tests = o.tests.empty() ? (build_dir() / "tests" / "headlab_tests").string() : o.tests;
  const std::string hidden =
      o.grading_tests.empty() ? (build_dir() / "course" / "grading" / "headlab_grading_tests").string() : o.grading_tests;
  if (!fs::is_regular_file(tests)) {
    std::cerr << who << ": the task tests " << tests << " are not built: cmake --build --preset release --target "
              << "headlab_tests (or give --tests)\n";
    return 2;
  }
  if (o.instructor && !fs::is_regular_file(hidden)) {
    std::cerr << who << ": --instructor: the hidden tests " << hidden << " are not built; they ship only with the "
              << "instructor's tree (course/grading/): cmake --build --preset release --target headlab_grading_tests\n";
    return 2;
  }
  const auto& tasks = course::tasks();
  std::map<std::string, std::vector<std::string>> unlocks;  // id -> the tasks that list it as a prerequisite
  for (const course::Task& t : tasks)
    for (const std::string& d : split_words(t.prerequisites)) unlocks[d].push_back(t.id);

  std::vector<TaskResult> results;
  int total = 0, max_total = 0;
  std::size_t passing = 0;
  for (const course::Task& t : tasks) {
    TaskResult r;
    r.task = &t;
    run_task_cases(tests, t, o, r, "");
    if (o.instructor) run_task_cases(hidden, t, o, r, "hidden: ");
    if (r.cases == 0 && r.status.empty()) r.status = "no tests";
    if (r.status.empty()) r.status = "pass";
    r.points = r.status == "pass" ? t.points : 0;
    total += r.points;
    max_total += t.points;
    passing += r.status == "pass" ? 1 : 0;
    results.push_back(std::move(r));
  }

  std::cout << who.substr(8) << ": " << tests << (o.instructor ? " and the hidden tests" : "")
            << (o.seed_given ? ", seed " + std::to_string(o.seed) : ", default seed") << "\n";
  std::cout << pad("task", 6) << pad("status", 22) << pad("points", 8) << pad("title", 42) << "unlocks\n";
  const TaskResult* next = nullptr;
  for (const TaskResult& r : results) {
    std::string unlock;
    for (const std::string& id : unlocks[r.task->id]) unlock += (unlock.empty() ? "" : " ") + id;
    std::cout << pad(r.task->id, 6) << pad(r.status, 22)
              << pad(std::to_string(r.points) + "/" + std::to_string(r.task->points), 8) << pad(r.task->title, 42)
              << (unlock.empty() ? "-" : unlock) << "\n";
    if (!next && r.status != "pass" && r.status.rfind("waiting", 0) != 0) next = &r;
  }
  std::cout << passing << " of " << results.size() << " tasks pass, " << total << " of " << max_total << " points";
  if (next) std::cout << "; next: task " << next->task->id << " (course/tasks/" << next->task->id << ".md)";
  std::cout << "\n";
  if (!grade) {
    for (const TaskResult& r : results) {
      if (r.status != "fail") continue;
      for (const Failure& f : r.failures) std::cout << "  " << f.test_case << ": " << f.message << "\n";
    }
    return 0;
  }

  nlohmann::json report;
  report["seed"] = o.seed_given ? nlohmann::json(o.seed) : nlohmann::json(nullptr);
  report["instructor"] = o.instructor;
  report["points"] = total;
  report["max_points"] = max_total;
  report["tasks"] = nlohmann::json::array();
  for (const TaskResult& r : results) {
    nlohmann::json j;
    j["task"] = r.task->id;
    j["title"] = r.task->title;
    j["status"] = r.status;
    j["points"] = r.points;
    j["max_points"] = r.task->points;
    j["seed"] = report["seed"];
    j["cases"] = r.cases;
    j["passed"] = r.passed;
    j["failures"] = nlohmann::json::array();
    for (const Failure& f : r.failures) j["failures"].push_back({{"case", f.test_case}, {"message", f.message}});
    report["tasks"].push_back(j);
  }
  write_file_atomic(o.out, report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "course grade");
  std::cout << "wrote " << o.out << "\n";
  return 0;
}

}  // namespace

CLI::App* add_course_command(CLI::App& app, CourseOptions& o) {
  CLI::App* course = app.add_subcommand("course", "course mode: a student's progress (status) and grade (grade)");
  course->require_subcommand(1);
  auto add_common = [&o](CLI::App* sub) {
    sub->add_option("--seed", o.seed, "HEADLAB_COURSE_SEED of the test runs: moves their random inputs")
        ->check(whole_number(0, 1000000000000ULL))
        ->each([&o](const std::string&) { o.seed_given = true; });
    sub->add_option("--tests", o.tests, "the task test binary (default: BUILD/tests/headlab_tests of this build)");
  };
  CLI::App* status = course->add_subcommand("status", "every task: pass, fail, not started, and what it unlocks");
  add_common(status);
  CLI::App* grade = course->add_subcommand("grade", "points per task, the total, and a JSON report");
  add_common(grade);
  grade->add_flag("--instructor", o.instructor, "also run the hidden tests of course/grading/ (instructor's tree)");
  grade->add_option("--out", o.out, "the JSON report (replaced if it exists)")->capture_default_str();
  grade->add_option("--grading-tests", o.grading_tests,
                    "the hidden test binary (default: BUILD/course/grading/headlab_grading_tests)");
  return course;
}

int run_course(const CLI::App& course, const CourseOptions& options) {
  const bool grade = course.got_subcommand("grade");
  try {
    return run_course_tasks(options, grade);
  } catch (const IOError& e) {
    std::cerr << "headlab course: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace headlab::cli
