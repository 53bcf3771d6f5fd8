// number_text.hpp: numbers as the CLI's tables and CSV files print them.
#pragma once

#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

namespace headlab::cli {

// v with `digits` decimals ("0.098"); "" for NaN (a score that does not apply).
inline std::string fixed(double v, int digits = 3) {
  if (std::isnan(v)) return "";
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

}  // namespace headlab::cli
