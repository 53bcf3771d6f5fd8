// sweep_test_files.hpp: helpers of the sweep tests (test_sweep.cpp, test_sweep_cluster.cpp).
#pragma once

#include <filesystem>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"

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

}  // namespace headlab::testing
