// attention_grid.cpp: svg_attention_grid, attention maps as a grid of small heatmaps, a row per
// layer (see headlab/report/heatmaps.hpp); colours and labels from heatmap_cells.cpp.
#include "headlab/report/heatmaps.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "headlab/core/errors.hpp"
#include "heatmap_cells.hpp"
#include "text_format.hpp"

namespace headlab {

using text_format::display_length;
using text_format::px;
using text_format::xml_escape;
using detail::blues;
using detail::heatmap_defs;
using detail::hex;
using detail::labels_or_indices;
using detail::longest;
using detail::shorten;
using detail::value_text;

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
