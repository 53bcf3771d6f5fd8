// headlab/report/charts.hpp: line charts of a run (loss over steps, a sweep's
// means with error bars) as self-contained SVG files.
//
//   svg_line_chart    draws series of (x, y) points as a self-contained SVG file
//                     (no scripts, fonts or links: it opens in any browser)
//   svg_chart_panels  several such charts stacked on one x axis (a run's loss over a task's metric)
//   svg_loss_curve    the usual picture of a run: loss over step
//
// Errors (see errors.hpp): ValueError for series with x and y (or error) of
// different lengths, a chart smaller than 100 x 100 pixels, or finite values
// whose range is more than a double holds (-1e308 to 1e308: no scale draws them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace headlab {

// One line on a chart. `error`, if not empty, has one entry per point: a bar
// is drawn from y - error[i] to y + error[i] (e.g. the standard deviation over
// seeds in an ablation sweep); an error that is 0, negative or NaN draws no bar.
struct ChartSeries {
  std::string name;  // shown in the legend (series with an empty name are left out of it)
  std::vector<double> x;
  std::vector<double> y;
  std::vector<double> error;
  // A shaded band from band_low[i] to band_high[i] around the line (e.g. mean ± sd over random
  // orders), drawn under it as one <path class="band">; empty: no band, else one entry per point
  // (a point whose ends are not finite leaves the band out there).
  std::vector<double> band_low = {}, band_high = {};
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_y = false;  // logarithmic y axis; points with y <= 0 cannot be drawn and are skipped
  // A log2 x axis (head counts 1, 2, 4, 8, 16) with ticks at the powers of two in the data's range
  // only; points with x <= 0 cannot be drawn and are skipped.
  bool log2_x = false;
  // A log10 x axis (learning rates 0.001 .. 0.03) with ticks at 1, 2 and 5 times powers of ten, as
  // log_y's; points with x <= 0 are skipped. log2_x wins when both are set.
  bool log_x = false;
  // Series k is drawn shifted right by (k - (n - 1) / 2) x series_offset pixels, so that points
  // and error bars of several series at the same x do not hide each other (0: no shift).
  double series_offset = 0;
  int width = 640;     // pixels
  int height = 400;
  // Series with at most this many points get a dot (<circle>) on every point;
  // longer ones are a bare line. A series with a single point always gets its dot.
  std::size_t markers_up_to = 50;
};

// An SVG document (starting "<svg", ending "</svg>\n") drawing each series as a
// <polyline> in its own colour, with axes, about 5 "nice" ticks per axis
// (1, 2 or 5 times a power of ten), grid lines, the title, the axis labels and
// a legend. All text is XML-escaped. The axes' ends sit a few pixels inside the
// frame, so that points on them and their error bars are drawn whole. The legend
// goes to the corner where it covers the fewest points, bar ends and band corners
// (top right on a tie); when every corner covers some, a linear y axis is
// stretched upwards to make room for it.
// Points with a NaN or infinite x or y (or y <= 0 on a log axis) are skipped,
// and an XML comment in the document says how many were skipped per series.
// A single point, or a series whose y values are all equal, gives a sensible
// axis around the value. ValueError if a series has x and y (or error) of
// different lengths, or if the values' range is more than a double holds.
std::string svg_line_chart(const std::vector<ChartSeries>& series, const ChartOptions& options = {});

// One chart of a figure with panels: its own y axis (label, linear or log), its own legend.
struct ChartPanel {
  std::string y_label;
  std::vector<ChartSeries> series;
  bool log_y = false;  // as ChartOptions::log_y: points with y <= 0 are skipped (and counted in a comment)
  // Values a linear y axis always covers (an accuracy: {0, 1}; a score: {0}), so that a flat series
  // still sits on a meaningful scale.
  std::vector<double> y_includes = {};
};

// Panels stacked top to bottom, each as svg_line_chart draws a chart, all on one x axis whose range
// covers every panel's points. The figure is options.width wide and options.height tall per panel;
// options.title sits above the first panel, options.x_label under the last (options.y_label and
// log_y are the panels' own). Colours restart in each panel. A panel without a drawable point says
// "no data". The skipped-points comments name "panel P series K". ValueError as svg_line_chart's,
// and for no panel at all. svg_line_chart(series, o) is the figure of the one panel
// {o.y_label, series, o.log_y}.
std::string svg_chart_panels(const std::vector<ChartPanel>& panels, const ChartOptions& options = {});

// The usual picture of a run: one series "loss" over "step".
std::string svg_loss_curve(const std::vector<double>& steps, const std::vector<double>& losses,
                           const std::string& title = "training loss");

}  // namespace headlab
