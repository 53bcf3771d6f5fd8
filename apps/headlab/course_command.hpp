// course_command.hpp: `headlab course status` and `headlab course grade`, a student's progress and
// grade in course mode (course/student/README.md for students, docs/course.md for instructors).
//
//   headlab course status [--seed N] [--tests BIN] [--task-timeout S]
//       every task of course/tasks.txt: pass, fail, not started (its own NotImplemented), or waiting
//       for a prerequisite, with its points and the tasks it unlocks
//   headlab course grade [--seed N] [--instructor] [--out FILE] [--tests BIN] [--grading-tests BIN]
//       the same runs, points per task (all or nothing) and the total, and a JSON report:
//       {"seed", "instructor", "points", "max_points", "ran": {"tests": {"path", "sha256", "foreign"},
//        "seed_source", "handout_commit", "diff_sha256", "sources", "note", "what_counts"},
//        "tasks": [{"task", "title", "status", "points", "max_points", "seed", "cases", "passed",
//        "failures": [{"case", "message"}]}]}
//       A --tests binary other than this build's own is run, but flagged on stderr and in "ran".
//
// Each task is one run of the test binary, `headlab_tests -tc="task <id>:*"` (and with --instructor
// also the hidden tests of course/grading/, `headlab_grading_tests`, which only the instructor's
// tree has), with HEADLAB_COURSE_SEED=N when --seed is given (else an inherited HEADLAB_COURSE_SEED,
// which must be a whole number, is used and reported). The binaries default to the ones next
// to this executable's build (BUILD/tests/headlab_tests, BUILD/course/grading/headlab_grading_tests).
// A run that takes longer than --task-timeout seconds (default 600) is stopped and counts as
// failed. Each run's output is kept up to its first and last MiB (doctest's summary is at the end).
// SIGINT/SIGTERM go on to the running test's process group; then grading stops (exit 128 + signal,
// no report).
// Exit status: 0 (status: always; grade: the report was written), 1 a file that cannot be written or
// a test binary that cannot be run, 2 a usage error (a missing binary, --instructor without the
// hidden tests).
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace headlab::cli {

struct CourseOptions {
  bool seed_given = false;
  std::uint64_t seed = 0;          // HEADLAB_COURSE_SEED for the test runs
  bool instructor = false;         // grade: run the hidden tests of course/grading/ too
  std::string out = "course_grade.json";  // grade: the JSON report (replaced if it exists)
  std::string tests;               // the task tests (default: next to this build)
  std::string grading_tests;       // the hidden tests (default: next to this build)
  // A task's test run is stopped (and fails) after task_timeout_s seconds when given (> 0), else
  // after case_timeout_s for each of its cases (a task of 4 cases: 4 x 60 s).
  int task_timeout_s = 0;
  int case_timeout_s = 60;
};

// Adds `course` with its subcommands `status` and `grade` to app; returns the `course` command.
CLI::App* add_course_command(CLI::App& app, CourseOptions& options);
// Runs the subcommand that was given (call when the returned command was parsed).
int run_course(const CLI::App& course, const CourseOptions& options);

}  // namespace headlab::cli
