// prune_command.cpp: `headlab prune` (importance, pruning curves, the heads that survive) on a
// trained checkpoint; `headlab heads` is in heads_command.cpp.
// The measurements live in headlab/lab/heads.hpp and head_survival.hpp; this file writes files.
#include "checkpoint_name.hpp"
#include "head_lab_commands.hpp"
#include "lab_outputs.hpp"
#include "number_text.hpp"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/lab/head_survival.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/lab/sweep.hpp"
#include "headlab/report/report.hpp"
#include "headlab/train/run_dir.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kPruneFiles = {"importance.csv", "importance.svg", "prune.csv",    "prune.md",
                                              "prune.svg",      "prune_loss.svg", "survivors.csv", "survivors.md",
                                              "single_heads.csv"};

// survivors.csv (every head: its importance, when the importance order removed it, whether it
// survives the tolerance, its role scores) and survivors.md (the survivors, and the mean scores of
// survivors against pruned heads). The role scores are `headlab heads`'s defaults: 64 probe
// sequences, the model's block, seed 1.
void write_survivors(LoadedModel& m, const std::vector<AttentionSite>& sites, const std::vector<PruneStep>& ranked,
                     double tolerance, const std::string& tol, const HeadImportance& imp, const fs::path& dir) {
  const HeadsOptions defaults;
  const std::vector<HeadRoles> roles =
      head_roles(m, repeated_tokens_probe(m, defaults.probe_sequences, defaults.block, defaults.seed));
  const std::vector<HeadFate> fates = head_fates(sites, ranked, tolerance, imp, roles);
  std::ostringstream csv;
  csv << "site,kind,layer,head,importance,removal_rank,removed_at,survives,entropy,sink_mass,previous_token,induction,"
         "gate_mean\n";
  for (const HeadFate& f : fates)
    csv << f.site << "," << f.roles.kind << "," << f.roles.layer << "," << f.head << "," << fixed(f.importance, 6) << ","
        << f.removal_rank << "," << f.removed_at << "," << (f.survives ? 1 : 0) << "," << fixed(f.roles.entropy, 6) << ","
        << fixed(f.roles.sink_mass, 6) << "," << fixed(f.roles.previous_token, 6) << "," << fixed(f.roles.induction, 6)
        << "," << fixed(f.roles.gate_mean, 6) << "\n";
  write_file_atomic(dir / "survivors.csv", csv.str(), "prune");

  const bool gated = m.options.gate != GateKind::none;
  std::vector<std::string> columns = {"module", "head", "importance", "removal rank", "entropy", "sink", "prev-token",
                                      "induction"};
  if (gated) columns.push_back("gate");
  TextTable kept(columns), means({"heads", "count", "importance", "entropy", "sink", "prev-token", "induction"});
  std::size_t survivors = 0;
  double sum[2][5] = {};  // [pruned, survives][importance, entropy, sink, prev, induction]
  std::size_t count[2] = {};
  for (const HeadFate& f : fates) {
    const double v[5] = {f.importance, f.roles.entropy, f.roles.sink_mass, f.roles.previous_token, f.roles.induction};
    for (int k = 0; k < 5; ++k) sum[f.survives][k] += v[k];
    ++count[f.survives];
    if (!f.survives) continue;
    ++survivors;
    std::vector<std::string> row = {f.site, std::to_string(f.head), fixed(f.importance), std::to_string(f.removal_rank),
                                    fixed(f.roles.entropy, 2), fixed(f.roles.sink_mass, 2), fixed(f.roles.previous_token, 2),
                                    fixed(f.roles.induction, 2)};
    if (gated) row.push_back(fixed(f.roles.gate_mean, 3));
    kept.add_row(row);
  }
  for (int group : {1, 0}) {
    if (count[group] == 0) continue;
    std::vector<std::string> row = {group ? "survivors" : "pruned", std::to_string(count[group])};
    for (int k = 0; k < 5; ++k) row.push_back(fixed(sum[group][k] / double(count[group]), k == 0 ? 3 : 2));
    means.add_row(row);
  }
  std::ostringstream md;
  md << "Heads that survive pruning by importance while the metric stays within " << tol << " of the full model's: "
     << survivors << " of " << fates.size() << ". Removal rank 1 is the first head pruned; role scores on "
     << defaults.probe_sequences << " repeated random blocks (as `headlab heads`).\n\n"
     << kept.markdown() << "\nMean scores, survivors against the heads pruned before the metric fell:\n\n"
     << means.markdown();
  write_file_atomic(dir / "survivors.md", md.str(), "prune");
}

}  // namespace

int run_prune(const PruneOptions& o) {
  LoadedModel m = load_trained_model(o.checkpoint);
  if (!o.data.empty() && m.options.task != Task::translate)
    throw ValueError("--data is the evaluation TSV of a translate checkpoint; " + o.checkpoint.substr(0, 200) +
                     " is a " + task_name(m.options.task) + " model, scored on its own held-out sequences "
                     "(--sequences)");
  const std::size_t sequences = o.sequences ? o.sequences : (m.options.task == Task::translate ? 0 : 512);
  HeadLabTask task(m, sequences, o.data);
  // --importance-split: importance from a second draw of held-out sequences, the curves scored on the first
  std::unique_ptr<HeadLabTask> importance_split;
  if (o.importance_split) {
    if (m.options.task == Task::translate)
      throw ValueError("--importance-split draws a second set of held-out sequences, which copy, induction and recall "
                       "checkpoints have; " + o.checkpoint.substr(0, 200) + " is a translate model");
    importance_split = std::make_unique<HeadLabTask>(m, sequences, o.data, 1);
  }
  HeadLabTask& estimate = importance_split ? *importance_split : task;
  const RunDir out(lab_output_path(o.out, o.checkpoint, "prune"), lab_output_spec("prune", kPruneFiles, o.overwrite));
  const fs::path& dir = out.path();
  std::vector<AttentionSite>& sites = task.sites();
  std::size_t total = 0;
  for (const auto& s : sites) total += s.heads();
  std::cout << "pruning " << total << " heads of " << o.checkpoint << " (" << task_name(m.options.task) << " task); metric: "
            << task.metric_name() << ", " << task.batches() << " evaluation batches\n";

  // Importance of every head at the full model, normalised per module (Michel et al. 2019).
  const HeadImportance imp = head_importance(sites, full_head_mask(sites), estimate.batches(),
                                             [&](std::size_t i) { return estimate.batch_loss(i); });
  clear_head_mask(sites);
  std::ostringstream icsv;
  icsv << "site,head,importance_raw,importance_normalised\n";
  for (std::size_t s = 0; s < sites.size(); ++s)
    for (std::size_t h = 0; h < sites[s].heads(); ++h)
      icsv << sites[s].name << "," << h << "," << imp.raw[s][h] << "," << imp.normalised[s][h] << "\n";
  write_file_atomic(dir / "importance.csv", icsv.str(), "prune");
  write_file_atomic(dir / "importance.svg",
                    site_heatmap(sites, imp.normalised,
                                 "head importance |dL/dxi|, normalised per module: " + checkpoint_name(o.checkpoint),
                                 1.0, "importance"),
                    "prune");

  if (o.single_heads) {  // each head alone zeroed: site,head,loss,metric, the drop (full - zeroed)
    const HeadLabTask::Score full = task.evaluate();
    std::ostringstream csv;
    csv << "site,head,loss,metric,metric_drop,loss_rise\n";
    double worst = -1e300;
    std::string worst_name;
    for (const SingleHeadScore& r : zero_each_head(task)) {
      const double drop = full.metric - r.score.metric;
      csv << sites[r.site].name << "," << r.head << "," << fixed(r.score.loss, 6) << "," << fixed(r.score.metric, 6) << ","
          << fixed(drop, 6) << "," << fixed(r.score.loss - full.loss, 6) << "\n";
      if (drop > worst) worst = drop, worst_name = sites[r.site].name + "#" + std::to_string(r.head);
    }
    write_file_atomic(dir / "single_heads.csv", csv.str(), "prune");
    std::cout << "each head alone zeroed: the largest " << task.metric_name() << " drop is " << fixed(worst, 4) << " ("
              << worst_name << "; full model " << fixed(full.metric, 4) << "); wrote single_heads.csv\n";
  }

  // The baseline: random orders 1..K, order k seeded seed + (k - 1) x 0x9E3779B97F4A7C15 (wrapping;
  // order 1 is the one --seed alone gives). Every order has the same steps: they depend only on
  // how many heads are left.
  const std::vector<PruneStep> ranked = prune_heads(task, true, o.step, o.seed, importance_split.get());
  std::vector<std::vector<PruneStep>> random;
  for (std::size_t k = 0; k < o.random_orders; ++k)
    random.push_back(prune_heads(task, false, o.step, o.seed + k * 0x9E3779B97F4A7C15ull));
  // Mean and sample standard deviation over the random orders at step i (sd NaN for one order).
  auto random_stats = [&](std::size_t i, double PruneStep::*field) {
    std::vector<double> values;
    for (const auto& order : random) values.push_back(order[i].*field);
    const MetricStats s = mean_std(values);
    return std::pair<double, double>{s.mean, s.std};
  };
  const bool bleu = m.options.task == Task::translate;
  const int digits = bleu ? 2 : 3;
  auto mean_sd = [&](std::pair<double, double> s) {
    return fixed(s.first, digits) + (std::isnan(s.second) ? "" : " ± " + fixed(s.second, digits));
  };

  std::ostringstream csv;
  csv << "order,pruned,fraction,loss,metric,removed\n";
  auto csv_row = [&](const std::string& order, const PruneStep& p) {
    std::string removed;
    for (const auto& r : p.removed) removed += (removed.empty() ? "" : " ") + r;
    csv << order << "," << p.pruned << "," << p.fraction << "," << p.loss << "," << p.metric << "," << removed << "\n";
  };
  const std::string metric = task.metric_name();
  const std::string over = o.random_orders == 1 ? "random order" : "random, mean ± sd of " + std::to_string(o.random_orders);
  TextTable table({"heads pruned", "fraction", metric + " (importance)", metric + " (" + over + ")", "loss (importance)",
                   "loss (" + over + ")"});
  const double tolerance = bleu ? 1.0 : 0.01;  // 1 BLEU point, or 1% accuracy
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const PruneStep& a = ranked[i];
    csv_row("importance", a);
    for (std::size_t k = 0; k < random.size(); ++k) csv_row("random-" + std::to_string(k + 1), random[k][i]);
    table.add_row({std::to_string(a.pruned), fixed(a.fraction, 2), fixed(a.metric, digits),
                   mean_sd(random_stats(i, &PruneStep::metric)), fixed(a.loss), mean_sd(random_stats(i, &PruneStep::loss))});
  }
  const std::size_t last_within = steps_within(ranked, tolerance);
  // The verdict in words: how many heads go before the metric falls by more than the tolerance.
  const PruneStep& full = ranked.front();
  const PruneStep& kept = ranked[last_within - 1];
  const std::string tol = bleu ? "1 BLEU point" : fixed(tolerance, 2) + " " + metric;
  std::ostringstream verdict;
  if (last_within == ranked.size())
    verdict << "By importance, all " << total << " heads can be pruned with " << metric << " staying within " << tol
            << " of the full model's: " << fixed(full.metric, digits) << " -> " << fixed(kept.metric, digits) << ".";
  else if (kept.pruned == 0)
    verdict << "Pruning even " << (ranked[1].pruned == 1 ? "one head (the least important)" :
                                   "the " + std::to_string(ranked[1].pruned) + " least important heads")
            << " costs more than " << tol << ": " << fixed(full.metric, digits) << " -> "
            << fixed(ranked[1].metric, digits) << ".";
  else
    verdict << "By importance, " << kept.pruned << " of " << total << " heads (" << fixed(100 * kept.fraction, 0)
            << "%) can go with " << metric << " within " << tol << " of the full model's (" << fixed(full.metric, digits)
            << " -> " << fixed(kept.metric, digits) << "); pruning " << ranked[last_within].pruned << " costs more ("
            << fixed(ranked[last_within].metric, digits) << ").";
  if (!random.empty()) {  // the same count for the baseline: mean ± sd over the random orders
    std::vector<double> counts;
    for (const auto& order : random) counts.push_back(double(heads_prunable(order, tolerance)));
    const MetricStats c = mean_std(counts);
    verdict << " In "
            << (random.size() == 1 ? "the random order, " + fixed(c.mean, 0)
                                   : std::to_string(random.size()) + " random orders, " + fixed(c.mean, 1) + " ± " + fixed(c.std, 1))
            << " heads go before it falls by more than " << tol << ".";
  }
  const std::string text = table.markdown();
  std::cout << text << verdict.str() << "\n";
  write_file_atomic(dir / "prune.csv", csv.str(), "prune");
  write_file_atomic(dir / "prune.md", text + "\n" + verdict.str() + "\n", "prune");

  // The curves: importance order as a line, the random orders as their mean with a band of ± 1 sd.
  auto curve = [&](double PruneStep::*field, const std::string& y, const std::string& file) {
    std::vector<ChartSeries> series(2);
    series[0].name = "by importance (Michel et al.)";
    series[1].name = o.random_orders == 1 ? "random order"
                                          : "random orders (mean ± sd of " + std::to_string(o.random_orders) + ")";
    for (std::size_t i = 0; i < ranked.size(); ++i) {
      series[0].x.push_back(ranked[i].fraction);
      series[0].y.push_back(ranked[i].*field);
      const auto [mean, sd] = random_stats(i, field);
      series[1].x.push_back(ranked[i].fraction);
      series[1].y.push_back(mean);
      if (o.random_orders > 1) {
        series[1].band_low.push_back(mean - sd);
        series[1].band_high.push_back(mean + sd);
      }
    }
    ChartOptions co;
    co.title = y + " against heads pruned (no retraining): " + checkpoint_name(o.checkpoint);
    co.x_label = "fraction of heads pruned";
    co.y_label = y;
    write_file_atomic(dir / file, svg_line_chart(series, co), "prune");
  };
  curve(&PruneStep::metric, metric, "prune.svg");
  curve(&PruneStep::loss, "evaluation loss", "prune_loss.svg");
  write_survivors(m, sites, ranked, tolerance, tol, imp, dir);
  std::cout << "wrote prune.csv, prune.md, prune.svg, prune_loss.svg, importance.csv, importance.svg, survivors.csv "
               "and survivors.md in "
            << dir.string() << "\n";
  return 0;
}

}  // namespace headlab::cli
