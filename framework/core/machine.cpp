// machine.cpp: the CPU's name (headlab/core/machine.hpp).
#include "headlab/core/machine.hpp"

#include <fstream>

namespace headlab {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    std::size_t start = colon + 1;
    while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
    std::size_t end = line.size();
    while (end > start && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
    if (end > start) return line.substr(start, end - start);
  }
  return "unknown";
}

}  // namespace headlab
