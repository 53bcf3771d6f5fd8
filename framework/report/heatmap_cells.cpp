// heatmap_cells.cpp: the colour scale, its SVG <defs>, and the labels and values that both
// heatmaps draw (heatmap_cells.hpp).
#include "heatmap_cells.hpp"

#include <algorithm>
#include <cmath>

#include "text_format.hpp"

namespace headlab::detail {

using text_format::display_length;
using text_format::format;

namespace {

// The colour scale: matplotlib's "Blues" with its first colour made pure
// white, interpolated linearly between these nine anchors (the colour bars
// use the same anchors as gradient stops, and SVG interpolates them the same way).
const double kBlues[9][3] = {{255, 255, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                             {66, 146, 198},   {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};

}  // namespace

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

std::string value_text(double v) { return std::isnan(v) ? "NaN" : format("%.4g", v); }

}  // namespace headlab::detail
