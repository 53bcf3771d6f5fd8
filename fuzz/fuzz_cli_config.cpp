// fuzz_cli_config: the config file of `headlab train --config FILE` (a [train] section of
// flag=value lines, read strictly by headlab/train/config_file.hpp; every run directory holds one, config.ini).
//
// The input is written to a temporary file and parsed exactly as the command line does it:
// the same CLI11 app pieces (add_train_command from apps/headlab/train_flags.hpp: the same
// flags, checks and --config), argv = {headlab, train, --config, FILE}. Then, as main.cpp does,
// the task defaults fill the flags not given and TrainOptions::validate() runs. Checked on the way:
//   - options that validate can be stored in a checkpoint: from_text(to_text()) gives them back;
//   - the config.ini a run writes for these options (TrainOptions::to_config_ini) parses
//     again to the same options (a run directory's config.ini reproduces its run).
// Swallowed: CLI::ParseError (a usage error; main exits with status 2) and headlab::Error.
// Anything else (another exception, a sanitizer report) is a crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/train/trainer.hpp"
#include "train_flags.hpp"

namespace {

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "fuzz_cli_config: %s\n", why.c_str());
  std::abort();
}

// One temporary file per process, rewritten for every input.
const std::string& config_path() {
  static const std::string path =
      (std::filesystem::temp_directory_path() / ("headlab_fuzz_cli_" + std::to_string(::getpid()) + ".ini")).string();
  return path;
}

void write_file(const std::string& path, const std::string& bytes) {
  headlab::write_file_atomic(path, bytes, "fuzz_cli_config");
}

// Parses `headlab train --config FILE` with FILE holding `config`. Returns false on a usage
// error (what main.cpp reports with exit status 2); otherwise `options` holds the result and
// `config_ini` what main.cpp would write to RUN_DIR/config.ini.
bool parse_config(const std::string& config, headlab::TrainOptions& options, std::string& config_ini) {
  write_file(config_path(), config);
  CLI::App app{"headlab (fuzz_cli_config)"};
  app.require_subcommand(1);
  options = headlab::TrainOptions{};
  const headlab::cli::TrainCommand train = headlab::cli::add_train_command(app, options);
  const char* argv[] = {"headlab", "train", "--config", config_path().c_str()};
  try {
    app.parse(4, argv);
  } catch (const CLI::ParseError&) {
    return false;
  }
  try {
    train.resolve();
    options.validate();
  } catch (const headlab::Error&) {
    return false;
  }
  config_ini = options.to_config_ini();
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string config(reinterpret_cast<const char*>(data), size);

  headlab::TrainOptions options;
  std::string config_ini;
  if (!parse_config(config, options, config_ini)) return 0;

  // Stored in a checkpoint and read back.
  const std::string saved = options.to_text();
  try {
    if (headlab::TrainOptions::from_text(saved).to_text() != saved) fail("to_text / from_text changed:\n" + saved);
  } catch (const headlab::Error& e) {
    fail(std::string("from_text refuses what to_text wrote: ") + e.what() + "\n" + saved);
  }

  // Written to config.ini and read back with --config.
  headlab::TrainOptions again;
  std::string config_ini_again;
  if (!parse_config(config_ini, again, config_ini_again)) fail("the written config.ini is refused:\n" + config_ini);
  // (config.ini holds the stored options only: not run_dir, resume, progress or detect_anomaly.)
  if (again.to_text() != saved)
    fail("config.ini does not reproduce the options:\n" + config_ini + "\nexpected:\n" + saved + "got:\n" +
         again.to_text());
  return 0;
}
