// headlab/report/report.hpp: what a training run tells you while it runs and leaves behind after it.
//
// Eight small tools, used by `headlab train`, by ablation sweeps and by the
// attention-inspection reports, each with its own header:
//
//   progress.hpp  ProgressReporter: a live progress line on the terminal, or plain
//                 log lines when the output is a file or a pipe:
//                   [#####...............] step 120/500  loss 1.234  lr 1.0e-03  12.3k tok/s  ETA 0:42
//   metrics.hpp   MetricsWriter: appends one JSON object per line to
//                 <run_dir>/metrics.jsonl ("JSON Lines"); read_metrics() reads such a file back
//   charts.hpp    svg_line_chart: series of (x, y) points as a self-contained SVG file
//                 (no scripts, fonts or links: it opens in any browser); svg_loss_curve
//   heatmaps.hpp  svg_heatmap: a table of numbers as coloured cells (a score per layer and head);
//                 svg_attention_grid: attention maps, one small heatmap per head, a row per layer
//   text_table.hpp  TextTable: Markdown tables whose columns line up (prune, ablate summaries)
//   explorer_page.hpp  explorer_page: the head explorer, one self-contained interactive HTML page
//   statistics.hpp  t-intervals, Welch's and the paired t-test, Holm's correction (Boost.Math)
//   strip_chart.hpp  svg_strip_chart: a study's cells, every seed a dot, the mean and its 95% CI
//
// This header includes all eight; a file that needs one tool can include just its header.
#pragma once

#include "headlab/report/charts.hpp"
#include "headlab/report/explorer_page.hpp"
#include "headlab/report/heatmaps.hpp"
#include "headlab/report/metrics.hpp"
#include "headlab/report/progress.hpp"
#include "headlab/report/statistics.hpp"
#include "headlab/report/strip_chart.hpp"
#include "headlab/report/text_table.hpp"
