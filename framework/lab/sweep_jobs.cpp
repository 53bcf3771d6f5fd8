// sweep_jobs.cpp: the runs of a sweep as commands for another scheduler: shell quoting, one command
// line per run (bash, GNU parallel), and a SLURM array script (headlab/lab/sweep.hpp).
#include <algorithm>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/lab/sweep.hpp"

namespace headlab {

namespace fs = std::filesystem;

namespace {

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// A control character (line break, tab, escape, ...) in a word of a job command: refused, because a
// line break would cut the command in two in a one-command-a-line file, and the others are
// invisible in a terminal.
// `whose` names the word's owner in the message: "run heads=1,seed=1".
void check_job_word(const std::string& whose, const std::string& word) {
  const bool control = std::any_of(word.begin(), word.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (!control) return;
  throw ValueError(whose + ": the argument " + quote_clipped(word, 80) +
                   " holds a control character (a line break, a tab, ...), which a job file of one command a "
                   "line cannot hold; rename the directory or the file");
}

// The sweep directory's name as a SLURM job name: "headlab-" + [A-Za-z0-9_.-] ("heads", "headlab-heads").
std::string slurm_job_name(const SweepPlan& plan) {
  std::string name = plan.out_dir.filename().string();
  if (name.empty()) name = plan.out_dir.parent_path().filename().string();
  for (char& c : name)
    if (!(is_alnum(c) || c == '_' || c == '.' || c == '-')) c = '_';
  return "headlab-" + (name.empty() ? std::string("sweep") : name);
}

}  // namespace

std::string shell_quote(const std::string& word) {
  const auto safe = [](char c) {
    return is_alnum(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == '=' || c == ',' || c == ':' ||
           c == '@' || c == '%' || c == '+';
  };
  if (!word.empty() && std::all_of(word.begin(), word.end(), safe)) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string job_command(const std::string& executable, const SweepPlan& plan, const SweepRun& run, int threads,
                        const fs::path& working_dir) {
  const fs::path dir = plan.run_dir(run);
  const std::string whose = "run " + run.name;
  check_job_word(whose, executable);
  check_job_word(whose, dir.string());
  check_job_word(whose, working_dir.string());
  for (const std::string& a : run.train_args) check_job_word(whose, a);
  // mkdir first, so that a cd that fails on a node (the directory is not there) is in the run's log.
  std::string line = "mkdir -p " + shell_quote(dir.string()) + " && { ";
  if (!working_dir.empty()) line += "cd " + shell_quote(working_dir.string()) + " && ";
  line += shell_quote(executable);
  if (threads > 0) line += " --threads " + std::to_string(threads);
  line += " train";
  for (const std::string& a : run.train_args) line += " " + shell_quote(a);
  line += " --resume-or-start; } >> " + shell_quote((dir / "log.txt").string()) + " 2>&1";
  return line;
}

void check_slurm_resources(const SlurmScriptText& extra) {
  // The characters each value takes at SLURM (an #SBATCH line is not shell-quoted: nothing else may
  // stand in it). `letters`: [A-Za-z] allowed too.
  const auto check = [](const char* flag, const std::string& value, bool letters, const std::string& others,
                        const char* example) {
    const bool ok = value.size() <= 100 && std::all_of(value.begin(), value.end(), [&](char c) {
                      return (letters ? is_alnum(c) : (c >= '0' && c <= '9')) || others.find(c) != std::string::npos;
                    });
    if (!ok)
      throw ValueError(std::string(flag) + " " + quote_clipped(value, 80) + ": not a value SLURM takes there (e.g. " +
                       example + ")");
  };
  check("--time", extra.time, false, ":-", "2:00:00 or 1-00:00:00");
  check("--mem", extra.mem, false, "KMGTkmgt", "4G");
  check("--partition", extra.partition, true, "_.,-", "debug");
  check("--account", extra.account, true, "_.-", "my_group");
}

fs::path slurm_output_dir(const SweepPlan& plan) {
  const std::string dir = (plan.out_dir / "slurm").string();
  const bool plain = std::all_of(dir.begin(), dir.end(), [](char c) {
    return is_alnum(c) || c == '_' || c == '.' || c == '/' || c == '+' || c == '-';
  });
  return plain ? fs::path(dir) : fs::path();
}

std::string slurm_array_script(const SweepPlan& plan, const std::vector<std::string>& commands,
                               std::size_t max_running, const SlurmScriptText& extra) {
  if (commands.empty()) throw ValueError("a SLURM array needs at least one run; every run of the sweep is finished");
  check_job_word("the sweep directory", plan.out_dir.string());  // it stands in comment lines too
  const std::string last = std::to_string(commands.size() - 1);
  const std::string out = shell_quote(plan.out_dir.string());
  const fs::path log_dir = slurm_output_dir(plan);
  std::string s = "#!/bin/bash\n";
  const std::string writer = extra.writer.empty() ? "headlab ablate" : extra.writer;
  const std::string then = extra.then.empty() ? "headlab ablate --out " + out + " --collect" : extra.then;
  check_job_word("the command after the tasks", then);
  s += "# " + writer + ": " + std::to_string(commands.size()) + " runs of the sweep " + out +
       " as a SLURM job array, one run per task\n";
  s += "# (task i runs the i-th command of --emit-jobs; each run logs to its RUN_DIR/log.txt; a requeued\n";
  s += "# or preempted task continues its run from the checkpoint).\n";
  s += "#   sbatch THIS_FILE                        submit (any #SBATCH option can also be given here)\n";
  s += "#   SLURM_ARRAY_TASK_ID=0 bash THIS_FILE    run task 0 here, without SLURM\n";
  s += "# When the tasks are done: " + then + "\n";
  if (log_dir.empty())
    s += "# (the sweep's path cannot stand in an #SBATCH line: the task output goes to the directory sbatch runs in)\n";
  s += "#SBATCH --job-name=" + slurm_job_name(plan) + "\n";
  s += "#SBATCH --array=0-" + last + (max_running > 0 ? "%" + std::to_string(max_running) : "") + "\n";
  if (extra.cpus_per_task > 0) s += "#SBATCH --cpus-per-task=" + std::to_string(extra.cpus_per_task) + "\n";
  check_slurm_resources(extra);
  if (!extra.time.empty()) s += "#SBATCH --time=" + extra.time + "\n";
  if (!extra.mem.empty()) s += "#SBATCH --mem=" + extra.mem + "\n";
  if (!extra.partition.empty()) s += "#SBATCH --partition=" + extra.partition + "\n";
  if (!extra.account.empty()) s += "#SBATCH --account=" + extra.account + "\n";
  // "headlab ablate" -> headlab-ablate-%A_%a.out, "headlab study run" -> headlab-study-%A_%a.out
  std::string fallback = writer.substr(0, writer.find(' ', writer.find(' ') + 1));
  std::replace(fallback.begin(), fallback.end(), ' ', '-');
  s += "#SBATCH --output=" + (log_dir.empty() ? fallback : (log_dir / "").string()) +
       (log_dir.empty() ? "-%A_%a.out" : "%A_%a.out") + "\n";
  s += "if [ -z \"${SLURM_ARRAY_TASK_ID:-}\" ]; then\n";
  s += "  echo \"$0: SLURM_ARRAY_TASK_ID is not set: submit this file with sbatch, or run one task with "
       "SLURM_ARRAY_TASK_ID=0 bash $0\" >&2\n";
  s += "  exit 2\n";
  s += "fi\n";
  if (extra.cpus_per_task > 0)  // a line without --threads uses the cores SLURM gave its task
    s += "export HEADLAB_THREADS=\"${SLURM_CPUS_PER_TASK:-" + std::to_string(extra.cpus_per_task) + "}\"\n";
  s += "case \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (std::size_t i = 0; i < commands.size(); ++i) s += "  " + std::to_string(i) + ") " + commands[i] + " ;;\n";
  s += "  *) echo \"$0: SLURM_ARRAY_TASK_ID=$SLURM_ARRAY_TASK_ID is not a task of this array (0-" + last +
       ")\" >&2; exit 2 ;;\n";
  s += "esac\n";
  return s;
}

}  // namespace headlab
