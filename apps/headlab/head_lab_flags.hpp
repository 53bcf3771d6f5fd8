// head_lab_flags.hpp: `headlab heads` and `headlab prune` on the command line (CLI11), filling the
// options of head_lab_commands.hpp.
#pragma once

#include <CLI/CLI.hpp>

#include "head_lab_commands.hpp"

namespace headlab::cli {

CLI::App* add_heads_command(CLI::App& app, HeadsOptions& options);
CLI::App* add_prune_command(CLI::App& app, PruneOptions& options);

}  // namespace headlab::cli
