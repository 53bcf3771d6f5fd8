// course.cpp: the task table, installed into the core's task marker (headlab/course/course.hpp).
#include "headlab/course/course.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "headlab/core/errors.hpp"

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

// A program (a tutorial, the CLI) that reaches a blank task lets NotImplemented escape main; then,
// instead of "terminate called after throwing ...", it says which region to fill in and exits 3:
//   TASK 2.1 (...) is not implemented yet: fill in the region marked TASK 2.1 in FILE (see course/tasks/2.1.md)
// Any other uncaught exception goes on to the default handler (abort).
const std::terminate_handler default_terminate = std::get_terminate();

[[noreturn]] void stop_on_blank_task() {
  if (const std::exception_ptr uncaught = std::current_exception()) {
    try {
      std::rethrow_exception(uncaught);
    } catch (const NotImplemented& e) {
      const std::string what = e.what();  // "TASK <id> (<title>) is not implemented yet: ..."
      const std::string id = what.rfind("TASK ", 0) == 0 ? what.substr(5, what.find(' ', 5) - 5) : "";
      std::fprintf(stderr, "%s%s\n", what.c_str(), id.empty() ? "" : (" (see course/tasks/" + id + ".md)").c_str());
      std::fflush(nullptr);  // what the program printed before, then this
      std::_Exit(3);
    } catch (...) {
    }
  }
  default_terminate ? default_terminate() : std::abort();
  std::abort();
}

// Runs while the program starts: from then on the core's markers check ids against the table
// and throw this table's messages, and an uncaught one stops the program as above.
const bool installed = [] {
  task_marker::TaskCatalogue catalogue;
  catalogue.is_known = &is_known;
  catalogue.all_ids = &all_ids;
  catalogue.not_implemented_message = &not_implemented_message;
  task_marker::install_catalogue(catalogue);
  std::set_terminate(&stop_on_blank_task);
  return true;
}();

}  // namespace

}  // namespace headlab::course
