// course.cpp: the task table and HEADLAB_BLANK_TASKS (see headlab/course.hpp).
#include "headlab/course.hpp"

#include <algorithm>
#include <cstdlib>

namespace headlab::course {

const std::vector<Task>& tasks() {
  // Written by CMake from course/tasks.txt (cmake/HeadlabCourse.cmake): {"id", "title", "file"},
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

std::vector<std::string> parse_blank_list() {
  const char* env = std::getenv("HEADLAB_BLANK_TASKS");
  std::vector<std::string> ids;
  if (!env) return ids;
  const std::string list(env);
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string id = list.substr(start, end - start);
    id.erase(0, id.find_first_not_of(" \t"));
    id.erase(id.find_last_not_of(" \t") + 1);
    if (id == "all") {
      for (const Task& t : tasks()) ids.push_back(t.id);
    } else if (!id.empty()) {
      const bool known =
          std::any_of(tasks().begin(), tasks().end(), [&](const Task& t) { return t.id == id; });
      if (!known) {
        throw ValueError("HEADLAB_BLANK_TASKS: '" + id +
                         "' is not a task of course/tasks.txt (give ids such as 2.1, comma-separated, or all)");
      }
      ids.push_back(id);
    }
    start = end + 1;
  }
  return ids;
}

}  // namespace

const std::vector<std::string>& blanked_tasks() {
  static const std::vector<std::string> ids = parse_blank_list();
  return ids;
}

bool task_blanked(const char* id) {
  const auto& ids = blanked_tasks();
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

void throw_not_implemented(const char* id) { throw NotImplemented(not_implemented_message(id)); }

}  // namespace headlab::course
