// headlab/course.hpp: course mode (docs/course.md).
//
// The reference solution of each course task is a marked region of framework/src:
//
//   // BEGIN TASK 2.1: scaled dot-product attention
//   HEADLAB_TASK("2.1");
//   ...reference code...
//   // END TASK 2.1
//
// course/tasks.txt declares the tasks (id, title, prerequisites, file, tutorial).
// scripts/make_student_copy.py writes a copy of the repository in which every
// region is replaced by a throw of headlab::NotImplemented naming the task.
//
// In the reference build, HEADLAB_TASK(id) does nothing unless the environment
// variable HEADLAB_BLANK_TASKS lists the task ("2.1,4.4", or "all"): then it
// throws the NotImplemented the student copy would throw. scripts/check_course.sh
// uses that to check, on one build, that each task's tests fail without it and
// that the tests of the tasks that do not depend on it still pass.
#pragma once

#include <string>
#include <vector>

#include "headlab/errors.hpp"

namespace headlab::course {

struct Task {
  std::string id, title, file;  // as in course/tasks.txt
};

// Every task of course/tasks.txt, in file order (compiled in when the library is configured).
const std::vector<Task>& tasks();

// "TASK 2.1 (scaled dot-product attention) is not implemented yet: fill in the region
// marked TASK 2.1 in framework/src/attention_sdpa.cpp"
std::string not_implemented_message(const std::string& id);

// The ids HEADLAB_BLANK_TASKS names, read once (throws ValueError on an unknown id).
const std::vector<std::string>& blanked_tasks();

// True when HEADLAB_BLANK_TASKS names at least one task (the check in hot paths).
inline bool any_task_blanked() {
  static const bool any = !blanked_tasks().empty();
  return any;
}

bool task_blanked(const char* id);

[[noreturn]] void throw_not_implemented(const char* id);

}  // namespace headlab::course

// First statement of a task's region: throws NotImplemented when the task is blanked.
#define HEADLAB_TASK(id)                                                                         \
  do {                                                                                           \
    if (::headlab::course::any_task_blanked() && ::headlab::course::task_blanked(id))            \
      ::headlab::course::throw_not_implemented(id);                                              \
  } while (false)
