// circuits_command.hpp: `headlab patch` (activation patching) and `headlab attribute` (direct logit
// attribution and the logit lens) on a decoder-only checkpoint of a designed task (induction, recall),
// with clean and corrupted inputs made by rule (headlab/lab/circuit_probe.hpp; docs/circuits.md).
//
//   headlab patch --checkpoint C [--rows N] [--seed S] [--slot K] [--data TSV] [--noise] [--out DIR] [--overwrite]
//     DIR/patch_heads.csv      module,head,recovered
//     DIR/patch_residual.csv   point,position,recovered
//     DIR/patch_heads.svg, DIR/patch_residual.svg   the two as heatmaps (module x head, point x position)
//   headlab attribute --checkpoint C [--rows N] [--seed S] [--slot K] [--data TSV] [--out DIR] [--overwrite]
//     DIR/attribution.csv      component,layer,head,mean,sd (terms of the clean answer's logit; last
//                              rows: the constant term and the logit itself)
//     DIR/logit_lens.csv       point,mean_rank,top1,top_tokens
//     DIR/attribution.svg      the heads' terms, module x head
//   headlab cache --checkpoint C [--input TEXT|IDS] [--points SUBSTRING] [--out FILE] [--overwrite]
//     FILE (default CHECKPOINT_DIR/cache.safetensors): every hook point's activation on one input
//     (run_with_cache; names and shapes as docs/circuits.md's table), or those whose name holds
//     SUBSTRING; the input's tokens in the metadata. Prints each name and shape.
// DIR defaults to the checkpoint's directory + /patch or /attribute.
// Exit status: 0 written; 1 a file that cannot be read or written; 2 a usage error (a task without
// a corruption rule (lm), a post-LN model for attribute, an output that exists).
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace headlab::cli {

struct CircuitOptions {
  std::string checkpoint;
  std::size_t rows = 64;        // probe rows
  std::uint64_t seed = 1;       // the probe's generator
  std::size_t slot = 0;         // recall: which named key gets a new value
  std::string data;             // translate: pairs with gold alignments ("" = the run's --valid file)
  bool noise = false;           // patch: corrupted into clean instead of clean into corrupted
  std::string out;              // "" = <checkpoint's directory>/patch or /attribute
  bool overwrite = false;
};

struct CacheOptions {
  std::string checkpoint;
  std::string input;   // "" = the first probe sequence (as `headlab explore`)
  std::string points;  // "" = every point; else the names holding this text
  std::string out;     // "" = <checkpoint's directory>/cache.safetensors
  bool overwrite = false;
};

CLI::App* add_cache_command(CLI::App& app, CacheOptions& options);
int run_cache(const CacheOptions& options);
CLI::App* add_patch_command(CLI::App& app, CircuitOptions& options);
CLI::App* add_attribute_command(CLI::App& app, CircuitOptions& options);
int run_patch(const CircuitOptions& options);
int run_attribute(const CircuitOptions& options);

}  // namespace headlab::cli
