// tutorial_threads.hpp: the tutorials compute on every core, or on HEADLAB_THREADS threads when
// that is set (the test suite sets 1). The CLI's equivalent is `--threads N`.
#pragma once

#include <cstdlib>
#include <iostream>

#include "headlab/core/errors.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/core/user_input.hpp"

namespace headlab {
inline void use_tutorial_threads() {
  int n = available_cores();
  if (const char* env = std::getenv("HEADLAB_THREADS")) {
    try {
      n = static_cast<int>(parse_whole_number(env, 1, 1024));
    } catch (const ValueError& e) {
      std::cerr << "HEADLAB_THREADS: " << e.what() << "\n";
      std::exit(2);
    }
  }
  set_threads(n);
}
}  // namespace headlab
