// align_command.hpp: `headlab align`: word alignments read off each cross-attention head of a
// translation checkpoint, scored against a TSV's gold links (headlab/lab/alignment.hpp).
//
//   headlab align --checkpoint RUN/best.safetensors --data test.tsv [--count N]
//                 [--query-step predict|read] [--out DIR] [--overwrite]
//
// Prints one row per (layer, head) and per layer mean: precision, recall and alignment error rate
// (AER); writes alignment.csv and alignment.md into DIR (default: CHECKPOINT_DIR/align), a run
// directory that refuses earlier output unless --overwrite.
// Exit status: 0 written; 1 a file that cannot be read or written, or a TSV whose links are missing
// or malformed (FILE:LINE); 2 a usage error (not a translation checkpoint, a pair the model cannot
// take, an output that holds a run), each before the output directory is made.
#pragma once

#include <cstddef>
#include <string>

namespace CLI {
class App;
}

namespace headlab::cli {

struct AlignOptions {
  std::string checkpoint;             // a translate checkpoint
  std::string data;                   // a three-column TSV: source, target, Pharaoh links
  std::size_t count = 0;              // the first N pairs (0 = all)
  std::string query_step = "predict";  // predict: the row that predicts the word; read: the row that reads it
  std::string out;                    // "" = <checkpoint's directory>/align
  bool overwrite = false;
};

CLI::App* add_align_command(CLI::App& app, AlignOptions& options);
int run_align(const AlignOptions& options);

}  // namespace headlab::cli
