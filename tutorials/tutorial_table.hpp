// tutorial_table.hpp: what every tutorial shares: the shape table it prints
// and the small array helpers its checks use.
//   | tensor | computed as | shape | here |
// One row per step: its name, the formula, the symbolic shape and the real one.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab {

struct ShapeTable {
  struct Row {
    std::string step, how, symbolic, shape;
  };
  std::vector<Row> rows;

  void add(const std::string& step, const std::string& how, const std::string& symbolic, const Shape& shape) {
    rows.push_back({step, how, symbolic, shape_str(shape)});
  }
  void print() const {
    std::vector<Row> all{{"tensor", "computed as", "shape", "here"}};
    all.insert(all.end(), rows.begin(), rows.end());
    std::size_t w[4] = {0, 0, 0, 0};
    for (const Row& r : all) {
      w[0] = std::max(w[0], r.step.size());
      w[1] = std::max(w[1], r.how.size());
      w[2] = std::max(w[2], r.symbolic.size());
      w[3] = std::max(w[3], r.shape.size());
    }
    auto line = [&](const Row& r) {
      std::cout << "  | " << std::left << std::setw(int(w[0])) << r.step << " | " << std::setw(int(w[1])) << r.how
                << " | " << std::setw(int(w[2])) << r.symbolic << " | " << std::setw(int(w[3])) << r.shape << " |\n";
    };
    line(all[0]);
    std::cout << "  |" << std::string(w[0] + 2, '-') << "|" << std::string(w[1] + 2, '-') << "|"
              << std::string(w[2] + 2, '-') << "|" << std::string(w[3] + 2, '-') << "|\n";
    for (std::size_t i = 1; i < all.size(); ++i) line(all[i]);
  }
};

template <typename A>
Shape shape_of(const A& a) {
  return Shape(a.shape().begin(), a.shape().end());
}

// max |a - b| over all elements of two arrays of the same shape (infinity if the shapes differ).
template <typename T>
double max_abs_diff(const Array<T>& a, const Array<T>& b) {
  if (shape_of(a) != shape_of(b)) return std::numeric_limits<double>::infinity();
  double m = 0;  // +infinity when any difference is not finite: NaN never passes `< tol`
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = double(a.data()[i]), y = double(b.data()[i]);
    const double d = x == y ? 0.0 : std::fabs(x - y);
    if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

// Tokens joined by single spaces: {"der", "hund"} -> "der hund".
inline std::string joined(const std::vector<std::string>& tokens) {
  std::string s;
  for (std::size_t i = 0; i < tokens.size(); ++i) s += (i ? " " : "") + tokens[i];
  return s;
}

}  // namespace headlab
