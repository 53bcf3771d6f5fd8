// headlab/core/machine.hpp: what a result should name about the machine that made it.
#pragma once

#include <string>

namespace headlab {
// The first "model name" of /proc/cpuinfo ("AMD EPYC 7B13"), or "unknown" where there is none.
// Written into every run's summary.json ("cpu") and a study's runs.csv.
std::string cpu_model();
}  // namespace headlab
