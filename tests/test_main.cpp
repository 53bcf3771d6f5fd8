// The doctest main lives alone in its translation unit (it is slow to compile).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "headlab/headlab.hpp"

int main(int argc, char** argv) {
  headlab::set_blas_threads(1);
  doctest::Context context(argc, argv);
  return context.run();
}
