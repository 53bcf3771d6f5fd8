// task_marker.cpp: HEADLAB_BLANK_TASKS and the catalogue the course target installs
// (headlab/core/task_marker.hpp).
#include "headlab/core/task_marker.hpp"

#include <algorithm>
#include <cstdlib>

#include "headlab/core/errors.hpp"

namespace headlab::task_marker {

namespace {

TaskCatalogue& catalogue() {
  static TaskCatalogue installed;
  return installed;
}

std::vector<std::string> parse_blank_list() {
  const char* env = std::getenv("HEADLAB_BLANK_TASKS");
  std::vector<std::string> ids;
  if (!env) return ids;
  const TaskCatalogue& known = catalogue();
  const std::string list(env);
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string id = list.substr(start, end - start);
    id.erase(0, id.find_first_not_of(" \t"));
    id.erase(id.find_last_not_of(" \t") + 1);
    if (id == "all") {
      if (known.all_ids) {
        for (const std::string& each : known.all_ids()) ids.push_back(each);
      } else {
        ids.push_back("all");  // no table to expand it from: every marker matches
      }
    } else if (!id.empty()) {
      if (known.is_known && !known.is_known(id)) {
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

void install_catalogue(const TaskCatalogue& installed) { catalogue() = installed; }

const std::vector<std::string>& blanked_tasks() {
  static const std::vector<std::string> ids = parse_blank_list();
  return ids;
}

bool task_blanked(const char* id) {
  const auto& ids = blanked_tasks();
  return std::find(ids.begin(), ids.end(), id) != ids.end() ||
         std::find(ids.begin(), ids.end(), "all") != ids.end();
}

std::string not_implemented_message(const std::string& id) {
  if (catalogue().not_implemented_message) return catalogue().not_implemented_message(id);
  return "TASK " + id + " is not implemented yet: fill in the region marked TASK " + id;
}

void throw_not_implemented(const char* id) { throw NotImplemented(not_implemented_message(id)); }

}  // namespace headlab::task_marker
