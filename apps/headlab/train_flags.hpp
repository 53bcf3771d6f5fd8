// train_flags.hpp: the `headlab train` subcommand and every one of its flags.
//
// Header-only on purpose: CLI11 is heavy, and only a few translation units include this
// file: apps/headlab/main.cpp (the real command line), fuzz/fuzz_cli_config.cpp (which feeds random
// config files to exactly these flags, see fuzz/) and tests/apps/test_fuzz_regressions.cpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "headlab/train/config_file.hpp"
#include "headlab/train/options.hpp"

namespace headlab::cli {

struct TrainCommand {
  CLI::App* app = nullptr;  // the `train` subcommand
  // Call after parsing: fills the options with the chosen task's defaults (the table's columns),
  // then every key of the config file (headlab/train/config_file.hpp), then every flag the user
  // gave (a flag wins over the file). The task is the flag's, else the file's, else copy. A
  // --time-budget with no --steps (flag or file) sets steps 0: no step cap, the budget stops it.
  // Throws ValueError for a bad file or value ("FILE:LINE: steps: ..." for a value from the file).
  std::function<void()> resolve;
  // --print-config: print the resolved options as a config file and exit without training.
  std::shared_ptr<bool> print_config;
  // --config FILE as given ("" when none): run_train refuses a run's own config.ini without --run-dir.
  std::shared_ptr<std::string> config_path;
};

// " [default: 64]" or " [default: copy 64, translate 128, induction 64, lm 128]", and which tasks read it.
inline std::string option_help(const OptionInfo& info) {
  std::string help = info.help;
  std::vector<std::string> per_task;
  std::string first;
  bool same = true;
  for (Task task : all_tasks()) {
    const std::string value = info.get(TrainOptions::defaults_for(task));
    if (per_task.empty()) first = value;
    same = same && value == first;
    per_task.push_back(task_name(task) + " " + (value.empty() ? "\"\"" : value));
  }
  if (std::string(info.field) == "task") return help;
  auto joined = [](const std::vector<std::string>& items) {
    std::string s;
    for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
    return s;
  };
  if (same) {
    if (!first.empty()) help += " [default: " + first + "]";
  } else {
    help += " [default: " + joined(per_task) + "]";
  }
  if (info.tasks != kAllTasks) {
    std::vector<std::string> names;
    for (Task task : all_tasks())
      if (info.tasks & (1u << static_cast<unsigned>(task))) names.push_back(task_name(task));
    help += " (" + joined(names) + " only)";
  }
  return help;
}

// Adds `train` to `app`, one flag per row of the options table (headlab/train/options.hpp), and
// `--config FILE`. Every valued flag is checked by its row's parser (OptionInfo::set) when parsed;
// booleans take true, false, 1 or 0 (`--rope` alone is true). `tr` must outlive the parse;
// TrainCommand::resolve fills it.
inline TrainCommand add_train_command(CLI::App& app, TrainOptions& tr) {
  auto* train = app.add_subcommand("train", "train a transformer on a task: copy, translate (a TSV corpus), "
                                            "induction or recall (decoder-only models) or lm (a language model on a text); "
                                            "per-task defaults in brackets");
  train->fallthrough();
  auto config_path = std::make_shared<std::string>();
  train->add_option("--config", *config_path,
                    "read options from this file: a [train] section of flag=value lines, as RUN_DIR/config.ini "
                    "holds (flags given here win)")
      ->type_name("FILE");
  // The text of every flag as given, by field (a boolean given alone reads "true").
  // std::map keeps references to its values valid while it grows.
  auto texts = std::make_shared<std::map<std::string, std::string>>();
  std::vector<std::pair<const OptionInfo*, CLI::Option*>> bound;
  for (const OptionInfo& info : train_option_table()) {
    const std::string name = std::string("--") + info.flag;
    std::string& text = (*texts)[info.field];
    CLI::Option* opt = info.kind == OptionKind::flag ? train->add_flag(name, text, option_help(info))
                                                     : train->add_option(name, text, option_help(info));
    const OptionInfo* row = &info;
    // The validator also holds the storage the flags write into, so that it lives as long as the
    // app does even when the caller drops the returned TrainCommand.
    opt->check(CLI::Validator(
        [row, texts, config_path](std::string& value) -> std::string {
          static_cast<void>(texts);
          static_cast<void>(config_path);
          TrainOptions scratch;
          try {
            row->set(scratch, value);
          } catch (const std::exception& e) {
            return e.what();
          }
          return "";
        },
        ""));
    const std::string field = info.field;
    if (info.kind == OptionKind::count) opt->type_name("COUNT");
    else if (info.kind == OptionKind::real) opt->type_name("NUMBER");
    else if (field == "train_file" || field == "valid_file" || field == "test_file" || field == "text_file")
      opt->type_name("FILE");
    else if (field == "run_dir") opt->type_name("DIR");
    else if (field == "betas") opt->type_name("B1,B2");
    else if (info.kind != OptionKind::flag) opt->type_name("TEXT");
    if (info.kind == OptionKind::choice) opt->check(CLI::IsMember(info.choices));
    bound.emplace_back(&info, opt);
  }
  TrainCommand command;
  command.app = train;
  command.config_path = config_path;
  command.print_config = std::make_shared<bool>(false);
  train->add_flag("--print-config", *command.print_config,
                  "print the options as resolved for the task, in the config.ini format, and exit without training");
  command.resolve = [bound, texts, config_path, &tr] {
    const std::vector<ConfigEntry> file = config_path->empty() ? std::vector<ConfigEntry>{} : read_config_file(*config_path);
    auto given = [&](const OptionInfo* info) {
      for (const auto& [row, opt] : bound)
        if (row == info) return opt->count() != 0;
      return false;
    };
    auto apply = [](TrainOptions& o, const ConfigEntry& entry) {
      const OptionInfo* info = find_option_by_flag(entry.key);
      try {
        info->set(o, entry.value);
      } catch (const std::exception& e) {
        throw ValueError(entry.where + ": " + entry.key + ": " + e.what());
      }
    };
    const OptionInfo* task_row = find_option_by_field("task");
    TrainOptions resolved = TrainOptions::defaults_for(Task::copy);
    if (given(task_row)) {
      task_row->set(resolved, (*texts)["task"]);
    } else {
      for (const ConfigEntry& entry : file)
        if (entry.key == task_row->flag) apply(resolved, entry);
    }
    resolved = TrainOptions::defaults_for(resolved.task);
    const TrainOptions task_defaults = resolved;
    // An option the task does not read would be silently ignored: refuse it, naming its task. A
    // config file may hold it at the task's default (a run's own config.ini lists every option).
    const unsigned task_bit = 1u << static_cast<unsigned>(resolved.task);
    auto unused_by_task = [&](const OptionInfo& info, const std::string& where) {
      std::vector<std::string> names;
      for (Task t : all_tasks())
        if (info.tasks & (1u << static_cast<unsigned>(t))) names.push_back("--task " + task_name(t));
      std::string tasks = names.empty() ? "no task" : names[0];
      for (std::size_t i = 1; i < names.size(); ++i) tasks += (i + 1 == names.size() ? " or " : ", ") + names[i];
      return ValueError(where + "--" + info.flag + " is for " + tasks + "; this run's task is " +
                        task_name(resolved.task) + ", which does not read it");
    };
    for (const auto& [info, opt] : bound)
      if (opt->count() != 0 && !(info->tasks & task_bit)) throw unused_by_task(*info, "");
    for (const ConfigEntry& entry : file) {
      const OptionInfo* info = find_option_by_flag(entry.key);
      if (given(info) || (info->tasks & task_bit)) continue;
      TrainOptions probe = task_defaults;
      apply(probe, entry);
      if (info->get(probe) != info->get(task_defaults)) throw unused_by_task(*info, entry.where + ": ");
    }
    for (const ConfigEntry& entry : file)
      if (!given(find_option_by_flag(entry.key))) apply(resolved, entry);
    for (const auto& [info, opt] : bound)
      if (opt->count() != 0) info->set(resolved, (*texts)[info->field]);
    // A time budget without a step count is a stop of its own: the task's default step cap
    // would end the run before the budget (steps 0 = no cap).
    const OptionInfo* steps_row = find_option_by_field("steps");
    bool steps_in_file = false;
    for (const ConfigEntry& entry : file) steps_in_file = steps_in_file || entry.key == steps_row->flag;
    if (resolved.time_budget > 0 && !given(steps_row) && !steps_in_file) resolved.steps = 0;
    tr = resolved;
  };
  return command;
}

}  // namespace headlab::cli
