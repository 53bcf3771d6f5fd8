// heatmaps.cpp: SVG heatmaps and grids of attention maps (see headlab/report/heatmaps.hpp).
//
// Both draw cells on the same colour scale (kBlues below) and share its SVG
// <defs>: the hatching of NaN cells and the scale as a gradient for the colour bar.
#include "headlab/report/heatmaps.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

#include "headlab/core/errors.hpp"
#include "text_format.hpp"

namespace headlab {

using text_format::display_length;
using text_format::format;
using text_format::px;
using text_format::xml_escape;

namespace {

// The colour scale: matplotlib's "Blues" with its first colour made pure
// white, interpolated linearly between these nine anchors (the colour bars
// use the same anchors as gradient stops, and SVG interpolates them the same way).
const double kBlues[9][3] = {{255, 255, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                             {66, 146, 198},   {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};

struct Rgb {
  double r, g, b;
};

// t in [0, 1] (clamped; NaN is not expected here).
Rgb blues(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const double pos = t * 8;
  const int i = std::min(7, static_cast<int>(std::floor(pos)));
  const double f = pos - i;
  const double* a = kBlues[i];
  const double* b = kBlues[i + 1];
  return {a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f};
}

std::string hex(const Rgb& c) {
  auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0))); };
  return format("#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
}

// Text on a cell of this colour: white on dark cells, near-black on light ones.
const char* text_colour_on(const Rgb& c) {
  return (0.299 * c.r + 0.587 * c.g + 0.114 * c.b) / 255 < 0.5 ? "#ffffff" : "#222222";
}

// The <defs> shared by both heatmaps: the hatching of NaN cells (grey with
// darker diagonal stripes, no <rect> inside so that counting rects counts
// cells) and the colour scale as a gradient from low to high along `x1 y1 x2 y2`.
std::string heatmap_defs(const char* gradient_id, const char* direction) {
  std::string defs =
      "<defs>\n<pattern id=\"hl-nan\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\">\n<path d=\"M0 0H6V6H0Z\" fill=\"#e0e0e0\"/>\n"
      "<path d=\"M0 0V6\" stroke=\"#a0a0a0\" stroke-width=\"2\"/>\n</pattern>\n";
  defs += std::string("<linearGradient id=\"") + gradient_id + "\" " + direction + ">\n";
  for (int i = 0; i < 9; ++i)
    defs += "<stop offset=\"" + format("%.3f", i / 8.0) + "\" stop-color=\"" +
            hex({kBlues[i][0], kBlues[i][1], kBlues[i][2]}) + "\"/>\n";
  defs += "</linearGradient>\n</defs>\n";
  return defs;
}

// A label cut to at most `max_chars` characters: the first max_chars - 1 and "…".
std::string shorten(const std::string& s, std::size_t max_chars) {
  if (display_length(s) <= max_chars) return s;
  std::string out;
  std::size_t chars = 0;
  for (char c : s) {
    const bool starts_char = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_char && ++chars > max_chars - 1) break;
    out += c;
  }
  return out + "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS
}

// The labels to draw: the given ones, or 0, 1, 2, ... when none were given.
std::vector<std::string> labels_or_indices(const std::vector<std::string>& given, std::size_t n) {
  if (!given.empty()) return given;
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < n; ++i) labels.push_back(std::to_string(i));
  return labels;
}

std::size_t longest(const std::vector<std::string>& labels) {
  std::size_t n = 0;
  for (const auto& s : labels) n = std::max(n, display_length(s));
  return n;
}

// A value in a cell: two decimals, never "-0.00"; NaN is "n/a".
std::string cell_text(double v) {
  if (std::isnan(v)) return "n/a";
  std::string s = format("%.2f", v);
  if (s == "-0.00") s = "0.00";
  return s;
}

// A value in a tooltip: 4 significant digits.
std::string value_text(double v) { return std::isnan(v) ? "NaN" : format("%.4g", v); }
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
  const double content_w = bar_x + bar_w + 6 + bar_label_w + 10;
  const double W = std::ceil(std::max(content_w, title_w));
  const double shift = std::floor((W - content_w) / 2);  // a title wider than the rest: the rest centred under it
  const double labels_bottom = grid_bottom + col_label_h + (options.x_label.empty() ? 0 : 22);
  // The rotated y label is centred on the grid, or starts at its top when it is longer than the
  // grid is tall (two rows): it never reaches up into the title.
  const double y_label_len = static_cast<double>(display_length(options.y_label)) * char_w;
  const double y_label_mid = top + std::max(grid_h, y_label_len) / 2;
  const double H = std::ceil(std::max({labels_bottom, top + bar_h + 8, top + y_label_len}) + 12);

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
  svg << "</svg>\n";
  return svg.str();
}

namespace {

// The size of one attention panel and where its grid sits inside its box.
struct PanelLayout {
  std::vector<std::string> queries, keys;  // the labels as drawn (shortened)
  std::vector<std::string> query_tips, key_tips;  // the full labels, for the tooltips
  double pad_left = 0;   // room for a title wider than the grid and its query labels
  double query_w = 0;    // the query labels, left of the grid
  double grid_w = 0, grid_h = 0;
  double key_h = 0;      // the rotated key labels, under the grid
  double width = 0, height = 0;
};

}  // namespace

std::string svg_attention_grid(const std::vector<std::vector<AttentionPanel>>& panels,
                               const AttentionGridOptions& options) {
  // 1. Checks, panel by panel.
  if (options.cell < 2)
    throw ValueError("svg_attention_grid: cell must be >= 2 pixels, got " + std::to_string(options.cell));
  if (!options.row_titles.empty() && options.row_titles.size() != panels.size())
    throw ValueError("svg_attention_grid: " + std::to_string(options.row_titles.size()) + " row_titles for " +
                     std::to_string(panels.size()) + " rows of panels");
  std::size_t n_panels = 0, n_cells = 0;
  for (std::size_t r = 0; r < panels.size(); ++r)
    for (std::size_t c = 0; c < panels[r].size(); ++c) {
      const AttentionPanel& p = panels[r][c];
      const std::string where = "svg_attention_grid: panel '" + p.title + "' (row " + std::to_string(r) +
                                ", column " + std::to_string(c) + "): ";
      const std::size_t q = p.weights.size(), k = q ? p.weights[0].size() : 0;
      if (q == 0) throw ValueError(where + "weights must be at least 1 x 1, got 0 queries");
      if (k == 0)
        throw ValueError(where + "weights must be at least 1 x 1, got " + std::to_string(q) + " queries of 0 keys");
      for (std::size_t i = 1; i < q; ++i)
        if (p.weights[i].size() != k)
          throw ValueError(where + "weights must be rectangular: query " + std::to_string(i) + " has " +
                           std::to_string(p.weights[i].size()) + " weights but query 0 has " + std::to_string(k));
      if (!p.query_labels.empty() && p.query_labels.size() != q)
        throw ValueError(where + std::to_string(p.query_labels.size()) + " query_labels for " + std::to_string(q) +
                         " queries (rows of weights)");
      if (!p.key_labels.empty() && p.key_labels.size() != k)
        throw ValueError(where + std::to_string(p.key_labels.size()) + " key_labels for " + std::to_string(k) +
                         " keys (columns of weights)");
      ++n_panels;
      n_cells += q * k;
    }
  if (n_panels == 0)
    throw ValueError("svg_attention_grid: no panels to draw (" + std::to_string(panels.size()) + " rows, all empty)");

  // 2. Layout. Labels are drawn in a font of at most 10 px (smaller for cells
  // under 12 px, so that neighbouring labels do not overlap), about 0.6 of the
  // font size wide a character; panel titles in 11 px, 6.5 px a character.
  const double C = options.cell;
  const double font = std::min(10.0, C * 0.85), char_w = 0.6 * font;
  const double title_h = 18, gap_x = 24, gap_y = 14, margin = 12;
  const double axis_title_w = options.query_title.empty() ? 0 : 14;  // "query", rotated, left of the labels
  const double axis_title_h = options.key_title.empty() ? 0 : 14;    // "key", under the labels
  std::vector<std::vector<PanelLayout>> layout(panels.size());
  std::vector<double> col_w, row_h(panels.size(), 0), heading_h(panels.size(), 0);
  for (std::size_t r = 0; r < panels.size(); ++r) {
    if (!options.row_titles.empty() && !options.row_titles[r].empty()) heading_h[r] = 22;
    for (std::size_t c = 0; c < panels[r].size(); ++c) {
      const AttentionPanel& p = panels[r][c];
      PanelLayout L;
      L.query_tips = labels_or_indices(p.query_labels, p.weights.size());
      L.key_tips = labels_or_indices(p.key_labels, p.weights[0].size());
      for (const auto& s : L.query_tips) L.queries.push_back(shorten(s, 8));
      for (const auto& s : L.key_tips) L.keys.push_back(shorten(s, 8));
      L.query_w = std::round(static_cast<double>(longest(L.queries)) * char_w + 6 + axis_title_w);
      L.key_h = std::round(static_cast<double>(longest(L.keys)) * char_w + 8 + axis_title_h);
      L.grid_w = C * static_cast<double>(p.weights[0].size());
      L.grid_h = C * static_cast<double>(p.weights.size());
      // The title is centred over the grid; if it is wider, the box grows on both sides.
      const double overhang = std::max(0.0, static_cast<double>(display_length(p.title)) * 6.5 / 2 - L.grid_w / 2);
      L.pad_left = std::round(std::max(0.0, overhang - L.query_w));
      L.width = L.pad_left + L.query_w + L.grid_w + std::round(overhang);
      L.height = title_h + L.grid_h + L.key_h;
      if (col_w.size() <= c) col_w.resize(c + 1, 0);
      col_w[c] = std::max(col_w[c], L.width);
      row_h[r] = std::max(row_h[r], L.height);
      layout[r].push_back(std::move(L));
    }
  }
  const double header_h = 48;  // the title and the colour bar with its ticks
  double content_w = 0;
  for (double w : col_w) content_w += w + gap_x;
  content_w -= gap_x;
  double W = margin + content_w + margin;
  W = std::max(W, static_cast<double>(display_length(options.title)) * 8.5 + 250);  // the title and the colour bar
  for (const auto& t : options.row_titles) W = std::max(W, static_cast<double>(display_length(t)) * 8 + 2 * margin);
  W = std::ceil(W);
  double H = header_h;
  for (std::size_t r = 0; r < panels.size(); ++r) H += heading_h[r] + row_h[r] + gap_y;
  H = std::ceil(H + margin - gap_y);

  std::ostringstream svg;
  const long long w_px = static_cast<long long>(W), h_px = static_cast<long long>(H);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w_px << "\" height=\"" << h_px
      << "\" viewBox=\"0 0 " << w_px << ' ' << h_px << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<!-- svg_attention_grid: " << panels.size() << " rows, " << n_panels << " panels, " << n_cells
      << " weights on a fixed scale 0 (white) to 1 (dark blue) -->\n";
  svg << heatmap_defs("hl-scale-h", "x1=\"0\" y1=\"0\" x2=\"1\" y2=\"0\"");
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  if (!options.title.empty())
    svg << "<text x=\"" << px(margin) << "\" y=\"26\" font-size=\"15\">" << xml_escape(options.title) << "</text>\n";
  // The colour bar, top right: "attention weight [white -> dark blue]" with ticks 0, 0.5, 1 under it.
  {
    const double bar_w = 120, bar_h = 12, bx = W - margin - 8 - bar_w, by = 14;
    svg << "<g class=\"colour-bar\" font-size=\"10\" fill=\"#333\">\n<text x=\"" << px(bx - 6) << "\" y=\""
        << px(by + bar_h / 2) << "\" dy=\"0.35em\" text-anchor=\"end\">attention weight</text>\n<rect x=\"" << px(bx)
        << "\" y=\"" << px(by) << "\" width=\"" << px(bar_w) << "\" height=\"" << px(bar_h)
        << "\" fill=\"url(#hl-scale-h)\" stroke=\"#999\"/>\n";
    for (const auto& [at, text] : {std::pair<double, const char*>{0, "0"}, {0.5, "0.5"}, {1, "1"}})
      svg << "<path d=\"M" << px(bx + at * bar_w) << ' ' << px(by + bar_h) << "v3\" stroke=\"#333\"/>\n<text class=\"scale-tick\" x=\""
          << px(bx + at * bar_w) << "\" y=\"" << px(by + bar_h + 12) << "\" text-anchor=\"middle\">" << text << "</text>\n";
    svg << "</g>\n";
  }

  // 3. The panels, row by row.
  const std::string arrow = " \xE2\x86\x92 ";  // U+2192 RIGHTWARDS ARROW
  double y = header_h;
  for (std::size_t r = 0; r < panels.size(); ++r) {
    if (heading_h[r] > 0)
      svg << "<text x=\"" << px(margin) << "\" y=\"" << px(y + 15) << "\" font-size=\"13\" font-weight=\"bold\">"
          << xml_escape(options.row_titles[r]) << "</text>\n";
    y += heading_h[r];
    double x = margin;
    for (std::size_t c = 0; c < panels[r].size(); ++c) {
      const AttentionPanel& p = panels[r][c];
      const PanelLayout& L = layout[r][c];
      const double gx = x + L.pad_left + L.query_w, gy = y + title_h;
      svg << "<g class=\"panel\">\n";
      if (!p.title.empty())
        svg << "<text x=\"" << px(gx + L.grid_w / 2) << "\" y=\"" << px(gy - 5)
            << "\" text-anchor=\"middle\" font-size=\"11\">" << xml_escape(p.title) << "</text>\n";
      svg << "<g shape-rendering=\"crispEdges\">\n";
      for (std::size_t i = 0; i < p.weights.size(); ++i)
        for (std::size_t j = 0; j < p.weights[i].size(); ++j) {
          const double v = p.weights[i][j];
          const bool nan = std::isnan(v);
          svg << "<rect class=\"" << (nan ? "cell nan" : "cell") << "\" x=\"" << px(gx + C * static_cast<double>(j))
              << "\" y=\"" << px(gy + C * static_cast<double>(i)) << "\" width=\"" << options.cell
              << "\" height=\"" << options.cell
              << "\" fill=\"" << (nan ? std::string("url(#hl-nan)") : hex(blues(v))) << "\"><title>"
              << xml_escape(L.query_tips[i] + arrow + L.key_tips[j] + ": " + value_text(v)) << "</title></rect>\n";
        }
      svg << "</g>\n<rect x=\"" << px(gx) << "\" y=\"" << px(gy) << "\" width=\"" << px(L.grid_w) << "\" height=\""
          << px(L.grid_h) << "\" fill=\"none\" stroke=\"#999\"/>\n";
      svg << "<g font-size=\"" << px(font) << "\" fill=\"#333\">\n";
      for (std::size_t i = 0; i < L.queries.size(); ++i)
        svg << "<text x=\"" << px(gx - 3) << "\" y=\"" << px(gy + C * (static_cast<double>(i) + 0.5))
            << "\" dy=\"0.35em\" text-anchor=\"end\">" << xml_escape(L.queries[i]) << "</text>\n";
      for (std::size_t j = 0; j < L.keys.size(); ++j)
        svg << "<text transform=\"translate(" << px(gx + C * (static_cast<double>(j) + 0.5)) << ' '
            << px(gy + L.grid_h + 4) << ") rotate(-90)\" dy=\"0.35em\" text-anchor=\"end\">" << xml_escape(L.keys[j])
            << "</text>\n";
      svg << "</g>\n";
      // The axis titles: queries are the rows, keys the columns.
      svg << "<g class=\"axis-title\" font-size=\"" << px(font) << "\" fill=\"#555\" font-style=\"italic\">\n";
      if (!options.query_title.empty())
        svg << "<text transform=\"translate(" << px(gx - L.query_w + 9) << ' ' << px(gy + L.grid_h / 2)
            << ") rotate(-90)\" text-anchor=\"middle\">" << xml_escape(options.query_title) << "</text>\n";
      if (!options.key_title.empty())
        svg << "<text x=\"" << px(gx + L.grid_w / 2) << "\" y=\"" << px(gy + L.grid_h + L.key_h - 2)
            << "\" text-anchor=\"middle\">" << xml_escape(options.key_title) << "</text>\n";
      svg << "</g>\n</g>\n";
      x += col_w[c] + gap_x;
    }
    y += row_h[r] + gap_y;
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace headlab
