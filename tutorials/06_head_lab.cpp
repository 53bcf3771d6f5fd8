// Chapter 6: the head lab. What do trained heads do? Study 1: induction heads.
//
// Data (the induction task, headlab/train/trainer.hpp):
//   <s> r_1 .. r_k  r_1 .. r_k  x ..        r, x uniform random tokens, k varies per sequence
// The first copy is noise: no model can beat ln(62) = 4.13 nats there. From r_2 of the
// second copy on, the answer is "the token that followed this token last time": a
// two-step circuit (Olsson et al. 2022):
//   layer 0, a previous-token head:  position j copies in the token at j - 1
//   layer 1, an induction head:      the query r_i looks for the key whose previous token
//                                    is r_i (the K-composition with layer 0), i.e. position
//                                    i - (k - 1), and copies the token there: r_{i+1}.
// A single layer cannot build it: its keys only know their own token.
//
// Scores (headlab/lab/heads.hpp) on the probe [<s>] r_1..r_16 r_1..r_16:
//   previous-token = mean A[i, i-1],   induction = mean over the second copy of A[i, i-15],
//   sink = mean A[i, 0];  a head "is" one of these when its score > 0.4.
//
// usage: tutorial_head_lab [--quick] [OUT_DIR]
//   full (about a minute): three seeds of a 2-layer and of a 1-layer attention-only model,
//   1500 steps each; --quick: one seed, 20 steps, no claims checked (for the test suite).
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "headlab/headlab.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/report/report.hpp"
#include "study_common.hpp"

using namespace headlab;
namespace fs = std::filesystem;

namespace {

struct Best {
  double previous_token = 0, induction = 0;  // best head of the layer
};
// The best previous-token and induction score of each layer.
std::vector<Best> best_per_layer(const std::vector<HeadRoles>& roles, std::size_t layers) {
  std::vector<Best> best(layers);
  for (const auto& r : roles) {
    best[r.layer].previous_token = std::max(best[r.layer].previous_token, r.previous_token);
    best[r.layer].induction = std::max(best[r.layer].induction, r.induction);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const study::StudyArgs args = study::study_args(argc, argv, "head_lab_runs");
  const bool quick = args.quick;  // plain names, not a structured binding: lambdas below take them
  const std::filesystem::path& out = args.out;
  const std::vector<std::uint64_t> seeds = quick ? std::vector<std::uint64_t>{1} : std::vector<std::uint64_t>{1, 2, 3};

  // ---- 1. Train 2-layer and 1-layer attention-only models ------------------------------------
  TrainOptions o = TrainOptions::defaults_for(Task::induction);  // d 64, 4 heads, rope, pre-LN, vocab 64, T 16
  if (quick) o.steps = 20;
  std::cout << "1. The induction task: vocabulary " << o.vocab << " (62 random symbols), blocks of " << (o.length + 1) / 2
            << ".." << o.length << " tokens repeated once, sequences of " << 2 * o.length + 1 << "; d_model " << o.d_model
            << ", " << o.heads << " heads, attention only, rotary positions, " << o.steps << " steps of " << o.batch
            << " sequences\n";
  std::vector<study::SeedRuns> models;
  for (std::size_t layers : {2, 1}) {
    TrainOptions m = o;
    m.layers = layers;
    models.push_back(study::train_seeds(std::to_string(layers) + "-layer", m, seeds, out));
  }

  // ---- 2. The loss drop on the repeated half ----------------------------------------------------
  std::cout << "\n2. Held-out loss (nats) per half of the sequence, mean ± std over " << seeds.size() << " seed(s):\n"
            << "  | model | first copy (noise) | second copy r_2..r_k | accuracy on r_2..r_k |\n"
            << "  |---|---|---|---|\n";
  for (const auto& runs : models) {
    std::vector<double> first, repeated, accuracy;
    for (const auto& r : runs.results) {
      first.push_back(r.first_half_loss);
      repeated.push_back(r.repeated_loss);
      accuracy.push_back(r.repeated_accuracy);
    }
    std::cout << "  | " << runs.name << " | " << study::mean_pm_std(first) << " | " << study::mean_pm_std(repeated)
              << " | " << study::mean_pm_std(accuracy) << " |\n";
  }

  // ---- 3. What the heads do ------------------------------------------------------------------------
  std::cout << "\n3. Head roles of the 2-layer model, seed 1 (probe: 64 sequences [<s>] r_1..r_16 r_1..r_16):\n"
            << "  | layer | head | previous-token | induction | sink | entropy | role |\n"
            << "  |---|---|---|---|---|---|---|\n";
  const std::vector<HeadRoles> roles = study::roles_of(models[0].run_dirs[0]);
  std::vector<std::vector<double>> induction_map(2, std::vector<double>(o.heads)), previous_map = induction_map;
  for (const auto& r : roles) {
    std::string role = r.induction > 0.4 ? "induction" : r.previous_token > 0.4 ? "previous-token" : r.sink_mass > 0.4 ? "sink" : "";
    std::cout << std::fixed << std::setprecision(2) << "  | " << r.layer << " | " << r.head << " | " << r.previous_token
              << " | " << r.induction << " | " << r.sink_mass << " | " << r.entropy << " | " << role << " |\n";
    induction_map[r.layer][r.head] = r.induction;
    previous_map[r.layer][r.head] = r.previous_token;
  }
  HeatmapOptions ho;
  ho.x_label = "head";
  ho.y_label = "layer";
  ho.vmin = 0.0;
  ho.vmax = 1.0;
  ho.reference_label = "uniform attention over the visible keys";  // every head's baseline (causal: the same for all)
  ho.title = "induction score, 2-layer attention-only model";
  ho.reference = roles.front().induction_uniform;
  write_file_atomic(out / "induction_scores.svg", svg_heatmap(induction_map, ho), "tutorial 06");
  ho.title = "previous-token score, 2-layer attention-only model";
  ho.reference = roles.front().previous_token_uniform;
  write_file_atomic(out / "previous_token_scores.svg", svg_heatmap(previous_map, ho), "tutorial 06");
  std::cout << std::fixed << std::setprecision(3) << "  uniform attention over the visible keys scores previous-token "
            << roles.front().previous_token_uniform << ", induction " << roles.front().induction_uniform << "\n";
  std::cout << std::defaultfloat << "  (heatmaps: " << (out / "induction_scores.svg").string() << ", "
            << (out / "previous_token_scores.svg").string() << "; attention maps: headlab heads --checkpoint "
            << (fs::path(models[0].run_dirs[0]) / "checkpoint.safetensors").string() << ")\n";

  // ---- 4. Every seed: the best head of each kind per layer ---------------------------------------------
  std::cout << "\n4. Best previous-token head in layer 0 and best induction head in the last layer, every seed:\n"
            << "  | model | seed | best previous-token, layer 0 | best induction, last layer |\n  |---|---|---|---|\n";
  int failures = 0;
  for (const auto& runs : models) {
    const std::size_t layers = runs.name[0] == '2' ? 2 : 1;
    for (std::size_t s = 0; s < runs.run_dirs.size(); ++s) {
      const std::vector<Best> best = best_per_layer(study::roles_of(runs.run_dirs[s]), layers);
      std::cout << std::fixed << std::setprecision(2) << "  | " << runs.name << " | " << seeds[s] << " | "
                << best[0].previous_token << " | " << best[layers - 1].induction << " |\n";
      if (quick) continue;
      // The claims of this chapter, checked on every seed.
      if (layers == 2 && (best[0].previous_token <= 0.4 || best[1].induction <= 0.4)) {
        std::cout << "  CHECK FAILED: the 2-layer model of seed " << seeds[s] << " lacks the circuit\n";
        ++failures;
      }
      if (layers == 1 && best[0].induction > 0.4) {
        std::cout << "  CHECK FAILED: a 1-layer model formed an induction head (seed " << seeds[s] << ")\n";
        ++failures;
      }
    }
  }
  std::cout << std::defaultfloat
            << "\nTwo layers: a previous-token head in layer 0 feeds an induction head in layer 1, and the\n"
               "second copy becomes predictable. One layer: no head can find the earlier copy's successor,\n"
               "and the second copy stays mostly noise. (docs/studies/induction-heads.md has the numbers.)\n";
  return failures == 0 ? 0 : 1;
}
