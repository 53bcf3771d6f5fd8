// headlab/core/task_marker.hpp: the hook course mode hangs on (course/, docs/course.md).
//
// The reference solution of each course task is a marked region of the framework:
//
//   // BEGIN TASK 2.1: scaled dot-product attention
//   HEADLAB_TASK("2.1");
//   ...reference code...
//   // END TASK 2.1
//
// course/make_student_copy.py writes a copy of the repository in which every region is replaced
// by a throw of headlab::NotImplemented naming the task.
//
// In the reference build HEADLAB_TASK(id) does nothing unless the environment variable
// HEADLAB_BLANK_TASKS lists the task ("2.1,4.4", or "all"): then it throws the NotImplemented the
// student copy would throw. course/check_course.sh uses that to check, on one build, that each
// task's tests fail without it.
//
// The core knows nothing of the course itself: the task table (titles, files, which ids exist)
// lives in the course target (course/), which installs a TaskCatalogue here when it is linked in.
// Without one, ids are not checked and messages name the id alone.
#pragma once

#include <string>
#include <vector>

namespace headlab::task_marker {

// What the course target tells the hook. Both functions must be safe to call at any time.
struct TaskCatalogue {
  bool (*is_known)(const std::string& id) = nullptr;             // a task of course/tasks.txt?
  std::vector<std::string> (*all_ids)() = nullptr;               // every task, in file order
  std::string (*not_implemented_message)(const std::string& id) = nullptr;
};

// Called by the course target while the program starts (before any HEADLAB_TASK runs).
void install_catalogue(const TaskCatalogue& catalogue);

// The ids HEADLAB_BLANK_TASKS names, read once (throws ValueError on an id the catalogue does not know).
const std::vector<std::string>& blanked_tasks();

// True when HEADLAB_BLANK_TASKS names at least one task (the check in hot paths).
inline bool any_task_blanked() {
  static const bool any = !blanked_tasks().empty();
  return any;
}

bool task_blanked(const char* id);

// The message a blanked or missing task throws with (the catalogue's, or one naming the id).
std::string not_implemented_message(const std::string& id);

[[noreturn]] void throw_not_implemented(const char* id);

}  // namespace headlab::task_marker

// First statement of a task's region: throws NotImplemented when the task is blanked.
#define HEADLAB_TASK(id)                                                                         \
  do {                                                                                           \
    if (::headlab::task_marker::any_task_blanked() && ::headlab::task_marker::task_blanked(id))  \
      ::headlab::task_marker::throw_not_implemented(id);                                         \
  } while (false)
