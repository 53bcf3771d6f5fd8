// headlab/core/machine.hpp: what a result should name about the machine that made it.
#pragma once

#include <string>

namespace headlab {
// The first "model name" of /proc/cpuinfo ("AMD EPYC 7B13"), or "unknown" where there is none.
// Written into every run's summary.json ("cpu") and a study's runs.csv.
std::string cpu_model();

// Most of what decides a run's arithmetic besides its options, seed, thread count and headlab's
// code: the CPU's vendor, family and model numbers (x86; implementer and part on Arm; a virtual
// machine may call both a Zen 3 and a Zen 5 "AMD EPYC"), OpenBLAS's version and the kernels it chose
// for that CPU when it loaded (they sum a product in different orders), and the compiler, whether it
// optimised and the vector instructions it compiled for (-march=native). Not every compiler flag is
// named: two builds of one commit on one machine with other flags may differ under one string.
// Where the string differs, the same run may give other bits. A run's record (summary.json's
// "arithmetic", a study's runs.csv, a checkpoint's metadata) is this string, or for a run resumed
// elsewhere continued_arithmetic's list.
// Example: "AuthenticAMD family 26 model 2; OpenBLAS 0.3.21 kernels Haswell; gcc 12.2.0 for AVX2 FMA"
std::string arithmetic_fingerprint();

// The arithmetic of a run that goes on here after steps made under `earlier` (what its checkpoint
// recorded; "" for one saved before the record, read as "unrecorded"): `earlier` when its last
// part is this machine's fingerprint, else "EARLIER, then THIS" (a resumed run that moved machine
// or build; a resume that makes no step still adds THIS: its evaluation runs here). Past 2000
// bytes the middle parts become "...".
std::string continued_arithmetic(const std::string& earlier);
}  // namespace headlab
