// Study 4: how many heads of a translation model can go before BLEU drops by 1?
//
// Michel, Levy, Neubig 2019 ("Are sixteen heads really better than one?"): give every head a
// multiplier xi_h (1 = kept, 0 = pruned); its importance is I_h = mean |dL/dxi_h| over the
// evaluation data, normalised within each attention module. Prune the least important ~10% of
// the remaining heads, recompute, repeat, without retraining; compare with pruning in a random
// order. (headlab/lab/heads.hpp: head_importance, prune_heads; the CLI: headlab prune.)
// The model: the translation defaults of `headlab train --task translate` (d_model 128,
// 8 heads, 2+2 layers: 48 heads in 6 attention modules) trained for 1200 steps; the metric is
// greedy BLEU on the validation set (179 sentences), the loss is the validation token NLL.
//
// usage: tutorial_pruning [--quick] [OUT_DIR]
//   full: about 2.5 minutes (140 s of training, then the two pruning curves);
//   --quick: d_model 32, 5 steps, 16 evaluation pairs, pruning 50% a step (for the test suite).
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "headlab/headlab.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/report/report.hpp"
#include "study_common.hpp"

using namespace headlab;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const study::StudyArgs args = study::study_args(argc, argv, "pruning_runs");
  const bool quick = args.quick;  // plain names, not a structured binding: lambdas below take them
  const std::filesystem::path& out = args.out;
  TrainOptions o = study::translation_options(HEADLAB_DATASETS_DIR, quick ? 5 : 1200, quick);
  if (quick) {
    o.d_model = 32;
    o.ff_dim = 64;
    o.heads = 4;
  }
  std::cout << "1. Train the translation model (d_model " << o.d_model << ", " << o.heads << " heads, " << o.layers
            << "+" << o.layers << " layers, " << o.steps << " steps):\n";
  const study::SeedRuns run = study::train_seeds("translate", o, {1}, out);
  LoadedModel model = load_trained_model((fs::path(run.run_dirs[0]) / "checkpoint.safetensors").string());
  HeadLabTask task(model, quick ? 16 : 0);  // every validation pair (quick: the first 16)
  const double step = quick ? 0.5 : 0.1;

  std::cout << "\n2. Importance of every head (normalised per module) at the full model:\n";
  std::vector<AttentionSite>& sites = task.sites();
  const HeadImportance imp =
      head_importance(sites, full_head_mask(sites), task.batches(), [&](std::size_t i) { return task.batch_loss(i); });
  clear_head_mask(sites);
  for (std::size_t s = 0; s < sites.size(); ++s) {
    std::cout << "  " << std::left << std::setw(34) << sites[s].name << std::right << std::fixed << std::setprecision(2);
    for (double v : imp.normalised[s]) std::cout << std::setw(6) << v;
    std::cout << "\n";
  }

  std::cout << "\n3. Pruning " << int(step * 100) << "% of the remaining heads a step, by importance and in a random order:\n";
  const std::vector<PruneStep> ranked = prune_heads(task, true, step, 1);
  const std::vector<PruneStep> random = prune_heads(task, false, step, 1);
  std::cout << "  | heads pruned | of " << ranked.back().pruned << " | BLEU (importance) | loss (importance) | BLEU (random) "
            << "| loss (random) |\n  |---|---|---|---|---|---|\n";
  std::size_t within = 0;  // steps before the BLEU drop exceeds 1 point
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    std::cout << std::setprecision(2) << "  | " << ranked[i].pruned << " | " << std::setprecision(0)
              << 100 * ranked[i].fraction << "% | " << std::setprecision(2) << ranked[i].metric << " | "
              << std::setprecision(3) << ranked[i].loss << " | " << std::setprecision(2) << random[i].metric << " | "
              << std::setprecision(3) << random[i].loss << " |\n";
    if (ranked[i].metric >= ranked[0].metric - 1.0 && within == i) within = i + 1;
  }
  std::size_t random_within = 0;
  for (std::size_t i = 0; i < random.size(); ++i)
    if (random[i].metric >= random[0].metric - 1.0 && random_within == i) random_within = i + 1;
  const PruneStep& kept = ranked[within - 1];
  std::cout << std::setprecision(2) << "\nBy importance, " << kept.pruned << " of " << ranked.back().pruned
            << " heads can go before validation BLEU drops by more than 1 (" << ranked[0].metric << " -> "
            << kept.metric << "); in a random order, " << random[random_within - 1].pruned << ".\n";
  std::vector<ChartSeries> series(2);
  series[0].name = "by importance";
  series[1].name = "random order";
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    series[0].x.push_back(ranked[i].fraction);
    series[0].y.push_back(ranked[i].metric);
    series[1].x.push_back(random[i].fraction);
    series[1].y.push_back(random[i].metric);
  }
  ChartOptions co;
  co.title = "greedy validation BLEU against the fraction of heads pruned";
  co.x_label = "fraction of heads pruned";
  co.y_label = "BLEU";
  write_file_atomic(out / "pruning_bleu.svg", svg_line_chart(series, co), "tutorial 09");
  std::cout << "chart: " << (out / "pruning_bleu.svg").string() << " (docs/studies/pruning.md)\n";
  return 0;
}
