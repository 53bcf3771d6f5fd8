// headlab/report/heatmaps.hpp: tables of numbers as coloured cells, in SVG.
//
//   svg_heatmap         a table of numbers as coloured cells (a score per layer and head)
//   svg_attention_grid  attention maps, one small heatmap per head, a row per layer
//
// Both heatmaps use one sequential colour scale, white -> light blue -> dark
// blue (matplotlib's "Blues", starting at pure white): the low end of the
// scale is white (#ffffff), the high end dark blue (#08306b). Text drawn on a
// cell is dark on light cells and white on dark ones. A NaN cell is drawn
// hatched grey (fill="url(#hl-nan)", class="cell nan") instead of a colour.
// Every cell is a <rect class="cell" ...> holding a <title> (a tooltip in a
// browser: "row label, column label: value"), emitted row by row.
//
// Errors (see errors.hpp): ValueError for a table that is empty or not
// rectangular, label lists that do not match it, ... (each function says which).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace headlab {

struct HeatmapOptions {
  std::string title;
  std::string x_label;                  // under the column labels
  std::string y_label;                  // left of the row labels, rotated
  std::vector<std::string> row_labels;  // one per row, or empty: 0, 1, 2, ...
  std::vector<std::string> col_labels;  // one per column, or empty: 0, 1, 2, ...
  // The ends of the colour scale. A missing end is the smallest / largest
  // finite value; values beyond an end get the colour of that end.
  std::optional<double> vmin, vmax;
  std::string scale_label;  // what the colour bar measures ("nats", "weight"), written beside it
  bool annotate = true;  // print each value with 2 decimals in its cell ("n/a" is always printed)
  int cell = 40;         // pixels per cell (a square); at least 4
  // A reference value to read the cells against (what uniform attention scores, chance): a dark red
  // line across the colour bar at its height (at the nearer end when outside the scale) and a
  // caption under the picture, "red line: <reference_label> = <value>". Finite, or none.
  std::optional<double> reference;
  std::string reference_label = "reference";
};

// An SVG document (starting "<svg", ending "</svg>\n") drawing `values`
// (rows x columns, e.g. a score per (layer, head)) as a grid of coloured
// cells, row 0 at the top, with the row labels on the left, the column labels
// underneath (rotated -90 degrees when they are wider than a cell), the title,
// the axis labels and a vertical colour bar on the right labelled with the
// ends and the middle of the scale (3 significant digits, class="scale-tick")
// and the scale_label. All text is XML-escaped.
// The <rect> elements are the cells (rows * columns), the background, the
// frame around the grid and the colour bar.
// Data whose finite values are all equal (and no vmin / vmax) gets a scale
// of +-10% around the value (+-1 around 0): every cell the middle colour.
// ValueError (naming svg_heatmap and the sizes) if `values` is empty or not
// rectangular, if a non-empty label list does not have one label per row /
// column, if cell < 4, if vmin / vmax is not finite or vmin >= vmax, or if reference is not finite.
std::string svg_heatmap(const std::vector<std::vector<double>>& values, const HeatmapOptions& options = {});

// One attention map: weights[q][k] is how much query position q attends to
// key position k (a row of softmax output, each value in [0, 1]).
struct AttentionPanel {
  std::string title;                         // e.g. "head 3"
  std::vector<std::vector<double>> weights;  // queries x keys, at least 1 x 1
  std::vector<std::string> query_labels;     // one per query, or empty: 0, 1, 2, ...
  std::vector<std::string> key_labels;       // one per key, or empty: 0, 1, 2, ...
};

struct AttentionGridOptions {
  std::string title;
  std::vector<std::string> row_titles;  // one per row of panels (e.g. "encoder layer 0"), or empty
  std::string query_title = "query";    // the axis title left of each panel's rows
  std::string key_title = "key";        // the axis title under each panel's columns
  int cell = 14;                        // pixels per weight (a square); at least 2
};

// An SVG document drawing panels[r][c] (rows = layers or modules, columns =
// heads) as a grid of small heatmaps on one fixed scale: 0 is white, 1 dark
// blue; values outside [0, 1] get the colour of the nearer end, NaN is
// hatched grey. Each panel has its title above it, its query labels on the
// left and its key labels underneath, rotated -90 degrees; a label longer
// than 8 characters is shown as its first 7 and "…" (the tooltip of each
// cell, "query → key: weight", keeps the full labels). A row title, if
// given, is a heading above its row; each panel has the axis titles
// query_title (rotated, left of its rows) and key_title (under its columns);
// a colour bar at the top right, titled "attention weight", has ticks
// labelled 0, 0.5 and 1 (class="scale-tick"). Rows may hold different numbers of panels and panels may
// have different sizes (encoder self-attention next to cross-attention):
// column c is as wide as the widest panel c of any row. All text is
// XML-escaped.
// The <rect> elements are the cells (the sum of queries * keys over the
// panels), one frame per panel, the background and the colour bar.
// ValueError (naming svg_attention_grid, the panel's title, its row and
// column and the sizes) if a panel's weights are empty or not rectangular or
// its label lists do not match them; also if there is no panel at all, if
// row_titles is neither empty nor one per row, or if cell < 2.
std::string svg_attention_grid(const std::vector<std::vector<AttentionPanel>>& panels,
                               const AttentionGridOptions& options = {});

}  // namespace headlab
