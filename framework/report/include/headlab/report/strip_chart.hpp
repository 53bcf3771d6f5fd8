// headlab/report/strip_chart.hpp: a study's cells side by side, every seed drawn.
//
//   title
//   y |   o            each value a dot (seeds side by side, lowest first)
//     |   o  -+-       the mean a short bar, its 95% t-interval a vertical line
//     |   o   |        (headlab/report/statistics.hpp), clipped to the axis
//     +--cell--cell--
//   footer
//
// Where a cell has a single value there is no interval; an empty cell is a label only. A
// baseline (chance, a uniform attention's mass, a count n-gram's loss), when finite, is a dashed
// horizontal line named in the legend. Text from files is escaped.
#pragma once

#include <limits>
#include <string>
#include <vector>

namespace headlab {

struct StripCell {
  std::string label;
  std::vector<double> values;  // finite
};

struct StripChartOptions {
  std::string title, y_label, footer;
  double baseline = std::numeric_limits<double>::quiet_NaN();
  std::string baseline_label;
  int width = 760, height = 360;
};

// ValueError when the values (with the baseline) span more than a double holds; an interval whose ends
// pass 1.8e308 is left out, its seeds and mean still drawn.
std::string svg_strip_chart(const std::vector<StripCell>& cells, const StripChartOptions& options);

}  // namespace headlab
