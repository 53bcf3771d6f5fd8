// train_command.cpp: `headlab train`.
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "headlab/trainer.hpp"

namespace headlab::cli {

int run_train(const TrainOptions& options) {
  const TrainResult r = train(options, std::cout);
  std::cout << "trained " << r.steps_done << " steps in " << std::fixed << std::setprecision(1) << r.seconds
            << " s; final loss " << std::setprecision(5) << (r.losses.empty() ? 0.0 : r.losses.back())
            << "; held-out exact match " << std::setprecision(3) << r.exact_match << " on "
            << options.eval_sequences << " sequences\n";
  if (!options.run_dir.empty()) std::cout << "run directory: " << options.run_dir << "\n";
  return 0;
}

}  // namespace headlab::cli
