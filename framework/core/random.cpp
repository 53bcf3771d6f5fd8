#include "headlab/core/random.hpp"

#include <cmath>

namespace headlab {

double Generator::normal() {
  // Box-Muller: z = sqrt(-2 ln u1) cos(2 pi u2), with u1 in (0, 1].
  const double u1 = 1.0 - uniform01();
  const double u2 = uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

std::uint64_t Generator::below(std::uint64_t n) {
  // Rejection sampling: no modulo bias.
  if (n == 0) return 0;
  const std::uint64_t limit = ~std::uint64_t(0) - (~std::uint64_t(0) % n);
  std::uint64_t x;
  do {
    x = next_u64();
  } while (x >= limit);
  return x % n;
}

}  // namespace headlab
