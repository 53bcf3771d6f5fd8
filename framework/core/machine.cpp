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

// The compiler, whether it optimised (GCC fuses multiply-adds only then), and the vector
// instruction sets this file was compiled with (the whole library shares its flags).
std::string compiled_for() {
#if defined(__clang__)
  std::string isa = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  std::string isa = std::string("gcc ") + __VERSION__;
#else
  std::string isa = "an unknown compiler";
#endif
#if !defined(__OPTIMIZE__)
  isa += " without optimisation";
#endif
  isa += " for";
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
  return isa.back() == 'r' ? isa + " the baseline instructions" : isa;
}

// "OpenBLAS 0.3.21" from openblas_get_config() ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell ...").
std::string openblas_version() {
  const char* config = openblas_get_config();
  if (!config) return "OpenBLAS";
  const std::string text = config;
  const std::size_t first = text.find(' ');
  const std::size_t second = first == std::string::npos ? first : text.find(' ', first + 1);
  return text.substr(0, second);
}

}  // namespace

std::string cpu_model() {
  const std::string name = cpuinfo_field("model name");
  return name.empty() ? "unknown" : name;
}

std::string arithmetic_fingerprint() {
  std::string cpu = cpuinfo_field("vendor_id");  // x86
  const std::string family = cpuinfo_field("cpu family"), model = cpuinfo_field("model\t");
  const std::string implementer = cpuinfo_field("CPU implementer"), part = cpuinfo_field("CPU part");  // Arm
  if (!cpu.empty()) {
    if (!family.empty()) cpu += " family " + family;
    if (!model.empty()) cpu += " model " + model;
  } else if (!implementer.empty()) {
    cpu = "Arm implementer " + implementer + " part " + part;
  } else {
    cpu = "unknown CPU";
  }
  const char* kernels = openblas_get_corename();
  return cpu + "; " + openblas_version() + " kernels " + (kernels ? kernels : "unknown") + "; " + compiled_for();
}

}  // namespace headlab
