// head_lab_commands.hpp: `headlab heads` (heads_command.cpp) and `headlab prune` (prune_command.cpp), on
// headlab/lab/heads.hpp, free of CLI11.
#pragma once

#include <cstdint>
#include <string>

#include "headlab/train/checkpoint.hpp"
#include "headlab/train/options.hpp"
#include "window_override.hpp"

namespace headlab::cli {

struct HeadsOptions {
  std::string checkpoint;              // RUN_DIR/checkpoint.safetensors (copy, translate or induction)
  std::string out;                     // "" = <checkpoint's directory>/heads
  std::size_t probe_sequences = 64;    // repeated-random-token sequences for the scores
  std::size_t block = 0;               // their block T (0 = the model's own / largest that fits, <= 16)
  std::uint64_t seed = 1;              // of the probe
  std::string input;                   // the attention maps' input: ids ("1 4 2 9") or, translate, a sentence
  bool overwrite = false;              // replace the files of an earlier `heads` in `out`
  std::string max_memory;              // refuse a probe whose estimate is above this ("" = the available memory)
  std::string sink_queries = "all";    // the queries the sink mass averages over (parse_query_range)
  std::string text;                    // lm: probe on windows of this text instead of repeated random tokens
  WindowOverride window;               // --window / --sinks: score with another attention window
};
// Prints per layer and head the entropy, sink mass (over sink_queries, beside uniform attention's),
// previous-token and induction scores (and mean gate), per module the largest sink, attention logit
// and residual activation; writes heads.csv, attention_maps.svg and heatmap_<score>.svg into
// `out`, a run directory (headlab/train/run_dir.hpp): locked, refused if it holds them already
// unless `overwrite`. A failed write is an IOError naming the file; "wrote" follows success only.
int run_heads(const HeadsOptions& options);

struct PruneOptions {
  std::string checkpoint;
  std::string out;                 // "" = <checkpoint's directory>/prune
  double step = 0.1;               // fraction of the remaining heads pruned per step
  std::uint64_t seed = 1;          // of the random-order baseline (order k's seed derives from it)
  std::size_t random_orders = 5;   // random pruning orders averaged for the baseline (mean ± sd)
  std::size_t sequences = 0;       // copy/induction: held-out sequences (0 = 512); translate: pairs (0 = all)
  std::string data;                // translate: the evaluation TSV (default: the run's --valid file)
  bool overwrite = false;          // replace the files of an earlier `prune` in `out`
  bool single_heads = false;       // also zero each head alone: single_heads.csv
  bool importance_split = false;   // importance on a second draw of held-out sequences (not translate)
};
// Importance (Michel et al.), iterative pruning by importance and in random_orders random orders:
// prints the curve; writes importance.csv/.svg, prune.csv, prune.md, prune.svg, prune_loss.svg
// into `out`, with the same rules as run_heads; with single_heads also single_heads.csv.
int run_prune(const PruneOptions& options);

// The probe of `heads` / `explore`, `sequences` x `length` tokens, refused before it runs when its
// memory estimate (headlab/train/memory_estimate.hpp: estimate_probe_memory) is above `max_memory`
// (a size, "4G"; "" = the available memory): OutOfMemory "COMMAND --probe-sequences N needs about
// ..., lower --probe-sequences (or --max-memory)". ValueError for a --max-memory that is no size.
// The output vocabulary of a loaded model (the logits' last dimension): copy, recall and induction from
// their options, translate its target vocabulary, lm its characters or words.
std::size_t output_vocabulary(const LoadedModel& m);
void check_probe_memory(const TrainOptions& options, std::size_t vocab, std::size_t sequences, std::size_t length,
                        const std::string& max_memory, const std::string& command);

}  // namespace headlab::cli
