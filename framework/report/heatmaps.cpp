// heatmaps.cpp: svg_heatmap, a table of numbers as coloured cells (see headlab/report/heatmaps.hpp).
// Its colour scale, <defs> and labels are shared with attention_grid.cpp (heatmap_cells.cpp).
#include "headlab/report/heatmaps.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "headlab/core/errors.hpp"
#include "heatmap_cells.hpp"
#include "text_format.hpp"

namespace headlab {

using text_format::display_length;
using text_format::format;
using text_format::px;
using text_format::xml_escape;
using detail::blues;
using detail::heatmap_defs;
using detail::hex;
using detail::labels_or_indices;
using detail::longest;
using detail::Rgb;
using detail::value_text;

namespace {

// Text on a cell of this colour: white on dark cells, near-black on light ones.
const char* text_colour_on(const Rgb& c) {
  return (0.299 * c.r + 0.587 * c.g + 0.114 * c.b) / 255 < 0.5 ? "#ffffff" : "#222222";
}

// A value in a cell: two decimals, never "-0.00"; NaN is "n/a".
std::string cell_text(double v) {
  if (std::isnan(v)) return "n/a";
  std::string s = format("%.2f", v);
  if (s == "-0.00") s = "0.00";
  return s;
}

// A tick of a colour bar: 3 significant digits, "0" rather than "-0".
std::string tick_text(double v) {
  const std::string s = format("%.3g", v);
  return s == "-0" ? "0" : s;
}

}  // namespace

std::string svg_heatmap(const std::vector<std::vector<double>>& values, const HeatmapOptions& options) {
  // 1. Checks.
  if (values.empty()) throw ValueError("svg_heatmap: values must be at least 1 x 1, got 0 rows");
  const std::size_t rows = values.size(), cols = values[0].size();
  if (cols == 0)
    throw ValueError("svg_heatmap: values must be at least 1 x 1, got " + std::to_string(rows) +
                     " rows of 0 values");
  for (std::size_t r = 1; r < rows; ++r)
    if (values[r].size() != cols)
      throw ValueError("svg_heatmap: values must be rectangular: row " + std::to_string(r) + " has " +
                       std::to_string(values[r].size()) + " values but row 0 has " + std::to_string(cols));
  if (!options.row_labels.empty() && options.row_labels.size() != rows)
    throw ValueError("svg_heatmap: " + std::to_string(options.row_labels.size()) + " row_labels for " +
                     std::to_string(rows) + " rows of values");
  if (!options.col_labels.empty() && options.col_labels.size() != cols)
    throw ValueError("svg_heatmap: " + std::to_string(options.col_labels.size()) + " col_labels for " +
                     std::to_string(cols) + " columns of values");
  if (options.cell < 4) throw ValueError("svg_heatmap: cell must be >= 4 pixels, got " + std::to_string(options.cell));
  if ((options.vmin && !std::isfinite(*options.vmin)) || (options.vmax && !std::isfinite(*options.vmax)))
    throw ValueError("svg_heatmap: vmin and vmax must be finite");
  if (options.reference && !std::isfinite(*options.reference))
    throw ValueError("svg_heatmap: reference must be finite, got " + value_text(*options.reference));
  if (options.vmin && options.vmax && !(*options.vmin < *options.vmax))
    throw ValueError("svg_heatmap: vmin (" + value_text(*options.vmin) + ") must be less than vmax (" +
                     value_text(*options.vmax) + ")");

  // 2. The colour scale [lo, hi]: the given ends, else the range of the finite values.
  const double inf = std::numeric_limits<double>::infinity();
  double dmin = inf, dmax = -inf;
  std::size_t nan_cells = 0;
  for (const auto& row : values)
    for (double v : row) {
      if (std::isnan(v)) ++nan_cells;
      if (!std::isfinite(v)) continue;
      dmin = std::min(dmin, v);
      dmax = std::max(dmax, v);
    }
  if (!(dmin <= dmax)) dmin = 0, dmax = 1;  // no finite value at all
  double lo = options.vmin ? *options.vmin : dmin;
  double hi = options.vmax ? *options.vmax : dmax;
  if (!(lo < hi)) {
    // Constant data, or one given end beyond all the data: widen the end(s) not given.
    auto pad = [](double v) { return v == 0 ? 1.0 : std::fabs(v) * 0.1; };
    if (options.vmin && !options.vmax)
      hi = lo + pad(lo);
    else if (options.vmax && !options.vmin)
      lo = hi - pad(hi);
    else {
      const double p = pad(lo);
      lo -= p;
      hi += p;
    }
    if (!(lo < hi)) lo -= 1, hi += 1;  // a pad too small to matter (denormals)
  }
  auto colour_of = [&](double v) { return blues((v - lo) / (hi - lo)); };  // +-inf clamp to the ends

  // 3. Layout (pixels; y grows down). Text widths are estimated at 7 px a
  // character for the 12 px labels: no font is measured.
  const std::vector<std::string> row_text = labels_or_indices(options.row_labels, rows);
  const std::vector<std::string> col_text = labels_or_indices(options.col_labels, cols);
  const double C = options.cell, char_w = 7;
  const double grid_w = C * static_cast<double>(cols), grid_h = C * static_cast<double>(rows);
  const double col_len = static_cast<double>(longest(col_text));
  const bool rotate_cols = col_len * char_w + 4 > C;
  const double col_label_h = rotate_cols ? col_len * char_w + 10 : 20;
  const double left = 10 + (options.y_label.empty() ? 0 : 22) + static_cast<double>(longest(row_text)) * char_w + 8;
  const double top = options.title.empty() ? 14 : 40;
  const double grid_bottom = top + grid_h, grid_right = left + grid_w;
  const double bar_x = grid_right + 18, bar_w = 18, bar_h = std::max(grid_h, 140.0);
  const std::string hi_text = tick_text(hi), lo_text = tick_text(lo), mid_text = tick_text((lo + hi) / 2);
  const double bar_label_w =
      static_cast<double>(std::max({display_length(hi_text), display_length(lo_text), display_length(mid_text)})) *
          char_w +
      (options.scale_label.empty() ? 0 : 22);
  const double title_w = static_cast<double>(display_length(options.title)) * 8.5 + 20;
  const std::string reference_text =
      options.reference ? "red line: " + options.reference_label + " = " + tick_text(*options.reference) : "";
  const double reference_w = static_cast<double>(display_length(reference_text)) * char_w + 20;
  const double content_w = bar_x + bar_w + 6 + bar_label_w + 10;
  const double W = std::ceil(std::max({content_w, title_w, options.reference ? reference_w : 0.0}));
  const double shift = std::floor((W - content_w) / 2);  // a title (or caption) wider than the rest: the rest centred
  const double labels_bottom = grid_bottom + col_label_h + (options.x_label.empty() ? 0 : 22);
  // The rotated y label is centred on the grid, or starts at its top when it is longer than the
  // grid is tall (two rows): it never reaches up into the title.
  const double y_label_len = static_cast<double>(display_length(options.y_label)) * char_w;
  const double y_label_mid = top + std::max(grid_h, y_label_len) / 2;
  const double body_bottom = std::max({labels_bottom, top + bar_h + 8, top + y_label_len});
  const double H = std::ceil(body_bottom + 12 + (options.reference ? 20 : 0));

  std::ostringstream svg;
  const long long w_px = static_cast<long long>(W), h_px = static_cast<long long>(H);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w_px << "\" height=\"" << h_px
      << "\" viewBox=\"0 0 " << w_px << ' ' << h_px << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<!-- svg_heatmap: " << rows << " x " << cols << " values, colour scale " << lo_text << " (white) to "
      << hi_text << " (dark blue), " << nan_cells << " NaN cells -->\n";
  svg << heatmap_defs("hl-scale-v", "x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\"");
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    svg << "<text x=\"" << px(W / 2) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
        << xml_escape(options.title) << "</text>\n";

  // 4. The cells, with a white line between them and a tooltip each, then a frame.
  if (shift > 0) svg << "<g transform=\"translate(" << px(shift) << " 0)\">\n";
  svg << "<g class=\"grid\" stroke=\"white\" stroke-width=\"1\">\n";
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const double v = values[r][c];
      const bool nan = std::isnan(v);
      svg << "<rect class=\"" << (nan ? "cell nan" : "cell") << "\" x=\"" << px(left + C * static_cast<double>(c))
          << "\" y=\"" << px(top + C * static_cast<double>(r)) << "\" width=\"" << options.cell
          << "\" height=\"" << options.cell
          << "\" fill=\"" << (nan ? std::string("url(#hl-nan)") : hex(colour_of(v))) << "\"><title>"
          << xml_escape(row_text[r] + ", " + col_text[c] + ": " + value_text(v)) << "</title></rect>\n";
    }
  svg << "</g>\n<rect x=\"" << px(left) << "\" y=\"" << px(top) << "\" width=\"" << px(grid_w) << "\" height=\""
      << px(grid_h) << "\" fill=\"none\" stroke=\"#bbb\"/>\n";

  // 5. The values in the cells, in a font small enough for the longest one.
  std::size_t text_len = 0;
  for (const auto& row : values)
    for (double v : row)
      if (options.annotate || std::isnan(v)) text_len = std::max(text_len, cell_text(v).size());
  if (text_len > 0) {
    const double font = std::min({12.0, C * 0.45, C * 0.9 / (0.6 * static_cast<double>(text_len))});
    svg << "<g class=\"values\" text-anchor=\"middle\" font-size=\"" << px(font) << "\">\n";
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        const double v = values[r][c];
        if (!options.annotate && !std::isnan(v)) continue;
        svg << "<text x=\"" << px(left + C * (static_cast<double>(c) + 0.5)) << "\" y=\""
            << px(top + C * (static_cast<double>(r) + 0.5)) << "\" dy=\"0.35em\" fill=\""
            << (std::isnan(v) ? "#444444" : text_colour_on(colour_of(v))) << "\">" << cell_text(v) << "</text>\n";
      }
    svg << "</g>\n";
  }

  // 6. Row labels on the left, column labels underneath, the axis labels.
  svg << "<g fill=\"#333\">\n";
  for (std::size_t r = 0; r < rows; ++r)
    svg << "<text x=\"" << px(left - 6) << "\" y=\"" << px(top + C * (static_cast<double>(r) + 0.5))
        << "\" dy=\"0.35em\" text-anchor=\"end\">" << xml_escape(row_text[r]) << "</text>\n";
  for (std::size_t c = 0; c < cols; ++c) {
    const double x = left + C * (static_cast<double>(c) + 0.5);
    if (rotate_cols)
      svg << "<text transform=\"translate(" << px(x) << ' ' << px(grid_bottom + 6)
          << ") rotate(-90)\" dy=\"0.35em\" text-anchor=\"end\">" << xml_escape(col_text[c]) << "</text>\n";
    else
      svg << "<text x=\"" << px(x) << "\" y=\"" << px(grid_bottom + 16) << "\" text-anchor=\"middle\">"
          << xml_escape(col_text[c]) << "</text>\n";
  }
  svg << "</g>\n";
  if (!options.x_label.empty())
    svg << "<text x=\"" << px(left + grid_w / 2) << "\" y=\"" << px(grid_bottom + col_label_h + 16)
        << "\" text-anchor=\"middle\">" << xml_escape(options.x_label) << "</text>\n";
  if (!options.y_label.empty())
    svg << "<text transform=\"translate(16 " << px(y_label_mid) << ") rotate(-90)\" text-anchor=\"middle\">"
        << xml_escape(options.y_label) << "</text>\n";

  // 7. The colour bar: low at the bottom, high at the top, a tick at each end and in the middle.
  svg << "<g class=\"colour-bar\">\n<rect x=\"" << px(bar_x) << "\" y=\"" << px(top) << "\" width=\"" << px(bar_w)
      << "\" height=\"" << px(bar_h) << "\" fill=\"url(#hl-scale-v)\" stroke=\"#999\"/>\n";
  const std::pair<double, const std::string*> ticks[] = {{top, &hi_text}, {top + bar_h / 2, &mid_text}, {top + bar_h, &lo_text}};
  double tick_right = bar_x + bar_w + 5;
  for (const auto& [y, text] : ticks) {
    svg << "<path d=\"M" << px(bar_x + bar_w) << ' ' << px(y) << "h4\" stroke=\"#333\"/>\n<text class=\"scale-tick\" x=\""
        << px(bar_x + bar_w + 6) << "\" y=\"" << px(y) << "\" dy=\"0.35em\" fill=\"#333\">" << *text << "</text>\n";
    tick_right = std::max(tick_right, bar_x + bar_w + 6 + static_cast<double>(display_length(*text)) * char_w);
  }
  if (!options.scale_label.empty())
    svg << "<text transform=\"translate(" << px(tick_right + 12) << ' ' << px(top + bar_h / 2)
        << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">" << xml_escape(options.scale_label) << "</text>\n";
  svg << "</g>\n";
  if (shift > 0) svg << "</g>\n";

  // 8. The reference: a line across the colour bar (clamped to it) and its caption at the bottom.
  if (options.reference) {
    const double at = std::clamp((*options.reference - lo) / (hi - lo), 0.0, 1.0);
    const double y = top + bar_h * (1 - at);
    svg << "<g class=\"reference\">\n<path d=\"M" << px(shift + bar_x - 4) << ' ' << px(y) << 'h' << px(bar_w + 8)
        << "\" stroke=\"#b2182b\" stroke-width=\"2.5\"/>\n<text x=\"10\" y=\"" << px(body_bottom + 20)
        << "\" fill=\"#b2182b\">" << xml_escape(reference_text) << "</text>\n</g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace headlab
