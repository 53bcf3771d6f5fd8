// headlab/train/run_curves.hpp: the picture of a training run, drawn from its metrics.jsonl rows.
//
// One figure (headlab/report/charts.hpp, svg_chart_panels), x = "step" in every panel:
//
//   loss          training loss ("loss", every step) and validation loss ("valid_loss", at each
//                 evaluation) on one axis
//   the task's metric, at each evaluation:
//     translate   validation BLEU x100 ("valid_bleu")
//     copy        held-out exact match ("valid_exact_match", 0 to 1)
//     induction   held-out loss on the repeated half ("repeated_loss") against the first half
//                 ("first_half_loss", ~ ln(vocab - 2): unpredictable), then the repeated half's
//                 accuracy ("repeated_accuracy") in a third panel
//
// `headlab train` draws it into RUN_DIR/loss.svg at the end of every run (an interrupted one
// included); `headlab curves --run-dir D` draws it again from D/metrics.jsonl (a killed run, or a
// log-scale loss axis).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "headlab/report/metrics.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

struct CurvesOptions {
  std::string title;   // empty: "TASK: loss and METRIC"
  bool log_y = false;  // log10 axis for the loss panels (the metric panels of BLEU and accuracy stay linear)
};

struct RunCurves {
  std::string svg;
  // log_y: the loss values <= 0 that a log axis cannot show. They are skipped (the SVG says so in a
  // comment per series), not refused: a loss of exactly 0 is a real value of a perfect model.
  std::size_t skipped_on_log = 0;
};

// Rows without "step" are left out; a row without one of a series' keys adds no point to it; a
// null (NaN) value is skipped like a non-finite point of any chart.
RunCurves run_curves(const std::vector<MetricRow>& rows, Task task, const CurvesOptions& options = {});

}  // namespace headlab
