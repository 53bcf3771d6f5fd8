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

  headlab::cli::StatsOptions st;
  auto* stats = app.add_subcommand("stats", "parameters, forward FLOPs and KV-cache size of an attention layer");
  stats->add_option("--d-model", st.d_model, "model width D")->capture_default_str();
  stats->add_option("--heads", st.heads, "query heads h")->capture_default_str();
  stats->add_option("--kv-heads", st.kv_heads, "key/value heads (0 = heads; 1 = multi-query; else grouped-query)")
      ->capture_default_str();
  stats->add_option("--head-dim", st.head_dim, "head size d (0 = d_model / heads)")->capture_default_str();
  stats->add_option("--gate", st.gate, "sigmoid output gate after SDPA (G1)")
      ->check(CLI::IsMember({"none", "headwise", "elementwise"}))
      ->capture_default_str();
  stats->add_flag("--no-bias", st.no_bias, "projections without biases");
  stats->add_option("--window", st.window, "sliding window of W keys (0 = none)")->capture_default_str();
  stats->add_option("--sinks", st.sinks, "always-visible first tokens under the window")->capture_default_str();
  stats->add_flag("--rope", st.rope, "rotary positions on q and k");
  stats->add_option("--latent-dim", st.latent_dim, "MLA latent size d_c (0 = off)")->capture_default_str();
  stats->add_option("--rope-dim", st.rope_dim, "MLA decoupled rotary key size d_R (needs --rope)")
      ->capture_default_str();
  stats->add_option("--seq-len", st.seq_len, "tokens T of self-attention")->capture_default_str();
  stats->add_option("--layers", st.layers, "layers (multiplies the totals)")->capture_default_str();

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
    if (*stats) {
      try {
        return headlab::cli::run_stats(st);
      } catch (const headlab::ValueError& e) {
        std::cerr << "headlab stats: invalid configuration: " << e.what() << "\n";
        return 2;  // a usage error, like a bad flag
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "headlab: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
