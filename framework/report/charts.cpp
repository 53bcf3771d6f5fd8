// charts.cpp: SVG line charts and the loss curve (see headlab/report/charts.hpp); their axes
// (ranges and ticks) are in chart_axes.cpp.
#include "headlab/report/charts.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "chart_axes.hpp"
#include "headlab/core/errors.hpp"
#include "text_format.hpp"

namespace headlab {

using text_format::display_length;
using text_format::format;
using text_format::px;
using text_format::xml_escape;
using detail::Axis;
using detail::linear_axis;
using detail::log2_axis;
using detail::log_axis;

namespace {

// An XML comment may not contain "--" (nor end with '-').
std::string comment_safe(std::string s) {
  for (std::size_t p; (p = s.find("--")) != std::string::npos;) s.replace(p, 2, "- -");
  return s;
}

// Ten colours that are easy to tell apart (matplotlib's "tab10").
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Points with a NaN or infinite x or y (or a value <= 0 on a log axis) cannot be drawn.
bool drawable(const ChartSeries& s, std::size_t i, bool log_y, bool log_x) {
  return std::isfinite(s.x[i]) && std::isfinite(s.y[i]) && (!log_y || s.y[i] > 0) && (!log_x || s.x[i] > 0);
}
bool in_band(const ChartSeries& s, std::size_t i) {  // the band has both finite ends at point i
  return !s.band_low.empty() && std::isfinite(s.band_low[i]) && std::isfinite(s.band_high[i]);
}
double error_of(const ChartSeries& s, std::size_t i) {  // 0 when there is no usable bar
  return !s.error.empty() && std::isfinite(s.error[i]) && s.error[i] > 0 ? s.error[i] : 0.0;
}

// The range the drawable points of some series (and their error bars) span; lo > hi when none.
struct Range {
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  bool empty() const { return !(xmin <= xmax); }
};
Range range_of(const std::vector<ChartSeries>& series, bool log_y, bool log_x) {
  Range r;
  for (const ChartSeries& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s, i, log_y, log_x)) continue;
      if (in_band(s, i) && (!log_y || s.band_low[i] > 0)) {
        r.ymin = std::min(r.ymin, s.band_low[i]);
        r.ymax = std::max(r.ymax, s.band_high[i]);
      }
      const double e = error_of(s, i);
      r.xmin = std::min(r.xmin, s.x[i]);
      r.xmax = std::max(r.xmax, s.x[i]);
      r.ymax = std::max(r.ymax, s.y[i] + e);
      // On a log axis a bar reaching 0 or below is cut at the bottom of the axis.
      r.ymin = std::min(r.ymin, log_y && s.y[i] - e <= 0 ? s.y[i] : s.y[i] - e);
    }
  return r;
}

// The plot area of a panel in pixels: [left, right] x [top, bottom] (y grows down).
struct PlotArea {
  double left, right, top, bottom;
};

// One panel: grid lines, tick labels, frame, axis labels, the series (error bars, line, dots), the
// legend in the corner where it hides the least. The x axis is given (shared by the panels of a figure).
void draw_panel(std::ostringstream& svg, const ChartPanel& panel, const Axis& xaxis, const PlotArea& area,
                const std::string& x_label, double x_label_y, const ChartOptions& options) {
  const bool log_x = options.log2_x || options.log_x;
  Range range = range_of(panel.series, panel.log_y, log_x);
  const bool no_data = range.empty();
  if (!no_data && !panel.log_y)
    for (double v : panel.y_includes)
      if (std::isfinite(v)) range.ymin = std::min(range.ymin, v), range.ymax = std::max(range.ymax, v);
  Axis yaxis = no_data ? (panel.log_y ? log_axis(1, 10) : linear_axis(0, 1))
               : panel.log_y ? log_axis(range.ymin, range.ymax)
                             : linear_axis(range.ymin, range.ymax);
  // Plain copies, not a structured binding: lambdas may not capture those before C++20 (clang 14).
  const double left = area.left, right = area.right, top = area.top, bottom = area.bottom;
  // The axes' ends sit `inset` pixels inside the frame: a point at an end, its dot and its error
  // bar's caps are drawn whole, not cut in half by the frame.
  const double inset_x = 12, inset_y = 8;
  auto X = [&](double v) { return left + inset_x + xaxis.fraction(v) * (right - left - 2 * inset_x); };
  auto Y = [&](double v) { return bottom - inset_y - yaxis.fraction(v) * (bottom - top - 2 * inset_y); };

  // The legend: a box in the corner whose box covers the fewest drawn points, segment midpoints,
  // error bar ends and band corners (top right on a tie). When every corner hides some, a linear
  // y axis is stretched upwards by the box's height, so that the top corners are free.
  std::vector<std::size_t> named;
  std::size_t longest = 0;
  for (std::size_t k = 0; k < panel.series.size(); ++k) {
    if (panel.series[k].name.empty()) continue;
    named.push_back(k);
    longest = std::max(longest, display_length(panel.series[k].name));
  }
  const double box_w = 44 + 7.0 * static_cast<double>(longest), box_h = 8 + 18.0 * static_cast<double>(named.size());
  const double corners[4][2] = {{right - box_w - 8, top + 8},
                                {left + 8, top + 8},
                                {right - box_w - 8, bottom - box_h - 8},
                                {left + 8, bottom - box_h - 8}};
  auto hidden_at = [&](std::size_t c) {
    const double cx = corners[c][0], cy = corners[c][1];
    auto inside = [&](double x, double y) {
      return x >= cx - 4 && x <= cx + box_w + 4 && y >= cy - 4 && y <= cy + box_h + 4;
    };
    std::size_t hidden = 0;
    for (const ChartSeries& s : panel.series)
      for (std::size_t i = 0; i < s.x.size(); ++i) {
        if (!drawable(s, i, panel.log_y, log_x)) continue;
        const double x = X(s.x[i]), e = error_of(s, i);
        hidden += inside(x, Y(s.y[i]));
        if (i + 1 < s.x.size() && drawable(s, i + 1, panel.log_y, log_x))
          hidden += inside((x + X(s.x[i + 1])) / 2, (Y(s.y[i]) + Y(s.y[i + 1])) / 2);
        if (e > 0) hidden += inside(x, Y(s.y[i] + e)) + (!panel.log_y || s.y[i] - e > 0 ? inside(x, Y(s.y[i] - e)) : 0);
        if (in_band(s, i) && (!panel.log_y || s.band_low[i] > 0))
          hidden += inside(x, Y(s.band_high[i])) + inside(x, Y(s.band_low[i]));
      }
    return hidden;
  };
  auto best_corner = [&]() {
    std::size_t best = 0;
    for (std::size_t c = 1; c < 4; ++c)
      if (hidden_at(c) < hidden_at(best)) best = c;
    return best;
  };
  std::size_t legend_corner = named.empty() ? 0 : best_corner();
  const double plot_h = bottom - top - 2 * inset_y, legend_room = box_h + 16;
  if (!named.empty() && !no_data && !panel.log_y && hidden_at(legend_corner) > 0 && legend_room < plot_h / 2) {
    range.ymax += (range.ymax - range.ymin) * legend_room / (plot_h - legend_room);
    yaxis = linear_axis(range.ymin, range.ymax);
    legend_corner = best_corner();
  }

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
  if (!x_label.empty())
    svg << "<text x=\"" << px((left + right) / 2) << "\" y=\"" << px(x_label_y) << "\" text-anchor=\"middle\">"
        << xml_escape(x_label) << "</text>\n";
  if (!panel.y_label.empty())
    svg << "<text transform=\"translate(16 " << px((top + bottom) / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
        << xml_escape(panel.y_label) << "</text>\n";

  const double n_series = static_cast<double>(panel.series.size());
  for (std::size_t k = 0; k < panel.series.size(); ++k) {
    const ChartSeries& s = panel.series[k];
    const std::string colour = kPalette[k % 10];
    const std::string dash = k >= 10 ? " stroke-dasharray=\"6 3\"" : "";  // after ten colours, dashed lines
    const double shift = (static_cast<double>(k) - (n_series - 1) / 2) * options.series_offset;
    auto SX = [&](double v) { return X(v) + shift; };
    std::vector<std::size_t> points;
    for (std::size_t i = 0; i < s.x.size(); ++i)
      if (drawable(s, i, panel.log_y, log_x)) points.push_back(i);
    svg << "<g>\n";
    // The band: along the upper ends left to right, back along the lower ends.
    std::vector<std::size_t> banded;
    for (std::size_t i : points)
      if (in_band(s, i) && (!panel.log_y || s.band_low[i] > 0)) banded.push_back(i);
    if (banded.size() >= 2) {
      svg << "<path class=\"band\" d=\"";
      for (std::size_t n = 0; n < banded.size(); ++n)
        svg << (n ? "L" : "M") << px(SX(s.x[banded[n]])) << ' ' << px(Y(s.band_high[banded[n]]));
      for (std::size_t n = banded.size(); n-- > 0;)
        svg << 'L' << px(SX(s.x[banded[n]])) << ' ' << px(Y(s.band_low[banded[n]]));
      svg << "Z\" fill=\"" << colour << "\" fill-opacity=\"0.18\" stroke=\"none\"/>\n";
    }
    std::string bars;
    for (std::size_t i : points) {
      const double e = error_of(s, i);
      if (e == 0) continue;
      const double lo = panel.log_y && s.y[i] - e <= 0 ? bottom : Y(s.y[i] - e);
      const double hi = Y(s.y[i] + e);
      const double x = SX(s.x[i]);
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
        svg << (n ? " " : "") << px(SX(s.x[points[n]])) << ',' << px(Y(s.y[points[n]]));
      svg << "\"/>\n";
    }
    if (points.size() == 1 || (points.size() <= options.markers_up_to))
      for (std::size_t i : points)
        svg << "<circle cx=\"" << px(SX(s.x[i])) << "\" cy=\"" << px(Y(s.y[i])) << "\" r=\"2.5\" fill=\"" << colour
            << "\"/>\n";
    svg << "</g>\n";
  }

  if (!named.empty()) {
    const double bx = corners[legend_corner][0], by = corners[legend_corner][1];
    svg << "<g class=\"legend\">\n<rect x=\"" << px(bx) << "\" y=\"" << px(by) << "\" width=\"" << px(box_w)
        << "\" height=\"" << px(box_h) << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n";
    for (std::size_t n = 0; n < named.size(); ++n) {
      const std::size_t k = named[n];
      const double cy = by + 13 + 18.0 * static_cast<double>(n);
      svg << "<line x1=\"" << px(bx + 8) << "\" y1=\"" << px(cy) << "\" x2=\"" << px(bx + 30) << "\" y2=\"" << px(cy)
          << "\" stroke=\"" << kPalette[k % 10] << "\" stroke-width=\"2\"" << (k >= 10 ? " stroke-dasharray=\"6 3\"" : "")
          << "/>\n<text x=\"" << px(bx + 36) << "\" y=\"" << px(cy) << "\" dy=\"0.35em\">"
          << xml_escape(panel.series[k].name) << "</text>\n";
    }
    svg << "</g>\n";
  }
  if (no_data)
    svg << "<text x=\"" << px((left + right) / 2) << "\" y=\"" << px((top + bottom) / 2)
        << "\" text-anchor=\"middle\" fill=\"#999\">no data</text>\n";
}

}  // namespace

std::string svg_chart_panels(const std::vector<ChartPanel>& panels, const ChartOptions& options) {
  if (options.width < 100 || options.height < 100)
    throw ValueError("svg_line_chart: width and height must be >= 100 pixels, got " +
                     std::to_string(options.width) + " x " + std::to_string(options.height));
  if (panels.empty()) throw ValueError("svg_chart_panels: no panel to draw");
  for (const ChartPanel& panel : panels)
    for (const auto& s : panel.series) {
      if (s.x.size() != s.y.size())
        throw ValueError("svg_line_chart: series '" + s.name + "' has " + std::to_string(s.x.size()) +
                         " x values but " + std::to_string(s.y.size()) + " y values");
      if (!s.error.empty() && s.error.size() != s.y.size())
        throw ValueError("svg_line_chart: series '" + s.name + "' has " + std::to_string(s.error.size()) +
                         " error values for " + std::to_string(s.y.size()) + " points");
      if ((!s.band_low.empty() || !s.band_high.empty()) &&
          (s.band_low.size() != s.y.size() || s.band_high.size() != s.y.size()))
        throw ValueError("svg_line_chart: series '" + s.name + "' has a band of " +
                         std::to_string(s.band_low.size()) + " low and " + std::to_string(s.band_high.size()) +
                         " high values for " + std::to_string(s.y.size()) + " points");
    }

  // The x axis all panels share: the range of every drawable point.
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin;
  for (const ChartPanel& panel : panels) {
    const Range r = range_of(panel.series, panel.log_y, options.log2_x || options.log_x);
    xmin = std::min(xmin, r.xmin);
    xmax = std::max(xmax, r.xmax);
  }
  if (!(xmin <= xmax)) xmin = 0, xmax = 1;
  const Axis xaxis = options.log2_x  ? (xmin > 0 ? log2_axis(xmin, xmax) : log2_axis(1, 2))
                     : options.log_x ? (xmin > 0 ? log_axis(xmin, xmax) : log_axis(1, 10))
                                     : linear_axis(xmin, xmax);

  // Layout: panel p fills rows [p H, (p + 1) H) of the figure; the title sits above the first, the
  // x label under the last.
  const double W = options.width, H = options.height;
  const std::size_t n = panels.size();
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << options.width << "\" height=\""
      << options.height * static_cast<long long>(n) << "\" viewBox=\"0 0 " << options.width << ' '
      << options.height * static_cast<long long>(n) << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t k = 0; k < panels[p].series.size(); ++k) {
      const ChartSeries& s = panels[p].series[k];
      std::size_t skipped = 0;
      for (std::size_t i = 0; i < s.x.size(); ++i)
        skipped += !drawable(s, i, panels[p].log_y, options.log2_x || options.log_x);
      if (skipped == 0) continue;
      const std::string which = (n > 1 ? "panel " + std::to_string(p) + " " : "") + "series " + std::to_string(k);
      svg << "<!-- " << comment_safe(which + " \"" + xml_escape(s.name) + "\": " + std::to_string(skipped) + " of " +
                                     std::to_string(s.x.size()) + " points skipped (NaN or infinite" +
                                     (panels[p].log_y ? ", or y <= 0 on the log axis" : "") +
                                     (options.log2_x ? ", or x <= 0 on the log2 axis)" : options.log_x ? ", or x <= 0 on the log x axis)" : ")"))
          << " -->\n";
    }
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    svg << "<text x=\"" << px(W / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
        << xml_escape(options.title) << "</text>\n";
  for (std::size_t p = 0; p < n; ++p) {
    const double slot_top = H * static_cast<double>(p), slot_bottom = slot_top + H;
    const bool first = p == 0, last = p + 1 == n;
    const PlotArea area{70, W - 20, slot_top + (first && !options.title.empty() ? 40 : 20),
                        slot_bottom - (last && !options.x_label.empty() ? 55 : 35)};
    draw_panel(svg, panels[p], xaxis, area, last ? options.x_label : "", slot_bottom - 12, options);
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string svg_line_chart(const std::vector<ChartSeries>& series, const ChartOptions& options) {
  return svg_chart_panels({ChartPanel{options.y_label, series, options.log_y}}, options);
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
