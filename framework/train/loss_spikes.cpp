// loss_spikes.cpp: jumps of the training loss above the mean of the steps before (headlab/train/loss_spikes.hpp).
#include "headlab/train/loss_spikes.hpp"

#include <cmath>
#include <limits>

namespace headlab {

LossSpikes loss_spikes(const std::vector<double>& losses, const LossSpikeRule& rule) {
  LossSpikes out;
  out.max_jump = std::numeric_limits<double>::quiet_NaN();
  const std::size_t W = rule.window;
  if (W == 0) return out;
  for (std::size_t t = W; t < losses.size(); ++t) {  // 0-based t: the step t + 1, past the window
    double window_sum = 0;
    for (std::size_t k = t - W; k < t; ++k) window_sum += losses[k];
    const double jump = losses[t] - window_sum / double(W);  // loss_t - mean of the W steps before
    if (!std::isfinite(jump)) continue;
    if (jump > rule.threshold) ++out.count;
    if (std::isnan(out.max_jump) || jump > out.max_jump) out.max_jump = jump;
  }
  return out;
}

}  // namespace headlab
