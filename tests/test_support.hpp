// test_support.hpp: helpers shared by the test files.
#pragma once

#include <unistd.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "headlab/core/tensor.hpp"
#include "headlab/core/threads.hpp"

namespace headlab::testing {

// max |a - b| over the elements of two arrays of one shape; +infinity when a difference is not
// finite, so that a NaN never passes `max_diff(...) < tol`. Equal infinities differ by 0.
template <typename T>
double max_diff(const Array<T>& a, const Array<T>& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = double(a.data()[i]), y = double(b.data()[i]);
    const double d = x == y ? 0.0 : std::abs(x - y);
    if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

// The bytes of a file; std::runtime_error naming it when it cannot be read (the test fails there).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) throw std::runtime_error("cannot read " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Sets the thread count and the parallel-work threshold (headlab/core/threads.hpp) for one scope,
// then puts back what was there.
struct ThreadScope {
  int old_threads = threads();
  std::size_t old_work = min_parallel_work();
  ThreadScope(int n, std::size_t work) {
    set_threads(n);
    set_min_parallel_work(work);
  }
  ~ThreadScope() {
    set_threads(old_threads);
    set_min_parallel_work(old_work);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;
};

// A fresh directory under the system temp dir (headlab_<name>_<pid>_<n>, unique per process and
// per object), created empty and removed with its contents at scope exit.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name = "test") {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("headlab_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside the directory.
  std::string file(const std::string& name) const { return (path / name).string(); }
  // Writes `bytes` exactly (binary) to a file in the directory; returns its path.
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path / name, std::ios::binary) << bytes;
    return file(name);
  }
  // The names of the directory's entries, sorted.
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

// A meeting of two: each caller of arrive_and_wait() waits (up to 10 s) until the other has
// arrived too, which only two threads running at once can do. met() is false when one waited in
// vain. (Counting the chunks that ran on workers is no proof either way: on a loaded machine the
// caller may take them all.)
class Rendezvous {
 public:
  void arrive_and_wait() {
    ++arrived_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived_.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        met_ = false;
        return;
      }
      std::this_thread::yield();
    }
  }
  bool met() const { return met_.load(); }

 private:
  std::atomic<int> arrived_{0};
  std::atomic<bool> met_{true};
};

}  // namespace headlab::testing
