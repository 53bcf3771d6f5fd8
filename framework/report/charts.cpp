// charts.cpp: SVG line charts and the loss curve (see headlab/report/charts.hpp).
//
// The axes follow the usual recipe: a range rounded out to "nice" ticks (1, 2 or
// 5 times a power of ten) on a linear axis, or 1-2-5 values on a log axis.
#include "headlab/report/charts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "headlab/core/errors.hpp"
#include "text_format.hpp"

namespace headlab {

using text_format::display_length;
using text_format::format;
using text_format::px;
using text_format::xml_escape;

namespace {

// An XML comment may not contain "--" (nor end with '-').
std::string comment_safe(std::string s) {
  for (std::size_t p; (p = s.find("--")) != std::string::npos;) s.replace(p, 2, "- -");
  return s;
}

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

// A linear axis covering [dmin, dmax] with about `target` nice ticks; the ends
// are rounded out to whole ticks. Equal ends (one point, a constant series)
// are widened by 10% of the value (or by 1 around 0): never a zero range.
Axis linear_axis(double dmin, double dmax, int target = 5) {
  if (!(dmin < dmax)) {
    const double pad = dmin == 0 ? 1 : std::fabs(dmin) * 0.1;
    dmin -= pad;
    dmax += pad;
  }
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

// A log axis from the largest 1-2-5 value <= dmin to the smallest >= dmax
// (both > 0). Ticks at 1, 2, 5 times powers of ten; if that is more than 7,
// only powers of ten; if still more than 7, every few decades.
Axis log_axis(double dmin, double dmax) {
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

// Ten colours that are easy to tell apart (matplotlib's "tab10").
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

}  // namespace

std::string svg_line_chart(const std::vector<ChartSeries>& series, const ChartOptions& options) {
  if (options.width < 100 || options.height < 100)
    throw ValueError("svg_line_chart: width and height must be >= 100 pixels, got " +
                     std::to_string(options.width) + " x " + std::to_string(options.height));
  for (const auto& s : series) {
    if (s.x.size() != s.y.size())
      throw ValueError("svg_line_chart: series '" + s.name + "' has " + std::to_string(s.x.size()) +
                       " x values but " + std::to_string(s.y.size()) + " y values");
    if (!s.error.empty() && s.error.size() != s.y.size())
      throw ValueError("svg_line_chart: series '" + s.name + "' has " + std::to_string(s.error.size()) +
                       " error values for " + std::to_string(s.y.size()) + " points");
  }

  // 1. Which points can be drawn, and the range they (and their error bars) span.
  const double inf = std::numeric_limits<double>::infinity();
  auto drawable = [&](const ChartSeries& s, std::size_t i) {
    return std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && (!options.log_y || s.y[i] > 0);
  };
  auto error_of = [](const ChartSeries& s, std::size_t i) {  // 0 when there is no usable bar
    return !s.error.empty() && std::isfinite(s.error[i]) && s.error[i] > 0 ? s.error[i] : 0.0;
  };
  double xmin = inf, xmax = -inf, ymin = inf, ymax = -inf;
  std::vector<std::size_t> skipped(series.size(), 0);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const ChartSeries& s = series[k];
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s, i)) {
        ++skipped[k];
        continue;
      }
      const double e = error_of(s, i);
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      ymax = std::max(ymax, s.y[i] + e);
      // On a log axis a bar reaching 0 or below is cut at the bottom of the axis.
      ymin = std::min(ymin, options.log_y && s.y[i] - e <= 0 ? s.y[i] : s.y[i] - e);
    }
  }
  const bool no_data = !(xmin <= xmax);
  if (no_data) {
    xmin = 0, xmax = 1;
    ymin = options.log_y ? 1 : 0, ymax = options.log_y ? 10 : 1;
  }
  const Axis xaxis = linear_axis(xmin, xmax);
  const Axis yaxis = options.log_y ? log_axis(ymin, ymax) : linear_axis(ymin, ymax);

  // 2. Layout: the plot area is [left, right] x [top, bottom] in pixels (y grows down).
  const double W = options.width, H = options.height;
  const double left = 70, right = W - 20;
  const double top = options.title.empty() ? 20 : 40;
  const double bottom = H - (options.x_label.empty() ? 35 : 55);
  auto X = [&](double v) { return left + xaxis.fraction(v) * (right - left); };
  auto Y = [&](double v) { return bottom - yaxis.fraction(v) * (bottom - top); };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << options.width << "\" height=\"" << options.height
      << "\" viewBox=\"0 0 " << options.width << ' ' << options.height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    if (skipped[k] == 0) continue;
    svg << "<!-- " << comment_safe("series " + std::to_string(k) + " \"" + xml_escape(series[k].name) + "\": " +
                                   std::to_string(skipped[k]) + " of " + std::to_string(series[k].x.size()) +
                                   " points skipped (NaN or infinite" +
                                   (options.log_y ? ", or y <= 0 on the log axis)" : ")"))
        << " -->\n";
  }
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    svg << "<text x=\"" << px(W / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
        << xml_escape(options.title) << "</text>\n";

  // 3. Grid lines, ticks and their labels, the frame, the axis labels.
  svg << "<g stroke=\"#e5e5e5\">\n";
  for (double t : xaxis.ticks)
    svg << "<line x1=\"" << px(X(t)) << "\" y1=\"" << px(top) << "\" x2=\"" << px(X(t)) << "\" y2=\"" << px(bottom)
        << "\"/>\n";
  for (double t : yaxis.ticks)
    svg << "<line x1=\"" << px(left) << "\" y1=\"" << px(Y(t)) << "\" x2=\"" << px(right) << "\" y2=\"" << px(Y(t))
        << "\"/>\n";
  svg << "</g>\n<g fill=\"#333\">\n";
  for (std::size_t i = 0; i < xaxis.ticks.size(); ++i)
    svg << "<text x=\"" << px(X(xaxis.ticks[i])) << "\" y=\"" << px(bottom + 16) << "\" text-anchor=\"middle\">"
        << xml_escape(xaxis.labels[i]) << "</text>\n";
  for (std::size_t i = 0; i < yaxis.ticks.size(); ++i)
    svg << "<text x=\"" << px(left - 6) << "\" y=\"" << px(Y(yaxis.ticks[i])) << "\" dy=\"0.35em\" text-anchor=\"end\">"
        << xml_escape(yaxis.labels[i]) << "</text>\n";
  svg << "</g>\n";
  svg << "<rect x=\"" << px(left) << "\" y=\"" << px(top) << "\" width=\"" << px(right - left) << "\" height=\""
      << px(bottom - top) << "\" fill=\"none\" stroke=\"#333\"/>\n";
  if (!options.x_label.empty())
    svg << "<text x=\"" << px((left + right) / 2) << "\" y=\"" << px(H - 12) << "\" text-anchor=\"middle\">"
        << xml_escape(options.x_label) << "</text>\n";
  if (!options.y_label.empty())
    svg << "<text transform=\"translate(16 " << px((top + bottom) / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
        << xml_escape(options.y_label) << "</text>\n";

  // 4. The series: error bars (one <path> per series), the line, the dots.
  for (std::size_t k = 0; k < series.size(); ++k) {
    const ChartSeries& s = series[k];
    const std::string colour = kPalette[k % 10];
    const std::string dash = k >= 10 ? " stroke-dasharray=\"6 3\"" : "";  // after ten colours, dashed lines
    std::vector<std::size_t> points;
    for (std::size_t i = 0; i < s.x.size(); ++i)
      if (drawable(s, i)) points.push_back(i);
    svg << "<g>\n";
    std::string bars;
    for (std::size_t i : points) {
      const double e = error_of(s, i);
      if (e == 0) continue;
      const double lo = options.log_y && s.y[i] - e <= 0 ? bottom : Y(s.y[i] - e);
      const double hi = Y(s.y[i] + e);
      const double x = X(s.x[i]);
      // A vertical stroke with a short cap at each end.
      bars += "M" + px(x) + " " + px(lo) + "V" + px(hi) + "M" + px(x - 3) + " " + px(hi) + "H" + px(x + 3) + "M" +
              px(x - 3) + " " + px(lo) + "H" + px(x + 3);
    }
    if (!bars.empty())
      svg << "<path class=\"error-bars\" d=\"" << bars << "\" stroke=\"" << colour
          << "\" stroke-opacity=\"0.6\" fill=\"none\"/>\n";
    if (points.size() >= 2) {
      svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.8\"" << dash << " points=\"";
      for (std::size_t n = 0; n < points.size(); ++n)
        svg << (n ? " " : "") << px(X(s.x[points[n]])) << ',' << px(Y(s.y[points[n]]));
      svg << "\"/>\n";
    }
    if (points.size() == 1 || (points.size() <= options.markers_up_to))
      for (std::size_t i : points)
        svg << "<circle cx=\"" << px(X(s.x[i])) << "\" cy=\"" << px(Y(s.y[i])) << "\" r=\"2.5\" fill=\"" << colour
            << "\"/>\n";
    svg << "</g>\n";
  }

  // 5. The legend, in the top-right corner of the plot on a white box.
  std::vector<std::size_t> named;
  std::size_t longest = 0;
  for (std::size_t k = 0; k < series.size(); ++k) {
    if (series[k].name.empty()) continue;
    named.push_back(k);
    longest = std::max(longest, display_length(series[k].name));
  }
  if (!named.empty()) {
    const double box_w = 44 + 7.0 * static_cast<double>(longest), box_h = 8 + 18.0 * static_cast<double>(named.size());
    const double bx = right - box_w - 8, by = top + 8;
    svg << "<g class=\"legend\">\n<rect x=\"" << px(bx) << "\" y=\"" << px(by) << "\" width=\"" << px(box_w)
        << "\" height=\"" << px(box_h) << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n";
    for (std::size_t n = 0; n < named.size(); ++n) {
      const std::size_t k = named[n];
      const double cy = by + 13 + 18.0 * static_cast<double>(n);
      svg << "<line x1=\"" << px(bx + 8) << "\" y1=\"" << px(cy) << "\" x2=\"" << px(bx + 30) << "\" y2=\"" << px(cy)
          << "\" stroke=\"" << kPalette[k % 10] << "\" stroke-width=\"2\"" << (k >= 10 ? " stroke-dasharray=\"6 3\"" : "")
          << "/>\n<text x=\"" << px(bx + 36) << "\" y=\"" << px(cy) << "\" dy=\"0.35em\">" << xml_escape(series[k].name)
          << "</text>\n";
    }
    svg << "</g>\n";
  }
  if (no_data)
    svg << "<text x=\"" << px((left + right) / 2) << "\" y=\"" << px((top + bottom) / 2)
        << "\" text-anchor=\"middle\" fill=\"#999\">no data</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

std::string svg_loss_curve(const std::vector<double>& steps, const std::vector<double>& losses,
                           const std::string& title) {
  ChartOptions options;
  options.title = title;
  options.x_label = "step";
  options.y_label = "loss";
  return svg_line_chart({ChartSeries{"loss", steps, losses, {}}}, options);
}

}  // namespace headlab
