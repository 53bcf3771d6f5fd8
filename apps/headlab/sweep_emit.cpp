// sweep_emit.cpp: the runs of a plan written for another scheduler (GNU parallel, a SLURM array),
// and the SLURM flags of `ablate` and `study run` (see sweep_runner.hpp).
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "cli_values.hpp"
#include "sweep_runner.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

void emit_run_commands(const std::string& exe, const SweepPlan& plan, const std::vector<std::size_t>& todo,
                       int threads, const EmitFiles& files, const std::string& command) {
  // Relative paths after `--` (and inside a --config file) mean what they mean here: each line
  // starts with a cd to this directory.
  const fs::path here = fs::current_path();
  std::vector<std::string> lines;
  for (std::size_t i : todo) lines.push_back(job_command(exe, plan, plan.runs[i], threads, here));
  // The script first: a value it refuses leaves neither file written.
  const std::string script =
      files.slurm_file.empty() || lines.empty() ? "" : slurm_array_script(plan, lines, files.max_running, files.slurm);
  if (!files.jobs_file.empty()) {
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    write_file_atomic(files.jobs_file, text, command + " --emit-jobs");
    std::cout << "wrote " << lines.size() << " jobs to " << files.jobs_file << " (one command a line: bash "
              << shell_quote(files.jobs_file) << " or parallel -j N < " << shell_quote(files.jobs_file)
              << "; each line can be run again: it continues its run)" << std::endl;
  }
  if (files.slurm_file.empty()) return;
  if (lines.empty()) {
    std::cout << "no run to start: no SLURM array to run; " << files.slurm_file << " not written" << std::endl;
    return;
  }
  const fs::path log_dir = slurm_output_dir(plan);
  if (!log_dir.empty()) fs::create_directories(log_dir);  // sbatch does not create the --output directory
  write_file_atomic(files.slurm_file, script, command + " --emit-slurm");
  std::cout << "wrote a SLURM array of " << lines.size() << " tasks (0-" << lines.size() - 1 << ") to "
            << files.slurm_file << ": sbatch " << shell_quote(files.slurm_file) << "; task output in "
            << (log_dir.empty() ? std::string("the directory sbatch runs in") : log_dir.string()) << std::endl;
}

void check_emit_file(const char* flag, const std::string& file, bool slurm, const std::vector<fs::path>& inputs) {
  if (file.empty()) return;
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw ValueError(std::string(flag) + " " + quote_clipped(file) + ": is a directory; give a file name");
  const auto jobs_file = [](std::string_view head) {  // a job line: mkdir -p RUN && { ... train ...; } >> LOG 2>&1
    const std::size_t end = head.find('\n');
    const std::string_view first = head.substr(0, end);
    const bool starts = first.rfind("mkdir -p ", 0) == 0 && first.find(" && { ") != std::string_view::npos;
    if (end == std::string_view::npos) return starts && head.size() == 4096;  // a line longer than what was read
    return starts && first.find(" --resume-or-start; } >> ") != std::string_view::npos && first.size() >= 5 &&
           first.substr(first.size() - 5) == " 2>&1";
  };
  const auto slurm_script = [](std::string_view head) { return head.rfind("#!/bin/bash\n# headlab ", 0) == 0; };
  if (slurm)
    check_replaces_only_own(file, slurm_script, flag, "a SLURM script headlab wrote", inputs);
  else
    check_replaces_only_own(file, jobs_file, flag, "a jobs file headlab wrote", inputs);
  const fs::path parent = fs::absolute(file, ec).parent_path();
  if (!fs::is_directory(parent, ec))
    throw ValueError(std::string(flag) + " " + quote_clipped(file) + ": the directory " +
                     quote_clipped(parent.string()) + " does not exist");
}

void add_slurm_flags(CLI::App* command, SlurmScriptText& slurm) {
  command->add_option("--cpus-per-task", slurm.cpus_per_task,
                      "with --emit-slurm: cores each array task asks for, and the threads of a run whose "
                      "line names none (default: the runs' threads: --threads, or a recipe's threads, when given, else 1)")
      ->check(whole_number(1, 1024));  // (HEADLAB_THREADS takes at most 1024)
  command->add_option("--time", slurm.time, "with --emit-slurm: each task's time limit, e.g. 2:00:00");
  command->add_option("--mem", slurm.mem, "with --emit-slurm: each task's memory, e.g. 4G");
  command->add_option("--partition", slurm.partition, "with --emit-slurm: the partition to run in");
  command->add_option("--account", slurm.account, "with --emit-slurm: the account to charge");
}

void check_slurm_flags(const SlurmScriptText& slurm, bool emit_slurm) {
  const bool any = slurm.cpus_per_task > 0 || !slurm.time.empty() || !slurm.mem.empty() ||
                   !slurm.partition.empty() || !slurm.account.empty();
  if (any && !emit_slurm)
    throw ValueError("--cpus-per-task, --time, --mem, --partition and --account go into the script of "
                     "--emit-slurm; give that too");
  check_slurm_resources(slurm);
}

}  // namespace headlab::cli
