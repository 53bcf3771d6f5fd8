// explore_command.hpp: `headlab explore`, the head explorer: one self-contained HTML page of a
// checkpoint's attention patterns, head scores, pruning curves, training curves and circuits
// (patching and attribution).
//
//   headlab explore --checkpoint RUN/checkpoint.safetensors --out report.html [--input ...]
//                   [--probe-sequences N] [--block T] [--seed S] [--dump-json FILE] [--overwrite]
//                   [--align-data TSV [--align-pair N] [--align-count N]]   (translate: gold links, AER)
//
// The data: headlab/lab/explorer.hpp; the page: headlab/report/explorer_page.hpp. The probe and
// its defaults are those of `headlab heads`, so the page's scores are the numbers of heads.csv; the
// circuits view (induction, recall and copy checkpoints) those of `headlab patch` and `headlab
// attribute` at their defaults (64 rows, seed 1), so it shows the numbers of their CSVs.
// Exit status: 0 written; 1 a file that cannot be read or written; 2 a usage error (a bad --input,
// an existing --out or --dump-json without --overwrite), before anything is written.
#pragma once

#include <cstdint>
#include <string>

#include "window_override.hpp"

namespace CLI {
class App;
}

namespace headlab::cli {

struct ExploreOptions {
  std::string checkpoint;
  std::string out;                   // the HTML file (required)
  std::string input;                 // ids "1 4 2 9"; translate: a source sentence; lm: a text. "" = the first probe sequence
  std::size_t probe_sequences = 64;  // as `headlab heads`
  std::size_t block = 0;
  std::uint64_t seed = 1;
  std::string dump_json;             // also write the page's data here (JSON)
  bool overwrite = false;            // replace an existing --out / --dump-json
  std::string max_memory;            // refuse a probe whose estimate is above this ("" = the available memory)
  // translate: a TSV with gold links (third column). Its pair number align_pair (1-based) is the
  // input (instead of --input) with its gold links drawn on the cross-attention maps, and every
  // head's AER over its first align_count pairs is in the scores table.
  std::string align_data;
  std::size_t align_pair = 1;
  std::size_t align_count = 200;
  WindowOverride window;             // --window / --sinks: patterns under another attention window
};

CLI::App* add_explore_command(CLI::App& app, ExploreOptions& options);
int run_explore(const ExploreOptions& options);

}  // namespace headlab::cli
