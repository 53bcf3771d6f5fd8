// Study 3: gated attention at toy scale. No gate, a headwise gate, an elementwise gate.
//
// Qiu et al. 2025 (position G1): each head's SDPA output is multiplied by
// sigmoid(x W_theta), a gate computed from the same input as the queries,
//   headwise:    one scalar per head and token     (W_theta: D x h,       + D h parameters per layer)
//   elementwise: one per channel of each head      (W_theta: D x (h d_k), + D h d_k per layer)
// At 15B parameters they report: attention on the first token 46.7% -> 4.8%, the largest
// activation 1053 -> 94, mean gate 0.116, and a lower loss. Does any of it show at toy scale?
// The model: the translation model of study 2 with 4 heads (d_model 64, 2+2 layers, 600
// steps), three seeds per variant. Measured per run:
//   validation loss and greedy BLEU;
//   sink mass: mean attention on position 0 over heads, decoder self-attention (position 0
//     is <s>) and encoder self-attention, on the repeated-random-tokens probe;
//   largest activation: max |attention output| over every attention module on the probe;
//   mean gate value over heads (gated variants).
//
// usage: tutorial_gated_attention [--quick] [OUT_DIR]
//   full: 9 runs of ~35 s (about 5.5 minutes); --quick: d_model 32, 1 seed, 5 steps (for the test suite).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "headlab/headlab.hpp"
#include "study_common.hpp"

using namespace headlab;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const study::StudyArgs args = study::study_args(argc, argv, "gated_attention_runs");
  const bool quick = args.quick;  // plain names, not a structured binding: lambdas below take them
  const std::filesystem::path& out = args.out;
  TrainOptions o = study::translation_options(HEADLAB_DATASETS_DIR, quick ? 5 : 600, quick);
  o.d_model = quick ? 32 : 64;  // the model of study 2 with 4 heads
  o.heads = 4;
  o.ff_dim = quick ? 64 : 256;
  o.warmup = 200;
  const std::vector<std::uint64_t> seeds = quick ? std::vector<std::uint64_t>{1} : std::vector<std::uint64_t>{1, 2, 3};
  std::cout << "Gated attention on German -> English: d_model 64, 4 heads, 2+2 layers, " << o.steps << " steps\n";

  std::vector<std::string> table;
  for (const std::string gate : {"none", "headwise", "elementwise"}) {
    TrainOptions m = o;
    m.gate = parse_gate(gate);
    const study::SeedRuns runs = study::train_seeds("gate-" + gate, m, seeds, out);
    std::vector<double> loss, bleu, dec_sink, enc_sink, largest, gate_mean;
    for (std::size_t s = 0; s < runs.results.size(); ++s) {
      loss.push_back(runs.results[s].valid_loss);
      bleu.push_back(runs.results[s].valid_bleu);
      double dec = 0, enc = 0, nd = 0, ne = 0, big = 0, g = 0, ng = 0;
      for (const HeadRoles& r : study::roles_of(runs.run_dirs[s])) {
        if (r.kind == "decoder self") dec += r.sink_mass, ++nd;
        if (r.kind == "encoder self") enc += r.sink_mass, ++ne;
        big = std::max(big, r.max_abs_output);
        if (!std::isnan(r.gate_mean)) g += r.gate_mean, ++ng;
      }
      dec_sink.push_back(dec / nd);
      enc_sink.push_back(enc / ne);
      largest.push_back(big);
      if (ng) gate_mean.push_back(g / ng);
    }
    std::ostringstream row;
    row << "| " << gate << " | " << study::mean_pm_std(loss) << " | " << study::mean_pm_std(bleu, 2) << " | "
        << study::mean_pm_std(dec_sink) << " | " << study::mean_pm_std(enc_sink) << " | "
        << study::mean_pm_std(largest, 2) << " | " << study::mean_pm_std(gate_mean) << " | "
        << std::llround(run_summary_numbers(runs.run_dirs[0])["parameters"]) << " |";
    table.push_back(row.str());
  }
  std::cout << "\n| gate | validation loss | greedy BLEU | sink mass, decoder self | sink mass, encoder self | "
               "largest activation | mean gate | parameters |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto& line : table) std::cout << line << "\n";
  std::cout << "\n(mean ± std over " << seeds.size() << " seed(s); docs/studies/gated-attention.md discusses them.)\n";
  return 0;
}
