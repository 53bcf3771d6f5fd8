// optim_checks.hpp (internal): the argument checks that optim.cpp (optimisers, clipping) and
// schedules.cpp (learning-rate schedules) share.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

#include "headlab/core/errors.hpp"

namespace headlab::detail {

inline std::string fmt(double v) {  // 6 significant digits, "1e-09" style for small values
  std::ostringstream os;
  os << v;
  return os.str();
}

inline void check_finite_nonnegative(const std::string& who, const char* what, double v) {
  if (!std::isfinite(v) || v < 0) throw ValueError(who + ": " + what + " must be finite and >= 0, got " + fmt(v));
}

}  // namespace headlab::detail
