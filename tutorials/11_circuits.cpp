// Chapter 11: circuits. Which heads does the answer depend on?
//
// Chapter 6 found an induction head by how it looks: its attention pattern. This chapter asks the
// causal question, with the tools of headlab/lab (docs/circuits.md), on one 2-layer attention-only
// induction model:
//   1. role probes          previous-token and induction scores per head (chapter 6)
//   2. composition          which layer-0 head writes what an induction head reads as its key:
//                           K-composition ||W_OV^a W_QK^bT||_F / (||W_OV^a||_F ||W_QK^b||_F)
//   3. activation patching  clean rows <s> r_1..r_T r_1..r_{T-1} (answer r_T) and corrupted rows with
//                           the first half redrawn except r_{T-1} (answer: the new token after it);
//                           run the corrupted rows with one head's output taken from the clean run:
//                           recovered share = (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted),
//                           LD = logit(clean answer) - logit(corrupted answer) at the last position
//   4. attribution          the answer's logit split exactly into one term per head (the final
//                           norm's scale frozen), and the logit lens: the answer's rank after each layer
// The hook points under all of it: HookPoints (headlab/nn/hooks.hpp), names as in TransformerLens.
//
// usage: tutorial_circuits [--quick] [OUT_DIR]
//   full (about 15 s on one thread): one seed, 1500 steps, the chapter's claims checked; --quick: 20 steps, no
//   claims checked (for the test suite).
#include <iomanip>
#include <iostream>

#include "headlab/headlab.hpp"
#include "headlab/lab/composition.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/lab/logit_attribution.hpp"
#include "headlab/lab/patching.hpp"
#include "study_common.hpp"

using namespace headlab;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const study::StudyArgs args = study::study_args(argc, argv, "circuits_runs");
  const bool quick = args.quick;  // plain names, not a structured binding: lambdas below take them
  const std::filesystem::path& out = args.out;
  TrainOptions o = TrainOptions::defaults_for(Task::induction);  // d 64, 4 heads, rope, pre-LN, vocab 64, T 16
  o.layers = 2;
  o.attention_only = true;
  if (quick) o.steps = 20;
  std::cout << "Training a 2-layer attention-only induction model (" << o.steps << " steps, seed 1):\n";
  const study::SeedRuns run = study::train_seeds("2-layer", o, {1}, out);
  const std::string checkpoint = (fs::path(run.run_dirs[0]) / "checkpoint.safetensors").string();
  LoadedModel m = load_trained_model(checkpoint);
  int failures = 0;
  auto check = [&](bool ok, const std::string& claim) {
    if (quick) return;
    std::cout << (ok ? "  check: " : "  CHECK FAILED: ") << claim << "\n";
    failures += !ok;
  };

  // ---- 1. Role probes ---------------------------------------------------------------------------
  const std::vector<HeadRoles> roles = study::roles_of(run.run_dirs[0]);
  std::cout << "\n1. Role probes (a head is one when its score > 0.4):\n  | head | previous-token | induction |\n  |---|---|---|\n";
  std::vector<bool> previous(o.heads), induction(o.heads);
  for (const HeadRoles& r : roles) {
    std::cout << std::fixed << std::setprecision(2) << "  | " << r.layer << "." << r.head << " | " << r.previous_token
              << " | " << r.induction << " |\n";
    if (r.layer == 0) previous[r.head] = r.previous_token > 0.4;
    if (r.layer == 1) induction[r.head] = r.induction > 0.4;
  }

  // ---- 2. Composition -----------------------------------------------------------------------------
  const std::vector<CompositionScore> scores = composition_scores(m);
  const CompositionBaseline base = random_composition_baseline(o.d_model, o.d_model / o.heads);
  std::cout << "\n2. K-composition, the strongest layer-0 writer of each layer-1 head (random baseline "
            << base.k << "):\n";
  std::size_t partnered = 0, labelled = 0;
  for (std::size_t b = 0; b < o.heads; ++b) {
    const CompositionScore* top = nullptr;
    for (const CompositionScore& s : scores)
      if (s.reader_head == b && (!top || s.k > top->k)) top = &s;
    std::cout << "  1." << b << (induction[b] ? " (induction)" : "") << " <- 0." << top->writer_head
              << (previous[top->writer_head] ? " (previous-token)" : "") << ", K " << top->k << "\n";
    labelled += induction[b];
    partnered += induction[b] && previous[top->writer_head];
  }
  check(labelled > 0 && partnered > 0, "an induction head's strongest K-writer is a previous-token head");

  // ---- 3. Activation patching ---------------------------------------------------------------------
  const CircuitProbe probe = make_circuit_probe(m.options, {64, 1, 0, ""});
  const PatchingResult p = activation_patching(m, probe);
  std::cout << "\n3. Activation patching (" << probe.rule << "; LD clean " << p.clean_difference << ", corrupted "
            << p.corrupted_difference << "), recovered share per head:\n";
  double induction_total = 0;
  for (std::size_t l = 0; l < p.heads.size(); ++l) {
    std::cout << "  layer " << l << ":";
    for (std::size_t h = 0; h < p.heads[l].size(); ++h) {
      std::cout << "  h" << h << " " << p.heads[l][h];
      if (l == 1 && induction[h]) induction_total += p.heads[l][h];
    }
    std::cout << "\n";
  }
  std::cout << "  the stream, patched at one position: before layer 0 at position " << o.length << " (the token after\n"
            << "  the earlier copy) " << p.residual[0][o.length] << ", before layer 1 there " << p.residual[1][o.length]
            << ", leaving layer 1 at the last position " << p.residual[2][probe.position] << "\n";
  check(induction_total > 0.5, "the heads labelled induction together recover more than half of the answer");
  check(p.residual[0][o.length] > 0.5, "patching the input at the token after the earlier copy restores most of the answer");

  // ---- 4. Direct logit attribution and the logit lens ---------------------------------------------------
  const LogitAttribution a = direct_logit_attribution(m, probe);
  std::cout << "\n4. The answer's logit, split into terms (largest gap to the logit over the rows " << std::scientific
            << std::setprecision(1) << a.max_sum_error << std::fixed << std::setprecision(2) << "):\n";
  double heads1 = 0, rest = 0;
  for (const LogitComponent& c : a.components) {
    std::cout << "  " << std::left << std::setw(22) << c.name << std::right << " " << c.mean << "\n";
    (c.layer == 1 && c.head >= 0 ? heads1 : rest) += c.mean;
  }
  for (const LensLayer& l : logit_lens(m, probe))
    std::cout << "  logit lens, " << std::left << std::setw(26) << l.point << std::right << " answer rank " << l.mean_rank
              << ", top-1 " << l.top1 << "\n";
  check(a.max_sum_error < 1e-3, "the terms add up to the logit");
  check(heads1 > rest, "layer 1's heads write most of the answer's logit");

  std::cout << std::defaultfloat
            << "\nThe probes said which heads look like an induction circuit; patching and attribution say the\n"
               "answer runs through them, and composition ties each induction head to the previous-token head\n"
               "whose output it reads as its key. docs/circuits.md has the definitions and the proofs on\n"
               "models whose circuits are planted by hand.\n";
  return failures == 0 ? 0 : 1;
}
