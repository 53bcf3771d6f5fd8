// sweep_test_files.hpp: helpers of the sweep tests (test_sweep.cpp, test_sweep_summary.cpp,
// test_sweep_cluster.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/lab/sweep.hpp"

namespace headlab::testing {

// Writes `text` to `path`, making its directories.
inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  write_file_atomic(path, text, "test");
}

// The message of the ValueError that `f` throws ("" if it throws none).
template <typename F> std::string value_error(F f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

// A sweep of the grid axes `grid` ("heads=1,2"), the seeds and the base train flags.
inline SweepSpec spec_of(std::vector<std::string> grid, std::vector<std::uint64_t> seeds = {1},
                         std::vector<std::string> base = {}) {
  SweepSpec spec;
  for (const auto& g : grid) spec.grid.push_back(parse_grid_axis(g));
  spec.seeds = std::move(seeds);
  spec.base_flags = std::move(base);
  return spec;
}

}  // namespace headlab::testing
