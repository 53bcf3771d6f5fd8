// headlab/lab/patching.hpp: activation patching (causal tracing; Meng et al. 2022, Wang et al.
// 2022) on a decoder-only model and a CircuitProbe (headlab/lab/circuit_probe.hpp).
//
// Two runs of the same rows: clean and corrupted, each with its logit difference
//   LD = mean over rows of logit[p, clean answer] - logit[p, corrupted answer].
// Denoising (the default): the corrupted run, with one activation replaced by its value in the
// clean run. Noising: the clean run, with one activation from the corrupted run. Either way
//   recovered share = (LD_patched - LD_corrupted) / (LD_clean - LD_corrupted)
// 1 = the patched run behaves as the clean one, 0 = as the corrupted one. Denoising finds the
// activations that suffice to restore the answer; noising those the answer cannot do without.
// Patched activations (hook names: docs/circuits.md):
//   heads      {module}.hook_z[:, i] at every position (head i's output, before W_O), for every
//              attention module (attention_modules(): self-attention; with an encoder also cross-
//              attention)
//   residual   each layer's hook_resid_pre[:, t] at one position t, and the last layer's
//              hook_resid_post[:, t] (what the unembedding reads) (stream_points())
#pragma once

#include <string>
#include <vector>

#include "headlab/lab/circuit_probe.hpp"

namespace headlab {

enum class PatchDirection { denoise, noise };

struct PatchingResult {
  double clean_difference = 0, corrupted_difference = 0;  // LD of the two runs
  std::vector<std::string> modules;                       // attention modules, the rows of `heads`
  std::vector<std::vector<double>> heads;                 // [module][head]: recovered share
  std::vector<std::string> residual_points;               // hook names, the rows of `residual`
  std::vector<std::vector<double>> residual;              // [point][position]: recovered share
};

// ValueError when the two runs tell the answers apart by less than 1e-6 nats (nothing to recover).
PatchingResult activation_patching(LoadedModel& model, const CircuitProbe& probe,
                                   PatchDirection direction = PatchDirection::denoise);

}  // namespace headlab
