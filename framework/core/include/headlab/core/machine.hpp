// headlab/core/machine.hpp: what a result should name about the machine that made it.
#pragma once

#include <string>

namespace headlab {
// The first "model name" of /proc/cpuinfo ("AMD EPYC 7B13"), or "unknown" where there is none.
// Written into every run's summary.json ("cpu") and a study's runs.csv.
std::string cpu_model();

// What decides a run's arithmetic besides its options, seed, thread count and headlab's code:
//   the CPU's vendor, family and model numbers (a virtual machine may call both a Zen 3 and a Zen 5
//   "AMD EPYC"), the kernels OpenBLAS chose for that CPU when it loaded (they sum a product in
//   different orders), and the vector instructions headlab itself was compiled for (-march=native).
// Two runs with the same options and code give the same bits where this string is the same; where
// it differs they may not. Written into summary.json ("arithmetic") and a study's runs.csv.
// Example: "AuthenticAMD family 26 model 2; OpenBLAS kernels Haswell; compiled for AVX2 FMA"
std::string arithmetic_fingerprint();
}  // namespace headlab
