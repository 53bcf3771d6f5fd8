// chart_axes.cpp: the axes of the SVG charts (headlab/report/charts.hpp): ranges and ticks.
#include "chart_axes.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "headlab/core/errors.hpp"
#include "text_format.hpp"

namespace headlab::detail {

using text_format::format;

namespace {

// "Nice" numbers (Heckbert, Graphics Gems 1990): 1, 2 or 5 times a power of ten.
// round = true picks the nearest; round = false the smallest one >= x.
double nice_number(double x, bool round) {
  const double e = std::floor(std::log10(x));
  const double f = x / std::pow(10.0, e);  // in [1, 10)
  double nf;
  if (round)
    nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  else
    nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return nf * std::pow(10.0, e);
}

// Tick labels with as many digits as the tick step needs: steps of 0.05 give
// "0.05", "0.1", "0.15"; very large or small values use 1.5e+07 notation.
std::vector<std::string> linear_labels(const std::vector<double>& ticks, double step) {
  double max_abs = 0;
  for (double t : ticks) max_abs = std::max(max_abs, std::fabs(t));
  std::vector<std::string> labels;
  for (double t : ticks) {
    if (t == 0)
      labels.push_back("0");
    else if (max_abs < 1e6 && step >= 1)
      labels.push_back(format("%.0f", t));
    else if (max_abs < 1e6 && step >= 1e-4)
      labels.push_back(format("%.*f", static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), t));
    else {
      const int digits = static_cast<int>(std::floor(std::log10(max_abs)) - std::floor(std::log10(step)));
      labels.push_back(format("%.*e", std::clamp(digits, 0, 6), t));
    }
  }
  return labels;
}

// The 1-2-5 sequence (..., 0.5, 1, 2, 5, 10, 20, ...): the largest value <= v
// and the smallest value >= v.
double floor_125(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  const double m = v / p * (1 + 1e-12);
  return (m >= 5 ? 5 : m >= 2 ? 2 : 1) * p;
}
double ceil_125(double v) {
  const double p = std::pow(10.0, std::floor(std::log10(v)));
  const double m = v / p * (1 - 1e-12);
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

}  // namespace

void check_drawable_span(double lo, double hi, const std::string& who) {
  if (!std::isfinite(hi - lo))
    throw ValueError(who + ": values from " + format("%g", lo) + " to " + format("%g", hi) +
                     " span more than a double holds (about 1.8e308): no scale can draw them");
}

// A linear axis covering [dmin, dmax] with about `target` nice ticks; the ends
// are rounded out to whole ticks. Equal ends (one point, a constant series)
// are widened by 10% of the value (or by 1 around 0): never a zero range.
// ValueError when finite ends (widened) span more than a double holds: no scale can draw them.
Axis linear_axis(double dmin, double dmax, int target) {
  const bool finite = std::isfinite(dmin) && std::isfinite(dmax);
  if (!(dmin < dmax)) {
    const double pad = dmin == 0 ? 1 : std::fabs(dmin) * 0.1;
    dmin -= pad;
    dmax += pad;
  }
  if (finite) check_drawable_span(dmin, dmax, "chart axis");
  Axis axis;
  const double range = nice_number(dmax - dmin, false);
  const double step = nice_number(range / (target - 1), true);
  axis.lo = std::floor(dmin / step) * step;
  axis.hi = std::ceil(dmax / step) * step;
  if (!std::isfinite(step) || !std::isfinite(axis.lo) || !std::isfinite(axis.hi) || !(axis.lo < axis.hi)) {
    // Ranges at the edge of what a double holds: plain ends, no rounding.
    axis.lo = dmin;
    axis.hi = dmax;
    axis.ticks = {dmin, dmax};
    axis.labels = {format("%.3g", dmin), format("%.3g", dmax)};
    return axis;
  }
  for (int k = 0; k < 4 * target; ++k) {
    double v = axis.lo + k * step;
    if (v > axis.hi + step * 1e-9) break;
    if (std::fabs(v) < step * 1e-9) v = 0;  // 0.30000000000000004 - 0.3 is 0
    axis.ticks.push_back(v);
  }
  axis.labels = linear_labels(axis.ticks, step);
  return axis;
}

// A log axis from the largest 1-2-5 value <= dmin to the smallest >= dmax
// (both > 0). Ticks at 1, 2, 5 times powers of ten; if that is fewer than 3
// (a range such as 2 to 5), at every digit 1..9 times a power of ten; if more
// than 7, only powers of ten; if still more than 7, every few decades.
Axis log_axis(double dmin, double dmax) {
  // Subnormals (5e-324) would put the axis at log10(0) = -inf, and 1e308 its top 1-2-5 step at
  // +inf: clamp to the normal doubles, a power of ten inside them at the top.
  dmin = std::max(dmin, std::numeric_limits<double>::min());
  dmax = std::clamp(dmax, dmin, 1e307);
  double lo = floor_125(dmin), hi = ceil_125(dmax);
  if (!(lo < hi)) {  // a constant value sitting on a 1-2-5 step: one step either side
    lo = floor_125(lo * 0.999);
    hi = ceil_125(hi * 1.001);
  }
  Axis axis;
  axis.log = true;
  axis.lo = std::log10(lo);
  axis.hi = std::log10(hi);
  auto in_range = [&](double v) { return v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9); };
  const int e0 = static_cast<int>(std::floor(axis.lo)), e1 = static_cast<int>(std::ceil(axis.hi));
  for (int e = e0; e <= e1; ++e)
    for (double m : {1.0, 2.0, 5.0})
      if (in_range(m * std::pow(10.0, e))) axis.ticks.push_back(m * std::pow(10.0, e));
  if (axis.ticks.size() < 3) {  // a range within one or two 1-2-5 steps (2 to 5): every digit
    axis.ticks.clear();
    for (int e = e0; e <= e1; ++e)
      for (int m = 1; m <= 9; ++m)
        if (in_range(m * std::pow(10.0, e))) axis.ticks.push_back(m * std::pow(10.0, e));
  }
  if (axis.ticks.size() > 7) {
    axis.ticks.clear();
    for (int e = e0; e <= e1; ++e)
      if (in_range(std::pow(10.0, e))) axis.ticks.push_back(std::pow(10.0, e));
    if (axis.ticks.size() > 7) {
      const std::size_t stride = (axis.ticks.size() + 5) / 6;
      std::vector<double> kept;
      for (std::size_t i = 0; i < axis.ticks.size(); i += stride) kept.push_back(axis.ticks[i]);
      axis.ticks = kept;
    }
  }
  for (double t : axis.ticks) axis.labels.push_back(format("%g", t));
  return axis;
}

// A log2 axis (head counts) from dmin to dmax (both > 0) with ticks at the powers of two
// between them only: 1, 2, 4, 8, 16, never an empty tick at 3. Equal ends: half and twice the value.
Axis log2_axis(double dmin, double dmax) {
  if (!(dmin < dmax)) dmin /= 2, dmax *= 2;
  Axis axis;
  axis.log = true;
  axis.lo = std::log10(dmin);
  axis.hi = std::log10(dmax);
  for (int e = static_cast<int>(std::ceil(std::log2(dmin) - 1e-9)); std::ldexp(1.0, e) <= dmax * (1 + 1e-9); ++e) {
    axis.ticks.push_back(std::ldexp(1.0, e));
    axis.labels.push_back(format("%g", std::ldexp(1.0, e)));
  }
  return axis;
}

}  // namespace headlab::detail
