// chart_axes.hpp (internal): the axes of report/charts.cpp's charts: a range rounded out to
// "nice" ticks (1, 2 or 5 times a power of ten) on a linear axis, or 1-2-5 values on a log axis.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace headlab::detail {

// One axis: its range [lo, hi] and tick values. For a log axis lo and hi are
// log10 of the range (the ticks stay in data units).
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;
  std::vector<std::string> labels;

  // Position of a data value as a fraction of the axis: 0 at lo, 1 at hi.
  double fraction(double v) const { return ((log ? std::log10(v) : v) - lo) / (hi - lo); }
};

// ValueError "<who>: values from lo to hi span more than a double holds ..." when hi - lo overflows:
// no scale can draw such values (finite ends near -1e308 and 1e308).
void check_drawable_span(double lo, double hi, const std::string& who);

// A linear axis covering [dmin, dmax] with about `target` nice ticks, ends rounded out to whole
// ticks; equal ends are widened (never a zero range); check_drawable_span for finite ends.
Axis linear_axis(double dmin, double dmax, int target = 5);

// A log axis (dmin, dmax > 0) with ticks at 1, 2, 5 times powers of ten (fewer or more as the
// range needs; chart_axes.cpp).
Axis log_axis(double dmin, double dmax);

// A log2 axis (head counts) with ticks at the powers of two between dmin and dmax (both > 0).
Axis log2_axis(double dmin, double dmax);

}  // namespace headlab::detail
