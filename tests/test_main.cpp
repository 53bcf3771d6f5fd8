// The doctest main lives alone in its translation unit (it is slow to compile).
//
// Tests run on one thread unless HEADLAB_THREADS says otherwise; with HEADLAB_MIN_PARALLEL_WORK=1
// as well, every parallel path of the kernels runs even on the tests' tiny shapes (the
// threads.parity_gradcheck_resume entry of tests/CMakeLists.txt runs the suite's parity,
// gradcheck and resume cases that way, at two threads).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>

#include "headlab/headlab.hpp"

namespace {
long env_number(const char* name, long fallback, long lo, long hi) {
  const char* text = std::getenv(name);
  if (!text) return fallback;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) {
    std::cerr << name << " must be a whole number from " << lo << " to " << hi << ", got '" << text << "'\n";
    std::exit(2);
  }
  return v;
}
}  // namespace

int main(int argc, char** argv) {
  headlab::set_threads(static_cast<int>(env_number("HEADLAB_THREADS", 1, 1, 1024)));
  headlab::set_min_parallel_work(
      static_cast<std::size_t>(env_number("HEADLAB_MIN_PARALLEL_WORK", 1L << 18, 1, 1L << 40)));
  doctest::Context context(argc, argv);
  return context.run();
}
