// main.cpp: the headlab command line (CLI11 lives only in this file).
#include <cstdlib>
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "headlab/headlab.hpp"

int main(int argc, char** argv) {
  // One thread by default: the two vCPUs here behave like one core.
  if (!std::getenv("OPENBLAS_NUM_THREADS")) headlab::set_blas_threads(1);

  CLI::App app{"headlab: an autodiff framework for studying multi-head attention"};
  app.require_subcommand(1);

  headlab::cli::MlpDemoOptions mlp;
  auto* demo = app.add_subcommand("mlp-demo", "train a tiny MLP on two spirals with the autograd engine");
  demo->add_option("--seed", mlp.seed, "random seed")->capture_default_str();
  demo->add_option("--steps", mlp.steps, "gradient steps")->check(CLI::Range(1, 1000000))->capture_default_str();
  demo->add_option("--hidden", mlp.hidden, "hidden units")->check(CLI::Range(1, 4096))->capture_default_str();
  demo->add_option("--points", mlp.points, "training points")->check(CLI::Range(4, 1000000))->capture_default_str();
  demo->add_option("--lr", mlp.lr, "learning rate")->check(CLI::PositiveNumber)->capture_default_str();
  demo->add_option("--log-every", mlp.log_every, "print every N steps")->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  demo->add_option("--dot", mlp.dot_path, "write the graph of one step as Graphviz DOT to this file");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // a usage error: bad flag or value
  }
  try {
    if (*demo) return headlab::cli::run_mlp_demo(mlp);
  } catch (const std::exception& e) {
    std::cerr << "headlab: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
