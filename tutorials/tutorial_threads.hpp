// tutorial_threads.hpp: the tutorials compute on every core, or on HEADLAB_THREADS threads when
// that is set (the test suite sets 1). The CLI's equivalent is `--threads N`.
#pragma once

#include <cstdlib>
#include <iostream>
#include <string>

#include "headlab/core/threads.hpp"

namespace headlab {
inline void use_tutorial_threads() {
  int n = available_cores();
  if (const char* env = std::getenv("HEADLAB_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 1 || v > 1024) {
      std::cerr << "HEADLAB_THREADS must be a whole number from 1 to 1024, got '" << env << "'\n";
      std::exit(2);
    }
    n = static_cast<int>(v);
  }
  set_threads(n);
}
}  // namespace headlab
