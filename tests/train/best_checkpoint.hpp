// best_checkpoint.hpp: what the --select tests compare: the evaluation a run should keep, worked out
// from its metrics.jsonl, and what it did keep (summary.json, best.safetensors).
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "headlab/report/metrics.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/core/user_input.hpp"

namespace headlab::testing {

// The step of the evaluation row (one with "valid_loss") with the best `key`: the lowest, or with
// higher_is_better the highest; equal values: the lower valid_loss, then the earlier step.
inline std::size_t expected_best_step(const std::filesystem::path& run_dir, const std::string& key,
                                      bool higher_is_better) {
  std::size_t step = 0;
  double value = 0, loss = 0;
  for (const MetricRow& row : read_metrics(run_dir / "metrics.jsonl")) {
    if (!row.has("valid_loss")) continue;
    const double v = row.number(key), l = row.number("valid_loss");
    const bool better = step == 0 || (higher_is_better ? v > value : v < value) || (v == value && l < loss);
    if (better) step = static_cast<std::size_t>(row.number("step")), value = v, loss = l;
  }
  return step;
}

inline nlohmann::json read_summary(const std::filesystem::path& run_dir) {
  std::ifstream in(run_dir / "summary.json");
  return nlohmann::json::parse(in);
}

// The step best.safetensors was saved at (its metadata).
inline std::size_t best_file_step(const std::filesystem::path& run_dir) {
  const TensorFile file = load_checkpoint_file((run_dir / "best.safetensors").string());
  return static_cast<std::size_t>(parse_whole_number(checkpoint_meta(file, "step"), 0, 1000000000));
}

}  // namespace headlab::testing
