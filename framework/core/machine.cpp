// machine.cpp: the CPU's name and what decides the arithmetic (headlab/core/machine.hpp).
#include "headlab/core/machine.hpp"

#include <cblas.h>

#include <algorithm>
#include <fstream>
#include <map>

namespace headlab {
namespace {

// The first value of each key of /proc/cpuinfo ("model name" -> "AMD EPYC"), trimmed; read once.
std::map<std::string, std::string> cpuinfo_fields() {
  std::map<std::string, std::string> fields;
  std::ifstream in("/proc/cpuinfo");
  const auto trimmed = [](const std::string& text, std::size_t start, std::size_t end) {
    while (start < end && (text[start] == ' ' || text[start] == '\t')) ++start;
    while (end > start && (text[end - 1] == ' ' || text[end - 1] == '\t')) --end;
    return text.substr(start, end - start);
  };
  for (std::string line; std::getline(in, line);) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    fields.emplace(trimmed(line, 0, colon), trimmed(line, colon + 1, line.size()));  // keeps the first
  }
  return fields;
}

// fields[key], or "" where there is none.
std::string field(const std::map<std::string, std::string>& fields, const std::string& key) {
  const auto it = fields.find(key);
  return it == fields.end() ? "" : it->second;
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
  std::string sets;
#if defined(__AVX512F__)
  sets += " AVX512F";
#endif
#if defined(__AVX2__)
  sets += " AVX2";
#endif
#if defined(__FMA__)
  sets += " FMA";
#endif
#if defined(__aarch64__)
  sets += " AArch64";
#endif
  return isa + " for" + (sets.empty() ? " the baseline instructions" : sets);
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

// The CPU (vendor, family and model, or Arm implementer and part), OpenBLAS's version and kernels,
// and the instruction sets compiled for: what arithmetic_fingerprint() returns.
std::string read_arithmetic_fingerprint() {
  const std::map<std::string, std::string> fields = cpuinfo_fields();
  std::string cpu = field(fields, "vendor_id");  // x86
  const std::string family = field(fields, "cpu family"), model = field(fields, "model");
  const std::string implementer = field(fields, "CPU implementer"), part = field(fields, "CPU part");  // Arm
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

}  // namespace

std::string cpu_model() {
  const std::string name = field(cpuinfo_fields(), "model name");
  return name.empty() ? "unknown" : name;
}

std::string arithmetic_fingerprint() {
  static const std::string fingerprint = read_arithmetic_fingerprint();  // a process never changes machine
  return fingerprint;
}

std::string continued_arithmetic(const std::string& earlier) {
  const std::string here = arithmetic_fingerprint();
  if (earlier.empty()) return "unrecorded, then " + here;
  const std::string then = ", then ";
  const std::size_t last = earlier.rfind(then);
  const std::string last_part = last == std::string::npos ? earlier : earlier.substr(last + then.size());
  if (last_part == here) return earlier;
  std::string joined = earlier + then + here;
  if (joined.size() > 2000) {  // the first part (clipped) and this machine's; "..." for the parts left out
    std::string first = earlier.substr(0, earlier.find(then));
    const std::string tail = (first.size() < earlier.size() ? then + "..." : "") + then + here;
    first.resize(std::min(first.size(), 2000 - std::min<std::size_t>(2000, tail.size())));
    joined = first + tail;
    if (joined.size() > 2000) joined = here.substr(0, 2000);
  }
  return joined;
}

}  // namespace headlab
