// composition_command.hpp: `headlab composition`, how the heads of one layer feed those of a later
// layer, from the weights alone (Q-, K- and V-composition, headlab/lab/composition.hpp).
//
//   headlab composition --checkpoint RUN/checkpoint.safetensors [--out DIR] [--overwrite]
//
// Writes DIR/composition.csv (one row per writer head and later reader head: the three scores and
// the random baseline of each) and DIR/composition_{q,k,v}.svg (writer heads x reader heads);
// prints each reader head's strongest writer per kind beside the baseline.
// Exit status: 0 written; 1 a file that cannot be read or written; 2 a usage error (an
// encoder-decoder or MLA checkpoint, an output directory that exists without --overwrite).
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace headlab::cli {

struct CompositionOptions {
  std::string checkpoint;
  std::string out;         // "" = <checkpoint's directory>/composition
  bool overwrite = false;  // replace the files of an earlier `composition` in `out`
};

CLI::App* add_composition_command(CLI::App& app, CompositionOptions& options);
int run_composition(const CompositionOptions& options);

}  // namespace headlab::cli
