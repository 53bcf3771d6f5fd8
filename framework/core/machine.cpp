// machine.cpp: the CPU's name and what decides the arithmetic (headlab/core/machine.hpp).
#include "headlab/core/machine.hpp"

#include <cblas.h>

#include <fstream>

namespace headlab {
namespace {

// The value of the first /proc/cpuinfo line that starts with `key`, trimmed; "" where there is none.
std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::size_t start = colon + 1;
    while (start < line.size() && (line[start] == ' ' || line[start] == '\t')) ++start;
    std::size_t end = line.size();
    while (end > start && (line[end - 1] == ' ' || line[end - 1] == '\t')) --end;
    return line.substr(start, end - start);
  }
  return "";
}

// The vector instruction sets this file was compiled with (the whole library shares its flags).
std::string compiled_instructions() {
  std::string isa;
#if defined(__AVX512F__)
  isa += " AVX512F";
#endif
#if defined(__AVX2__)
  isa += " AVX2";
#endif
#if defined(__FMA__)
  isa += " FMA";
#endif
#if defined(__aarch64__)
  isa += " AArch64";
#endif
  return isa.empty() ? " baseline" : isa;
}

}  // namespace

std::string cpu_model() {
  const std::string name = cpuinfo_field("model name");
  return name.empty() ? "unknown" : name;
}

std::string arithmetic_fingerprint() {
  std::string cpu = cpuinfo_field("vendor_id");
  const std::string family = cpuinfo_field("cpu family");
  const std::string model = cpuinfo_field("model\t");
  if (cpu.empty()) cpu = "unknown CPU";
  if (!family.empty()) cpu += " family " + family;
  if (!model.empty()) cpu += " model " + model;
  const char* kernels = openblas_get_corename();
  return cpu + "; OpenBLAS kernels " + (kernels ? kernels : "unknown") + "; compiled for" + compiled_instructions();
}

}  // namespace headlab
