// course_command.cpp: `headlab course status` and `headlab course grade` (course_command.hpp).
//
// A task's result comes from running its doctest cases in a child process and reading doctest's
// console output: the summary line "test cases: N | P passed | F failed", the name of every failing
// case ("TEST CASE:  task 2.1: ...") with its first error, and the NotImplemented messages that say
// whether the task itself, or one of its prerequisites, is still blank.
#include "course_command.hpp"
#include "child_process.hpp"
#include "cli_values.hpp"
#include "course_provenance.hpp"

#include <algorithm>
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
#include "headlab/core/user_input.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/course/course.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

namespace {

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
      // Counts of 10^18 and more are no doctest summary (a test may print anything): skipped.
      if (m[1].length() > 18 || m[2].length() > 18 || m[3].length() > 18) continue;
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

// How many cases of task `t` the binary holds (doctest -ltc); 1 when it does not say.
std::size_t count_task_cases(const std::string& binary, const course::Task& t, const std::vector<std::string>& env) {
  const Run list = run_process(binary, {"-ltc", "-tc=task " + t.id + ":*", "--no-colors"}, env, 30);
  if (list.stopped_by_signal != 0) throw StoppedBySignal{list.stopped_by_signal};
  static const std::regex count(R"(passing the current filters:\s*(\d+))");
  std::smatch m;
  if (std::regex_search(list.output, m, count) && m[1].length() < 6) return std::max<std::size_t>(1, std::stoul(m[1]));
  return 1;
}

// Runs one task's cases in `binary` (when it exists) and folds them into `r`. The run may take
// o.task_timeout_s seconds when given, else o.case_timeout_s for each of the task's cases.
void run_task_cases(const std::string& binary, const course::Task& t, const SeedChoice& seed, const CourseOptions& o,
                    TaskResult& r, const std::string& which) {
  std::vector<std::string> env{"OPENBLAS_NUM_THREADS=1"};
  if (seed.set) env.push_back("HEADLAB_COURSE_SEED=" + std::to_string(seed.value));
  const std::size_t cases = o.task_timeout_s > 0 ? 0 : count_task_cases(binary, t, env);
  const long long scaled = static_cast<long long>(o.case_timeout_s) * static_cast<long long>(cases);
  const int timeout_s = o.task_timeout_s > 0 ? o.task_timeout_s : static_cast<int>(std::min<long long>(scaled, 86400LL * 7));
  const std::string limit = o.task_timeout_s > 0 ? "--task-timeout"
                                                 : "--case-timeout " + std::to_string(o.case_timeout_s) + " s x " +
                                                       std::to_string(cases) + (cases == 1 ? " case" : " cases");
  const Run run = run_process(binary, {"-tc=task " + t.id + ":*", "--no-colors"}, env, timeout_s);
  if (!run.started) throw IOError("course: cannot run " + binary);
  if (run.stopped_by_signal != 0) throw StoppedBySignal{run.stopped_by_signal};
  const CaseCounts c = read_doctest_output(run.output);
  r.cases += c.cases;
  r.passed += c.passed;
  for (const Failure& f : c.failures) r.failures.push_back({which + f.test_case, f.message});
  const bool ok = run.exit_code == 0 && c.summary && c.failed == 0;
  if (ok) return;
  std::string status;
  if (run.timed_out) {
    status = "fail";
    r.failures.push_back({which + "task " + t.id, "stopped after " + std::to_string(timeout_s) + " s (" + limit + ")"});
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
  const std::string own_tests = (build_dir() / "tests" / "headlab_tests").string();
  const std::string tests = o.tests.empty() ? own_tests : o.tests;
  const std::string hidden =
      o.grading_tests.empty() ? (build_dir() / "course" / "grading" / "headlab_grading_tests").string() : o.grading_tests;
  // A path given that is missing or no program (a directory, /dev/zero): named as such, not "not built".
  const auto not_a_program = [](const std::string& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) return std::string("does not exist");
    if (!fs::is_regular_file(status)) return std::string("is not a regular file");
    if ((status.permissions() & fs::perms::owner_exec) == fs::perms::none) return std::string("is not executable");
    return std::string();
  };
  for (const auto& [flag, path] : {std::pair{"--tests", o.tests}, std::pair{"--grading-tests", o.grading_tests}}) {
    if (path.empty() || (std::string(flag) == "--grading-tests" && !o.instructor)) continue;
    if (const std::string why = not_a_program(path); !why.empty()) {
      std::cerr << who << ": " << flag << " " << quote_clipped(path) << " " << why << ": give the test program (BUILD/"
                << (std::string(flag) == "--tests" ? "tests/headlab_tests" : "course/grading/headlab_grading_tests") << ")\n";
      return 2;
    }
  }
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
  if (grade) {  // the report's path, checked before the tests run (not after minutes of them)
    check_output_file(o.out, {tests, hidden}, "--out");
    std::error_code ec;
    if (!fs::is_directory(fs::absolute(o.out, ec).parent_path(), ec))
      throw ValueError("--out " + o.out.substr(0, 200) + ": its directory does not exist");
  }
  const SeedChoice seed = resolve_seed(o.seed_given, o.seed);
  const GradeProvenance provenance = grade_provenance(tests, own_tests);
  if (provenance.foreign_tests) {
    std::cerr << who << ": WARNING: --tests " << tests << " is not this build's test binary (" << own_tests
              << "); the result says what that program printed, not that this copy passes (recorded in the report)\n";
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
    run_task_cases(tests, t, seed, o, r, "");
    if (o.instructor) run_task_cases(hidden, t, seed, o, r, "hidden: ");
    if (r.cases == 0 && r.status.empty()) r.status = "no tests";
    if (r.status.empty()) r.status = "pass";
    r.points = r.status == "pass" ? t.points : 0;
    total += r.points;
    max_total += t.points;
    passing += r.status == "pass" ? 1 : 0;
    results.push_back(std::move(r));
  }

  // A task that does not pass while a task it needs (course/tasks.txt, transitively) does not pass
  // either is "waiting for" those, whatever blank its tests happened to reach first.
  std::map<std::string, const TaskResult*> by_id;
  for (const TaskResult& r : results) by_id[r.task->id] = &r;
  for (TaskResult& r : results) {
    if (r.status == "pass") continue;
    std::vector<std::string> to_visit = split_words(r.task->prerequisites), waiting;
    std::map<std::string, bool> seen;
    while (!to_visit.empty()) {
      const std::string id = to_visit.back();
      to_visit.pop_back();
      if (seen[id] || !by_id.count(id)) continue;
      seen[id] = true;
      if (by_id[id]->status != "pass") waiting.push_back(id);
      for (const std::string& d : split_words(by_id[id]->task->prerequisites)) to_visit.push_back(d);
    }
    if (waiting.empty()) continue;
    std::sort(waiting.begin(), waiting.end(), [&](const std::string& a, const std::string& b) {
      return by_id[a] < by_id[b];  // table order
    });
    std::string list;
    for (const std::string& id : waiting) list += (list.empty() ? "" : " ") + id;
    r.status = "waiting for " + list;
  }

  std::cout << who.substr(8) << ": " << tests << (o.instructor ? " and the hidden tests" : "")
            << (seed.set ? ", seed " + std::to_string(seed.value) + " (" + seed.source + ")" : ", default seed")
            << (provenance.foreign_tests ? ", NOT this build's test binary" : "") << "\n";
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
  report["seed"] = seed.set ? nlohmann::json(seed.value) : nlohmann::json(nullptr);
  report["ran"] = provenance_json(provenance, seed);
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
    sub->add_option("--tests", o.tests, "the task test binary (default: BUILD/tests/headlab_tests of this build)")->type_name("FILE");
    sub->add_option("--task-timeout", o.task_timeout_s, "seconds every task's test run may take before it is "
                                                         "stopped (and fails); default: --case-timeout per case")
        ->check(whole_number(1, 86400));
    sub->add_option("--case-timeout", o.case_timeout_s, "seconds a task's run may take per test case it has "
                                                         "(a task of 4 cases: 4 x this)")
        ->check(whole_number(1, 86400))
        ->capture_default_str();
  };
  CLI::App* status = course->add_subcommand("status", "every task: pass, fail, not started, and what it unlocks");
  add_common(status);
  CLI::App* grade = course->add_subcommand("grade", "points per task, the total, and a JSON report");
  add_common(grade);
  grade->add_flag("--instructor", o.instructor, "also run the hidden tests of course/grading/ (instructor's tree)");
  grade->add_option("--out", o.out, "the JSON report (replaced if it exists)")->type_name("FILE")->capture_default_str();
  grade->add_option("--grading-tests", o.grading_tests,
                    "the hidden test binary (default: BUILD/course/grading/headlab_grading_tests)")->type_name("FILE");
  return course;
}

int run_course(const CLI::App& course, const CourseOptions& options) {
  const bool grade = course.got_subcommand("grade");
  try {
    return run_course_tasks(options, grade);
  } catch (const IOError& e) {
    std::cerr << "headlab course: " << e.what() << "\n";
    return 1;
  } catch (const ValueError& e) {
    std::cerr << "headlab course: " << e.what() << "\n";
    return 2;
  } catch (const StoppedBySignal& i) {
    std::cerr << "headlab course: stopped by signal " << i.signal << " (the test run was stopped too); no report written\n";
    return 128 + i.signal;
  }
}

}  // namespace headlab::cli
