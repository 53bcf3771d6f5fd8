// headlab/lab/explorer.hpp: everything the head explorer page shows, gathered from a checkpoint
// and its run directory into one plain struct, and that struct as JSON.
//
//   ExplorerData d = collect_explorer_data(model, input, probe);   // the attention of one input,
//   add_run_results(d, run_dir);                                   // + prune/, metrics.jsonl
//   std::string json = explorer_json(d);                           // embedded in the page
//
// The page itself (HTML, CSS, JS) is headlab/report/explorer_page.hpp; `headlab explore` joins the
// two. The JSON, one object:
//   {"title", "task", "step", "gated", "probe": {"sequences", "block", "seed"},
//    "thresholds": {"induction": 0.4, "previous_token": 0.4, "sink_mass": 0.4},
//    "entropy_max": ln S of the probe,
//    "sites": [{"name", "kind", "layer", "heads", "queries": [tokens], "keys": [tokens],
//               "weights": [head][query][key],                     // rows sum to 1
//               "gold": [[query, key], ...]}],                       // cross: gold links, else []
//    "scores": [{"site", "kind", "layer", "head", "entropy", "sink_mass", "sink_uniform", "previous_token",
//                "induction", "gate_mean" (null when ungated), "importance" (null when none),
//                "aer" (null without gold links)}],
//    "alignment": {"pairs", "file", "query_step"} or null,
//    "prune": {"metric", "rows": [{"order", "pruned", "fraction", "loss", "metric"}]} or null,
//    "curves": [{"step", "loss", "valid_loss"}],                      // null where a row lacks one
//    "circuits": {"rule", "rows", "seed", "position" (null: each row its own), "clean_difference", "corrupted_difference",
//                 "patching": [{"site", "shares": [head]}],            // denoising, recovered share
//                 "attribution": {"logit", "constant", "max_sum_error",
//                                 "terms": [{"name", "site" (null: not a head), "head", "mean"}]} or null
//                } or null                                             // (headlab/lab/patching.hpp)
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "headlab/lab/alignment.hpp"
#include "headlab/lab/heads.hpp"

namespace headlab {

// One attention module on the explorer's input: weights (h, L queries, S keys).
struct ExplorerSite {
  std::string name, kind;  // as AttentionSite
  std::size_t layer = 0;
  std::vector<std::string> query_tokens, key_tokens;  // L and S texts ("<s>" for a start symbol)
  Array<float> weights;                               // (h, L, S)
  std::vector<std::pair<std::size_t, std::size_t>> gold;  // cross: (row, column) cells of gold links
};

// One row of prune.csv (`headlab prune`): order "importance", or "random" / "random-K" (a
// random order; several give the band mean +- sd).
struct PruneRow {
  std::string order;
  std::size_t pruned = 0;
  double fraction = 0, loss = 0, metric = 0;
};

// One point of the training curves (metrics.jsonl): NaN where the row lacks the value.
struct CurvePoint {
  double step = 0, loss = 0, valid_loss = 0;
};

// Activation patching and direct logit attribution on the task's clean and corrupted rows
// (headlab/lab/circuit_probe.hpp), for the explorer's circuits view; sites named as ExplorerSite.
struct ExplorerCircuits {
  std::string rule;
  std::size_t rows = 0, position = 0;
  bool per_row_position = false;  // translate: each row read at its own position (`position` is row 0's)
  std::uint64_t seed = 0;
  double clean_difference = 0, corrupted_difference = 0;
  std::vector<std::string> patched_sites;           // one per attention module
  std::vector<std::vector<double>> shares;          // [module][head]
  bool attributed = false;                          // pre-LN models only
  double logit = 0, constant = 0, max_sum_error = 0;
  struct Term {
    std::string name, site;  // site "" unless a head
    int head = -1;
    double mean = 0;
  };
  std::vector<Term> terms;
};

struct ExplorerData {
  std::string title;  // the run directory's name and the checkpoint file, never an absolute path
  Task task = Task::copy;
  std::size_t step = 0;
  bool gated = false;
  std::size_t probe_sequences = 0, probe_block = 0;
  std::uint64_t probe_seed = 0;
  std::vector<ExplorerSite> sites;
  std::vector<HeadRoles> scores;             // head_roles on the probe, in site order, heads within
  std::vector<std::vector<double>> importance;  // [site][head], normalised; empty: no importance.csv
  std::string prune_metric;                  // the metric column's name ("" = no prune results)
  std::vector<PruneRow> prune;
  std::vector<CurvePoint> curves;
  // Gold alignments (add_gold_alignment): AER per [site][head] (NaN: not a cross-attention site),
  // over `alignment_pairs` pairs of `alignment_file` at the decoder step `alignment_step`.
  std::vector<std::vector<double>> aer;
  std::size_t alignment_pairs = 0;
  std::string alignment_file, alignment_step;
  std::optional<ExplorerCircuits> circuits;  // add_circuits; empty: no view
};

// The input of the attention patterns: source ids (1, S) and target ids (1, L). Translate: a
// sentence and its translation; copy: the same ids twice; induction and lm (decoder-only) read
// `target` alone.
struct ExplorerInput {
  IndexArray source, target;
};

// The text of token `id` on the side `source` (translate has two vocabularies): "<pad>", "<s>",
// "</s>", "<unk>" as such; translate: the word; lm: the character; copy / induction: the id.
std::string token_text(const LoadedModel& model, std::int64_t id, bool source);

// The attention of every site on `input` (one forward, eval mode) and the head scores on `probe`
// (head_roles). probe_seed is only recorded.
ExplorerData collect_explorer_data(LoadedModel& model, const ExplorerInput& input, const Probe& probe,
                                   std::size_t probe_sequences, std::uint64_t probe_seed);

// Gold links on the cross-attention maps of the shown pair (its alignment, in the cells of the
// decoder step `step`, headlab/lab/alignment.hpp) and every head's AER over `scored` (align_heads).
// `shown` must be the pair the data's maps were computed on; `file` names the TSV in messages and
// (its file name only) on the page.
void add_gold_alignment(ExplorerData& data, LoadedModel& model, const ParallelPair& shown,
                        const std::vector<ParallelPair>& scored, QueryStep step, const std::string& file);

// Adds what `headlab prune` and `headlab train` left in run_dir: prune/importance.csv, prune/prune.csv
// and metrics.jsonl, each when present. A file that is present but malformed is a FormatError naming
// the file and line.
void add_run_results(ExplorerData& data, const std::filesystem::path& run_dir);

// Readers of the two CSV files `headlab prune` writes (FormatError naming file:line).
std::vector<PruneRow> read_prune_csv(const std::filesystem::path& path);
// The name of the metric `headlab prune` measures on the task (prune.csv's `metric` column).
std::string prune_metric_name(Task task);
// importance.csv: site,head,importance_raw,importance_normalised -> [site][head] normalised, sites
// in the order of `sites` (a site it does not name, or names twice, is a FormatError).
std::vector<std::vector<double>> read_importance_csv(const std::filesystem::path& path,
                                                     const std::vector<ExplorerSite>& sites);

// Patching (and for a pre-LN model attribution) on `rows` rows of the task's probe by rule (seed
// `seed`), as `headlab patch` and `headlab attribute` compute them. Returns "" when added, else why
// not (a task without a corruption rule, a model that does not tell the answers apart); the data
// is then left without the view.
std::string add_circuits(ExplorerData& data, LoadedModel& model, std::size_t rows = 64, std::uint64_t seed = 1);
// The explorer's site name of an attention module's hook prefix: "blocks.0.attn" ->
// "layers.0.self_attn", "decoder.1.cross_attn" -> "decoder.layers.1.multihead_attn".
std::string site_of_module(const std::string& module);

// The data as one JSON object (the layout above); NaN is written as null.
std::string explorer_json(const ExplorerData& data);

}  // namespace headlab
