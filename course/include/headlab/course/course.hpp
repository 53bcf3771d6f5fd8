// headlab/course/course.hpp: the course's task table (course/tasks.txt, docs/course.md).
//
// The markers themselves (HEADLAB_TASK, HEADLAB_BLANK_TASKS) are the core's
// (headlab/core/task_marker.hpp); this target holds what the core must not know: which tasks
// exist, their titles and files. Linking it (an object library, so that it is never dropped)
// installs the table into the core's hook before main() starts.
#pragma once

#include <string>
#include <vector>

#include "headlab/core/task_marker.hpp"

namespace headlab::course {

struct Task {
  std::string id, title, file;  // as in course/tasks.txt
  std::string prerequisites;    // the direct ones, space-separated ("" for none)
  int points = 0;               // what `headlab course grade` gives when all its cases pass
};

// Every task of course/tasks.txt, in file order (compiled in when the course target is configured).
const std::vector<Task>& tasks();

// "TASK 2.1 (scaled dot-product attention) is not implemented yet: fill in the region
// marked TASK 2.1 in framework/attention/sdpa.cpp"
std::string not_implemented_message(const std::string& id);

}  // namespace headlab::course
