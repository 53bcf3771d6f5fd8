// heatmap_cells.hpp (internal): what heatmaps.cpp (svg_heatmap) and attention_grid.cpp
// (svg_attention_grid) share: the colour scale, its SVG <defs>, and the labels and values drawn.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace headlab::detail {

struct Rgb {
  double r, g, b;
};

// The colour scale (heatmap_cells.cpp) at t in [0, 1] (clamped; NaN is not expected here).
Rgb blues(double t);

// "#rrggbb".
std::string hex(const Rgb& c);

// The <defs> shared by both heatmaps: the hatching of NaN cells (grey with
// darker diagonal stripes, no <rect> inside so that counting rects counts
// cells) and the colour scale as a gradient from low to high along `x1 y1 x2 y2`.
std::string heatmap_defs(const char* gradient_id, const char* direction);

// A label cut to at most `max_chars` characters: the first max_chars - 1 and "…".
std::string shorten(const std::string& s, std::size_t max_chars);

// The labels to draw: the given ones, or 0, 1, 2, ... when none were given.
std::vector<std::string> labels_or_indices(const std::vector<std::string>& given, std::size_t n);

// The display length of the longest label.
std::size_t longest(const std::vector<std::string>& labels);

// A value in a tooltip: 4 significant digits.
std::string value_text(double v);

}  // namespace headlab::detail
