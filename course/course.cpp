// course.cpp: the task table, installed into the core's task marker (headlab/course/course.hpp).
#include "headlab/course/course.hpp"

#include <algorithm>

namespace headlab::course {

const std::vector<Task>& tasks() {
  // Written by CMake from course/tasks.txt (cmake/HeadlabCourse.cmake):
  // {"id", "title", "file", "prerequisites", points},
  static const std::vector<Task> table = {
#include "headlab_course_tasks.inc"
  };
  return table;
}

std::string not_implemented_message(const std::string& id) {
  for (const Task& t : tasks()) {
    if (t.id == id) {
      return "TASK " + id + " (" + t.title + ") is not implemented yet: fill in the region marked TASK " + id +
             " in " + t.file;
    }
  }
  return "TASK " + id + " is not implemented yet (and course/tasks.txt does not declare it)";
}

namespace {

bool is_known(const std::string& id) {
  return std::any_of(tasks().begin(), tasks().end(), [&](const Task& t) { return t.id == id; });
}

std::vector<std::string> all_ids() {
  std::vector<std::string> ids;
  for (const Task& t : tasks()) ids.push_back(t.id);
  return ids;
}

// Runs while the program starts: from then on the core's markers check ids against the table
// and throw this table's messages.
const bool installed = [] {
  task_marker::TaskCatalogue catalogue;
  catalogue.is_known = &is_known;
  catalogue.all_ids = &all_ids;
  catalogue.not_implemented_message = &not_implemented_message;
  task_marker::install_catalogue(catalogue);
  return true;
}();

}  // namespace

}  // namespace headlab::course
