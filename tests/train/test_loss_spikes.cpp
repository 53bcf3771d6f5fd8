// Loss spikes (headlab/train/loss_spikes.hpp) on hand-made loss series.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "headlab/train/loss_spikes.hpp"

namespace test_loss_spikes {

using namespace headlab;

TEST_CASE("loss spikes: a jump of more than 0.5 nats above the mean of the 20 steps before is one spike") {
  std::vector<double> losses(25, 2.0);  // steps 1..25 flat at 2.0
  losses.push_back(2.6);                // step 26: 0.6 above the mean of steps 6..25
  losses.push_back(2.0);                // step 27: mean of 7..26 is 2.03, a fall
  losses.push_back(2.45);               // step 28: 0.45 - 0.6/20 = 0.42 above: not a spike
  const LossSpikes s = loss_spikes(losses);
  CHECK(s.count == 1);
  CHECK(s.max_jump == doctest::Approx(0.6));
  // A lower threshold counts step 28 too.
  CHECK(loss_spikes(losses, {20, 0.4}).count == 2);
}

TEST_CASE("loss spikes: a falling loss has none, and a run within the window has no jump at all") {
  std::vector<double> falling;
  for (int t = 0; t < 100; ++t) falling.push_back(4.0 * std::exp(-0.05 * t) + 1.5);
  const LossSpikes s = loss_spikes(falling);
  CHECK(s.count == 0);
  CHECK(s.max_jump < 0);  // every step is below the mean of the steps before it
  const LossSpikes short_run = loss_spikes(std::vector<double>(20, 2.0));  // no step past W = 20
  CHECK(short_run.count == 0);
  CHECK(std::isnan(short_run.max_jump));
}

TEST_CASE("loss spikes: a breakdown to the unigram loss counts the steps of the climb until the window catches up") {
  std::vector<double> losses(30, 1.8);
  for (int t = 0; t < 30; ++t) losses.push_back(3.0);  // from step 31 on, 1.2 nats higher
  // Step 31 + k has k of its 20 window steps at 3.0: jump 1.2 (1 - k / 20) > 0.5 for k < 11.67.
  const LossSpikes s = loss_spikes(losses);
  CHECK(s.count == 12);
  CHECK(s.max_jump == doctest::Approx(1.2));
}

TEST_CASE("loss spikes: a NaN loss makes no spike and no maximum, in its own step or its windows") {
  std::vector<double> losses(21, 2.0);
  losses[10] = std::numeric_limits<double>::quiet_NaN();
  losses.push_back(9.0);  // step 22: its window (2..21) holds the NaN
  const LossSpikes s = loss_spikes(losses);
  CHECK(s.count == 0);
  CHECK(std::isnan(s.max_jump));
  losses.insert(losses.end(), 20, 2.0);  // 20 steps whose windows hold the NaN or the 9.0: falls
  losses.push_back(2.7);                 // then a window of 2.0s again: 0.7 above, a spike
  CHECK(loss_spikes(losses).count == 1);
}
}  // namespace test_loss_spikes
