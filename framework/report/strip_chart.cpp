// strip_chart.cpp: every seed a dot, the mean and its 95% interval (headlab/report/strip_chart.hpp).
#include "headlab/report/strip_chart.hpp"

#include <algorithm>
#include <cmath>

#include "chart_axes.hpp"
#include "headlab/report/statistics.hpp"
#include "text_format.hpp"

namespace headlab {

using text_format::format;
using text_format::px;
using text_format::xml_escape;

namespace {
// A tick step of 1, 2 or 5 times a power of ten giving about five ticks over `span`.
double tick_step(double span) {
  const double raw = span / 5;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}
}  // namespace

std::string svg_strip_chart(const std::vector<StripCell>& cells, const StripChartOptions& o) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const StripCell& c : cells) {
    for (double v : c.values) lo = std::min(lo, v), hi = std::max(hi, v);
    if (c.values.size() > 1) {
      const SampleSummary s = summarize(c.values);
      if (std::isfinite(s.ci_low) && std::isfinite(s.ci_high)) lo = std::min(lo, s.ci_low), hi = std::max(hi, s.ci_high);
    }
  }
  if (std::isfinite(o.baseline)) lo = std::min(lo, o.baseline), hi = std::max(hi, o.baseline);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  detail::check_drawable_span(lo, hi, "svg_strip_chart");
  if (!(hi - lo > 1e-9 * std::max(1.0, std::fabs(hi)))) {  // one value (or nearly): a band around it
    const double pad = std::max(0.5, std::fabs(hi) * 1e-6);
    lo -= pad, hi += pad;
  }
  double step = tick_step(hi - lo);
  if (!std::isfinite(step) || step <= 0) step = hi - lo;
  lo = std::floor(lo / step) * step, hi = std::ceil(hi / step) * step;
  const double left = 70, top = 40, bottom = 70, right = 20;
  const double plot_h = o.height - top - bottom;
  const auto y = [&](double v) { return top + (hi - v) / (hi - lo) * plot_h; };
  const double slot = (o.width - left - right) / std::max<double>(1, double(cells.size()));

  std::string s = format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" ", o.width, o.height) +
                  "font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<text x=\"" + px(o.width / 2.0) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" + xml_escape(o.title) +
       "</text>\n";
  // Ticks counted, not stepped: where step is below the spacing of doubles near lo, t += step
  // would never move.
  const long ticks = std::lround((hi - lo) / step);
  for (long k = 0; k <= std::min(ticks, 50L); ++k) {
    const double t = lo + double(k) * step;
    const double tick = std::fabs(t) < step * 1e-9 ? 0.0 : t;
    s += "<line x1=\"" + px(left) + "\" x2=\"" + px(o.width - right) + "\" y1=\"" + px(y(tick)) + "\" y2=\"" +
         px(y(tick)) + "\" stroke=\"#ddd\"/><text x=\"" + px(left - 6) + "\" y=\"" + px(y(tick) + 4) +
         "\" text-anchor=\"end\">" + format("%g", tick) + "</text>\n";
  }
  const double mid = top + plot_h / 2;
  s += "<text x=\"16\" y=\"" + px(mid) + "\" transform=\"rotate(-90 16 " + px(mid) + ")\" text-anchor=\"middle\">" +
       xml_escape(o.y_label) + "</text>\n";
  if (std::isfinite(o.baseline))
    s += "<line x1=\"" + px(left) + "\" x2=\"" + px(o.width - right) + "\" y1=\"" + px(y(o.baseline)) + "\" y2=\"" +
         px(y(o.baseline)) + "\" stroke=\"#888\" stroke-dasharray=\"6 4\"/><text x=\"" + px(o.width - right) +
         "\" y=\"" + px(y(o.baseline) - 4) + "\" text-anchor=\"end\" fill=\"#555\">" + xml_escape(o.baseline_label) +
         "</text>\n";
  for (std::size_t k = 0; k < cells.size(); ++k) {
    const StripCell& c = cells[k];
    const double x = left + slot * (double(k) + 0.5);
    std::vector<double> sorted = c.values;
    std::sort(sorted.begin(), sorted.end());
    const double dot_gap = std::min(6.0, slot * 0.4 / std::max<double>(1, double(sorted.size())));
    for (std::size_t j = 0; j < sorted.size(); ++j)
      s += "<circle class=\"seed\" cx=\"" + px(x - 4 - dot_gap * double(sorted.size() - j)) + "\" cy=\"" +
           px(y(sorted[j])) + "\" r=\"3\" fill=\"#1f77b4\" fill-opacity=\"0.6\"><title>" + xml_escape(c.label) +
           ": " + format("%.4g", sorted[j]) + "</title></circle>\n";
    if (!sorted.empty()) {
      const SampleSummary sum = summarize(sorted);
      if (sum.n > 1 && std::isfinite(sum.ci_low) && std::isfinite(sum.ci_high))  // (an interval past 1.8e308: none)
        s += "<line class=\"ci\" x1=\"" + px(x + 8) + "\" x2=\"" + px(x + 8) + "\" y1=\"" + px(y(sum.ci_high)) +
             "\" y2=\"" + px(y(sum.ci_low)) + "\" stroke=\"#d62728\" stroke-width=\"2\"/>\n";
      s += "<line class=\"mean\" x1=\"" + px(x + 2) + "\" x2=\"" + px(x + 14) + "\" y1=\"" + px(y(sum.mean)) +
           "\" y2=\"" + px(y(sum.mean)) + "\" stroke=\"#d62728\" stroke-width=\"3\"/>\n";
    }
    s += "<text x=\"" + px(x) + "\" y=\"" + px(o.height - bottom + 18) + "\" text-anchor=\"middle\">" +
         xml_escape(c.label) + "</text>\n";
  }
  s += "<text x=\"" + px(left) + "\" y=\"" + px(o.height - 12) + "\" fill=\"#555\">" + xml_escape(o.footer) +
       "</text>\n</svg>\n";
  return s;
}

}  // namespace headlab
