// run_curves.cpp: a run's metrics rows as one figure of panels (headlab/train/run_curves.hpp).
#include "headlab/train/run_curves.hpp"

#include <cmath>

#include "headlab/report/charts.hpp"

namespace headlab {

namespace {

struct SeriesSpec {
  const char* key;     // the metrics.jsonl key
  const char* legend;  // its name on the chart
};
struct PanelSpec {
  const char* y_label;
  bool is_loss;  // drawn on a log axis when asked
  std::vector<SeriesSpec> series;
  std::vector<double> y_includes = {};  // a fraction: {0, 1}; BLEU: {0}
};

std::vector<PanelSpec> panels_of(Task task) {
  std::vector<PanelSpec> panels = {{"loss (token cross-entropy)", true,
                                    {{"loss", "training loss"}, {"valid_loss", "validation loss"}}}};
  switch (task) {
    case Task::translate: panels.push_back({"validation BLEU (x100)", false, {{"valid_bleu", "validation BLEU"}}, {0}}); break;
    case Task::copy:
      panels.push_back({"held-out exact match", false, {{"valid_exact_match", "exact match"}}, {0, 1}});
      break;
    case Task::induction:
      panels.push_back({"held-out loss by half", true,
                        {{"repeated_loss", "repeated half"}, {"first_half_loss", "first half"}}});
      panels.push_back({"accuracy (repeated half)", false, {{"repeated_accuracy", "repeated-half accuracy"}}, {0, 1}});
      break;
    case Task::lm:
      panels.push_back({"validation bits per character", true, {{"valid_bits_per_char", "validation bits/char"}}});
      break;
    case Task::recall:
      panels.push_back({"held-out accuracy", false,
                        {{"answer_accuracy", "answers (every value)"}, {"slot_accuracy", "values"}}, {0, 1}});
      break;
  }
  return panels;
}

const char* metric_words(Task task) {
  switch (task) {
    case Task::translate: return "validation BLEU";
    case Task::copy: return "exact match";
    case Task::induction: return "repeated-half loss";
    case Task::lm: return "bits per character";
    case Task::recall: return "answer accuracy";
  }
  return "";
}

}  // namespace

RunCurves run_curves(const std::vector<MetricRow>& rows, Task task, const CurvesOptions& options) {
  RunCurves out;
  std::vector<ChartPanel> panels;
  for (const PanelSpec& spec : panels_of(task)) {
    ChartPanel panel;
    panel.y_label = spec.y_label;
    panel.log_y = options.log_y && spec.is_loss;
    panel.y_includes = spec.y_includes;
    for (const SeriesSpec& s : spec.series) {
      ChartSeries series;
      series.name = s.legend;
      for (std::size_t r = 0; r < rows.size(); ++r) {
        const MetricRow& row = rows[r];
        if (!row.has("step") || !row.has(s.key)) continue;
        const double y = metric_number(row, s.key, r);
        if (panel.log_y && y <= 0) ++out.skipped_on_log;
        series.x.push_back(metric_number(row, "step", r));
        series.y.push_back(y);
      }
      panel.series.push_back(std::move(series));
    }
    panels.push_back(std::move(panel));
  }
  ChartOptions chart;
  chart.title = options.title.empty() ? task_name(task) + ": loss and " + metric_words(task) : options.title;
  chart.x_label = "step";
  chart.width = 720;
  chart.height = 300;  // per panel
  out.svg = svg_chart_panels(panels, chart);
  return out;
}

}  // namespace headlab
