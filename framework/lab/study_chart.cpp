// study_chart.cpp: a study's chart, every seed of every cell drawn (headlab/lab/study.hpp,
// headlab/report/strip_chart.hpp).
#include "headlab/lab/study.hpp"
#include "headlab/report/strip_chart.hpp"

namespace headlab {

std::string study_chart_svg(const StudyRecipe& recipe, const StudyReport& report) {
  const std::string metric = !recipe.comparisons.empty() ? recipe.comparisons.front().metric : recipe.metrics.front();
  std::vector<StripCell> cells;
  for (const StudyCellSummary& s : report.cells)
    if (s.metric == metric) cells.push_back({s.cell, s.values});
  StripChartOptions options;
  options.title = recipe.title.empty() ? recipe.path.stem().string() : recipe.title;
  options.y_label = metric;
  options.footer = "every seed a dot; bar: the mean; line: its 95% t-interval (" +
                   std::to_string(recipe.seeds.size()) + " seeds a cell)";
  options.baseline = recipe.baseline;
  options.baseline_label = recipe.baseline_label;
  return svg_strip_chart(cells, options);
}

}  // namespace headlab
