// headlab/core/random.hpp: an explicit, seeded random generator.
//
// Every source of randomness (initialisation, dropout, data) takes a
// Generator&, so a run is reproduced by its seed. The distributions are
// written here rather than taken from <random>, whose uniform/normal
// distributions are implementation-defined: the same seed gives the same
// numbers with any standard library.
#pragma once

#include <cstdint>
#include <random>

namespace headlab {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : engine_(seed) {}
  void seed(std::uint64_t s) { engine_.seed(s); }

  std::uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double low, double high) { return low + (high - low) * uniform01(); }
  // Standard normal by Box-Muller (one value per call; no cached second value,
  // so the state is exactly the engine's).
  double normal();
  // Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n);

  const std::mt19937_64& engine() const { return engine_; }
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace headlab
