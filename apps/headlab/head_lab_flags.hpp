// head_lab_flags.hpp: `headlab heads` and `headlab prune` on the command line, filling the
// options of head_lab_commands.hpp.
#pragma once

#include "head_lab_commands.hpp"

namespace CLI {
class App;
}

namespace headlab::cli {

// Add the `heads` / `prune` subcommand to `app`, its flags writing into `options` (which must
// outlive the parse). Return the subcommand (true once parsed).
CLI::App* add_heads_command(CLI::App& app, HeadsOptions& options);
CLI::App* add_prune_command(CLI::App& app, PruneOptions& options);

}  // namespace headlab::cli
