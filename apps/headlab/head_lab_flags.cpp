// head_lab_flags.cpp: the flags of `headlab heads` and `headlab prune` (the commands themselves:
// heads_command.cpp, prune_command.cpp, free of CLI11).
#include "head_lab_flags.hpp"

#include <CLI/CLI.hpp>

#include "cli_values.hpp"

namespace headlab::cli {

CLI::App* add_heads_command(CLI::App& app, HeadsOptions& options) {
  CLI::App* heads = app.add_subcommand("heads", "head roles of a checkpoint: entropy, sink, previous-token, induction, "
                                                "gate; attention maps and heatmaps as SVG");
  heads->add_option("--checkpoint", options.checkpoint, "a checkpoint of the copy, translate, induction, lm or recall task")->type_name("FILE")
      ->required();
  heads->add_option("--out", options.out, "output directory (default: CHECKPOINT_DIR/heads)")->type_name("DIR");
  heads->add_option("--probe-sequences", options.probe_sequences, "repeated-random-token sequences scored")
      ->check(whole_number(1, 100000))->capture_default_str();
  auto* heads_block = heads->add_option("--block", options.block, "their repeated block T (0 = the model's own, "
                                                                  "or the largest that fits, at most 16)")
      ->check(whole_number(0, 1000000000))->capture_default_str();
  heads->add_option("--text", options.text, "lm checkpoints: probe on --probe-sequences windows of this text "
                                            "(the model's context each, seeded starts) instead of repeated random "
                                            "tokens; adds the delimiter score (space, newline)")->type_name("FILE")
      ->excludes(heads_block);
  heads->add_option("--seed", options.seed, "seed of the probe")->check(whole_number())->capture_default_str();
  heads->add_option("--input", options.input, "input of the attention maps: token ids \"1 4 2 9\" or, for "
                                              "translate, a source sentence, for lm a text (default: the first probe sequence)");
  heads->add_flag("--overwrite", options.overwrite, "replace the files of an earlier heads in the output directory");
  heads->add_option("--max-memory", options.max_memory, "refuse a probe whose memory estimate is above this: 4G, "
                                                        "512M or bytes (default: the available memory)");
  heads->add_option("--sink-queries", options.sink_queries,
                    "the queries the sink mass averages over: all (i >= 1), first-half (1..T: no earlier copy), "
                    "second-half, or A:B (positions A to B - 1)")
      ->capture_default_str();
  add_window_flags(heads, options.window);
  return heads;
}

CLI::App* add_prune_command(CLI::App& app, PruneOptions& options) {
  CLI::App* prune = app.add_subcommand("prune", "head importance (Michel et al. 2019) and pruning curves, against a "
                                                "random pruning order");
  prune->add_option("--checkpoint", options.checkpoint, "a checkpoint of the copy, translate, induction or recall task")->type_name("FILE")
      ->required();
  prune->add_option("--out", options.out, "output directory (default: CHECKPOINT_DIR/prune)")->type_name("DIR");
  prune->add_option("--step", options.step, "fraction of the remaining heads pruned per step")
      ->check(real_number(0.001, 1.0))->capture_default_str();
  prune->add_option("--seed", options.seed, "seed of the random pruning orders (each order's seed derives from it)")
      ->check(whole_number())->capture_default_str();
  prune->add_option("--random-orders", options.random_orders,
                    "random pruning orders of the baseline, drawn as mean ± sd")
      ->check(whole_number(1, 100))->capture_default_str();
  prune->add_option("--sequences", options.sequences,
                    "copy/induction: held-out sequences (0 = 512); translate: evaluation pairs (0 = all)")
      ->check(whole_number(0, 1000000000))->capture_default_str();
  prune->add_option("--data", options.data, "translate: evaluation TSV (default: the run's --valid file)")->type_name("FILE");
  prune->add_flag("--overwrite", options.overwrite, "replace the files of an earlier prune in the output directory");
  prune->add_flag("--importance-split", options.importance_split,
                  "copy/induction/recall: estimate importance on a second draw of held-out sequences, score the "
                  "pruning on the run's own (the order is not fitted to the sequences that judge it)");
  prune->add_flag("--single-heads", options.single_heads,
                  "also zero each head alone and write single_heads.csv (its loss, metric and drop from the full model)");
  return prune;
}

}  // namespace headlab::cli
