// train_flags.hpp: the `headlab train` subcommand and every one of its flags.
//
// Header-only on purpose: CLI11 is heavy, and only a few translation units include this
// file: cli/main.cpp (the real command line), fuzz/fuzz_cli_config.cpp (which feeds random
// config files to exactly these flags, see fuzz/) and tests/apps/test_fuzz_regressions.cpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "headlab/data/text.hpp"
#include "headlab/train/options.hpp"

namespace headlab::cli {

// A check for the path flags (--train, --valid, --test, --run-dir): RUN_DIR/config.ini must
// reproduce the run, and CLI11 2.1 cannot write every string so that it reads back the same:
//   - a value that reads as a number (" 2") is written without quotes and comes back trimmed;
//   - reading cuts a line at its first '#' (a comment), even inside quotes ("data#1.tsv" -> "data).
// Such a path is refused up front, as a usage error naming it.
inline CLI::Validator config_ini_safe_path() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (!path.empty() && (is_space_char(path.front()) || is_space_char(path.back())))
          return "'" + path + "' starts or ends with whitespace (config.ini could not reproduce it)";
        if (path.find('#') != std::string::npos)
          return "'" + path + "' contains '#', which config.ini would read as the start of a comment";
        return "";
      },
      "");
}

struct TrainCommand {
  CLI::App* app = nullptr;  // the `train` subcommand
  // Call after parsing: fills the options with the chosen task's defaults (the table's columns),
  // then every flag the user gave or the config file set. Throws ValueError for a bad value.
  std::function<void()> resolve;
  // --print-config: print the resolved options as a config file and exit without training.
  std::shared_ptr<bool> print_config;
};

// " [default: 64]" or " [default: copy 64, translate 128, induction 64]", and which tasks read it.
inline std::string option_help(const OptionInfo& info) {
  std::string help = info.help;
  std::vector<std::string> per_task;
  std::string first;
  bool same = true;
  for (Task task : {Task::copy, Task::translate, Task::induction}) {
    const std::string value = info.get(TrainOptions::defaults_for(task));
    if (per_task.empty()) first = value;
    same = same && value == first;
    per_task.push_back(task_name(task) + " " + (value.empty() ? "\"\"" : value));
  }
  if (std::string(info.field) == "task") return help;
  if (same) {
    if (!first.empty()) help += " [default: " + first + "]";
  } else {
    help += " [default: " + per_task[0] + ", " + per_task[1] + ", " + per_task[2] + "]";
  }
  if (info.tasks != kAllTasks) {
    std::vector<std::string> names;
    for (Task task : {Task::copy, Task::translate, Task::induction})
      if (info.tasks & (1u << static_cast<unsigned>(task))) names.push_back(task_name(task));
    help += " (" + names[0] + (names.size() > 1 ? ", " + names[1] : "") + (names.size() > 2 ? ", " + names[2] : "") +
            " only)";
  }
  return help;
}

// Adds `train` to `app`, one flag per row of the options table (headlab/train/options.hpp), and
// `--config FILE` on `app` itself: CLI11 reads config files on the main app only, so `--config`
// belongs to it, and `fallthrough` lets `headlab train --config FILE` pass it up. Options live
// under a [train] section of the file, keyed by flag name: what RUN_DIR/config.ini holds.
// `tr` must outlive the parse; TrainCommand::resolve fills it.
inline TrainCommand add_train_command(CLI::App& app, TrainOptions& tr) {
  auto* train = app.add_subcommand("train", "train a transformer on a task: copy, translate (a TSV corpus) or "
                                            "induction (a decoder-only model); per-task defaults in brackets");
  app.set_config("--config", "", "read options from this INI/TOML file ([train] section, flag names as keys)");
  train->fallthrough();
  // What the parse writes: the text of every valued flag and the state of every boolean flag,
  // by field. std::map keeps references to its values valid while it grows.
  auto texts = std::make_shared<std::map<std::string, std::string>>();
  auto booleans = std::make_shared<std::map<std::string, bool>>();
  std::vector<std::pair<const OptionInfo*, CLI::Option*>> bound;
  for (const OptionInfo& info : train_option_table()) {
    const std::string name = std::string("--") + info.flag;
    CLI::Option* opt = nullptr;
    if (info.kind == OptionKind::flag) {
      opt = train->add_flag(name, (*booleans)[info.field], option_help(info));
    } else {
      opt = train->add_option(name, (*texts)[info.field], option_help(info));
      const OptionInfo* row = &info;
      opt->check(CLI::Validator(
          [row](std::string& value) -> std::string {
            TrainOptions scratch;
            try {
              row->set(scratch, value);
            } catch (const std::exception& e) {
              return e.what();
            }
            return "";
          },
          ""));
      opt->type_name(info.kind == OptionKind::count ? "COUNT" : info.kind == OptionKind::real ? "NUMBER" : "");
      if (info.kind == OptionKind::real) opt->check(CLI::NonNegativeNumber);
      if (info.kind == OptionKind::choice) opt->check(CLI::IsMember(info.choices));
      const std::string field = info.field;
      if (field == "train_file" || field == "valid_file" || field == "test_file" || field == "run_dir")
        opt->check(config_ini_safe_path())->type_name(field == "run_dir" ? "DIR" : "FILE");
      else if (info.kind == OptionKind::text || info.kind == OptionKind::choice)
        opt->type_name("TEXT");
    }
    bound.emplace_back(&info, opt);
  }
  TrainCommand command;
  command.app = train;
  command.print_config = std::make_shared<bool>(false);
  train->add_flag("--print-config", *command.print_config,
                  "print the options as resolved for the task, in the config.ini format, and exit without training");
  command.resolve = [bound, texts, booleans, &tr] {
    Task task = Task::copy;
    for (const auto& [info, opt] : bound)
      if (std::string(info->field) == "task" && opt->count() != 0) task = parse_task((*texts)["task"]);
    TrainOptions resolved = TrainOptions::defaults_for(task);
    for (const auto& [info, opt] : bound) {
      if (opt->count() == 0) continue;
      const std::string field = info->field;
      info->set(resolved, info->kind == OptionKind::flag ? ((*booleans)[field] ? "true" : "false") : (*texts)[field]);
    }
    tr = resolved;
  };
  return command;
}

}  // namespace headlab::cli
