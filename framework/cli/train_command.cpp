// train_command.cpp: `headlab train`.
#include <iostream>

#include "commands.hpp"
#include "headlab/trainer.hpp"

namespace headlab::cli {

int run_train(const TrainOptions& options) {
  const TrainResult r = train(options, std::cout);
  std::cout << "trained " << r.steps_done << " steps in " << r.seconds << " s; final loss "
            << (r.losses.empty() ? 0.0 : r.losses.back()) << "; held-out exact match " << r.exact_match << " on "
            << options.eval_sequences << " sequences\n";
  if (!options.run_dir.empty()) std::cout << "run directory: " << options.run_dir << "\n";
  return 0;
}

}  // namespace headlab::cli
