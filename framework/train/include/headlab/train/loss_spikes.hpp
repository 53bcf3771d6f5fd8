// headlab/train/loss_spikes.hpp: loss spikes in a run's training losses (what summary.json reports).
//
// A step's training loss is noisy (one batch), so a spike is measured against the steps just
// before it, not against the run's best:
//
//   jump_t = loss_t - mean(loss_{t-W} .. loss_{t-1})        for every step t > W (t from 1)
//   spike at t  <=>  jump_t > threshold
//   loss_spikes   = the number of steps t that are spikes
//   max_loss_jump = max over t > W of jump_t  (NaN when the run has no step past the window)
//
// headlab: W = 20 steps and threshold = 0.5 nats. A character-level lm's batch of 16 x 64 tokens
// has a loss of 1.3-2.5 nats with a step-to-step spread of about 0.05-0.1 nats, so 0.5 nats is
// five or more spreads: a real jump, not a noisy batch. A steady fall (the start of every run)
// gives negative jumps, so the steps of the warm-up need no special case; a run that breaks down
// and climbs to the unigram loss (~3 nats) counts the steps of the climb until the window has
// caught up. The same rule applies to every task (a loss in nats per token); steps start at 1.
#pragma once

#include <cstddef>
#include <vector>

namespace headlab {

struct LossSpikeRule {
  std::size_t window = 20;  // W: the steps the jump is measured against
  double threshold = 0.5;   // nats above the window's mean
};

struct LossSpikes {
  std::size_t count = 0;      // steps whose jump exceeds the threshold
  double max_jump = 0;        // the largest jump (NaN with no step past the window)
};

// The spikes of `losses` (one per step, from step 1) by `rule`. A NaN or infinite loss in a window
// or at a step makes that step's jump NaN: neither a spike nor the maximum.
LossSpikes loss_spikes(const std::vector<double>& losses, const LossSpikeRule& rule = {});

}  // namespace headlab
