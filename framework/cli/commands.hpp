// commands.hpp: the subcommands of the headlab CLI, kept free of CLI11 so that
// only main.cpp pays for that header.
#pragma once

#include <cstdint>
#include <string>

namespace headlab::cli {

struct MlpDemoOptions {
  std::uint64_t seed = 1;
  int steps = 500;
  int hidden = 32;
  int points = 256;   // training points (two interleaved spirals)
  double lr = 1.0;
  int log_every = 25;
  std::string dot_path;  // if set, the graph of one training step is written here (Graphviz DOT)
};

// Trains a 2-layer tanh MLP with full-batch gradient descent on the two-spirals
// problem and prints the loss as it falls. Returns the process exit code.
int run_mlp_demo(const MlpDemoOptions& options);

}  // namespace headlab::cli
