// study_command.cpp: `headlab study run` and `headlab study report` (see study_command.hpp).
#include "study_command.hpp"

#include <filesystem>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/lab/study.hpp"
#include "headlab/lab/sweep_collect.hpp"
#include "headlab/train/run_dir.hpp"
#include "cli_values.hpp"
#include "sweep_runner.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

CLI::App* add_study_command(CLI::App& app, StudyOptions& o) {
  auto* study = app.add_subcommand("study", "a study from its pinned recipe: train its runs, then report its "
                                            "statistics and verdicts (docs/recipes.md)");
  study->require_subcommand(1);
  auto* run = study->add_subcommand("run", "train every cell x seed of a recipe (finished runs are skipped)");
  run->add_option("recipe", o.recipe, "the recipe: [train] pins every option, [study] the cells and seeds")->type_name("FILE")
      ->required();
  run->add_option("--runs", o.runs, "the directory of the runs (DIR/runs/<cell>-seed<S>)")->type_name("DIR")->required();
  run->add_option("-j,--jobs", o.jobs, "runs at the same time (each with the recipe's threads); with "
                                       "--emit-slurm, array tasks at once")
      ->check(whole_number(1, 1024))->capture_default_str();
  run->add_flag("--quick", o.quick, "add the recipe's quick flags: the whole pipeline in seconds, for tests");
  run->add_option("--emit-jobs", o.emit_jobs, "write one command per unfinished run to this file instead "
                                              "(bash FILE, parallel < FILE)")->type_name("FILE");
  run->add_option("--emit-slurm", o.emit_slurm, "write a SLURM array script (sbatch FILE) instead")->type_name("FILE");
  add_slurm_flags(run, o.slurm);
  auto* report = study->add_subcommand("report", "runs.csv, summary.csv (mean, sd, 95% CI), comparisons.csv "
                                                 "(Welch, paired, Holm) and verdicts, report.md, chart.svg");
  report->add_option("recipe", o.recipe, "the recipe")->type_name("FILE")->required();
  auto* runs = report->add_option("--runs", o.runs, "the directory `study run` trained into")->type_name("DIR");
  auto* csv = report->add_option("--from-csv", o.from_csv, "a runs.csv measured by a study's own script instead")->type_name("FILE");
  runs->excludes(csv);
  report->add_option("--out", o.out, "where the files go (default: the --runs directory; needed with --from-csv)")->type_name("DIR");
  report->add_option("--commit", o.commit, "the commit of the binary that trained, for runs.csv");
  report->add_flag("--overwrite", o.overwrite, "replace the report files of an --out folder that is neither the --runs "
                                               "directory nor the recipe's own folder");
  report->add_flag("--quick", o.quick, "report the runs of `study run --quick` (marked as a check of the "
                                       "pipeline, not a result)");
  return study;
}

namespace {

RunDirSpec study_dir_spec() {
  RunDirSpec spec;
  spec.command = "study";
  spec.dir_flag = "--runs";
  spec.existing = ExistingRun::reuse;
  return spec;
}

StudyRecipe read_pinned_recipe(const std::string& path) {
  StudyRecipe recipe = read_study_recipe(path);
  const std::vector<std::string> unpinned = unpinned_train_options(recipe);
  if (!unpinned.empty()) {
    std::string list;
    for (std::size_t i = 0; i < unpinned.size() && i < 5; ++i) list += (i ? ", " : "") + unpinned[i];
    if (unpinned.size() > 5) list += " and " + std::to_string(unpinned.size() - 5) + " more";
    throw ValueError(path + ": its [train] section does not pin " + std::to_string(unpinned.size()) +
                     " option(s) (" + list + "), so a later change of a default would change its runs; start "
                     "[train] from `headlab train --task T ... --print-config`");
  }
  return recipe;
}

// --runs DIR: a directory or nothing yet, never a file.
void check_runs_dir(const std::string& dir) {
  std::error_code ec;
  if (dir.empty()) throw ValueError("--runs: an empty directory name");
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw ValueError("--runs " + quote_clipped(dir) + ": exists and is not a directory");
}

// "" when the run directory's config.ini (if any) holds the options planned for it.
std::string planned_difference(const std::map<std::string, std::string>& planned, const SweepPlan& plan,
                               const SweepRun& run) {
  const fs::path config = plan.run_dir(run) / "config.ini";
  std::error_code ec;
  if (!fs::exists(config, ec)) return "";
  return config_difference(planned.at(run.name), config);
}

int study_run(const StudyOptions& o) {
  check_runs_dir(o.runs);
  const StudyRecipe recipe = read_pinned_recipe(o.recipe);
  const SweepPlan plan = plan_study(recipe, o.runs, o.quick);
  check_emit_file("--emit-jobs", o.emit_jobs, false, {recipe.path});
  check_emit_file("--emit-slurm", o.emit_slurm, true, {recipe.path});
  if (!o.emit_jobs.empty() && o.emit_jobs == o.emit_slurm)
    throw ValueError("--emit-jobs and --emit-slurm name the same file");
  check_slurm_flags(o.slurm, !o.emit_slurm.empty());
  // Every run's options, as `headlab train` will resolve them: a bad cell stops the study here.
  const std::map<std::string, std::string> planned = planned_configs(plan);
  const RunDir held(plan.out_dir, study_dir_spec());
  // A finished or a stopped run trained with other options (a recipe changed since, --quick or not)
  // is refused here: a resume would fail, and a finished one would be counted as this recipe's.
  refuse_runs_from_elsewhere(runs_from_elsewhere(plan, planned),
                             "(a recipe changed since, or --quick runs?) remove them to train them again, or use "
                             "another --runs");
  std::vector<std::size_t> todo;
  std::size_t finished = 0;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    if (run_state(plan.run_dir(plan.runs[i])) == RunState::Finished)
      ++finished;
    else
      todo.push_back(i);
  }
  if (finished > 0) std::cout << "skipping " << finished << " finished runs" << std::endl;
  const std::size_t busy = skip_runs_in_use(plan, todo);
  const std::string exe = executable_path();
  const std::string report = "headlab study report " + shell_quote(recipe.path.string()) + " --runs " +
                             shell_quote(plan.out_dir.string());
  if (!o.emit_jobs.empty() || !o.emit_slurm.empty()) {
    EmitFiles files{o.emit_jobs, o.emit_slurm, o.jobs, o.slurm};
    files.slurm.writer = "headlab study run";
    files.slurm.then = report;
    if (files.slurm.cpus_per_task == 0) files.slurm.cpus_per_task = recipe.threads;
    emit_run_commands(exe, plan, todo, recipe.threads, files, "study run");
    std::cout << "then: " << report << std::endl;
    return 0;
  }
  std::cout << "study: " << plan.runs.size() << " runs, " << todo.size() << " to run, " << o.jobs
            << " at a time, " << recipe.threads << " thread(s) each; logs in " << (plan.out_dir / "runs").string()
            << "/<run>/log.txt" << std::endl;
  const SweepOutcome outcome = run_all(exe, plan, todo, o.jobs, recipe.threads);
  if (outcome.stopped) {
    std::cerr << "headlab study run: interrupted; run the same command again to resume\n";
    return 130;
  }
  if (outcome.failed > 0) {
    std::cerr << "headlab study run: " << outcome.failed << " of " << todo.size()
              << " runs failed (see FAILED above); run the same command again to retry them\n";
    return 1;
  }
  if (busy > 0) {
    std::cerr << "headlab study run: " << busy << " runs are in progress in another process (busy above); "
              << "run the same command again when they end\n";
    return 1;
  }
  std::cout << "then: " << report << std::endl;
  return 0;
}

int study_report(const StudyOptions& o) {
  const StudyRecipe recipe = read_study_recipe(o.recipe);
  if (o.runs.empty() && o.from_csv.empty()) throw ValueError("give --runs DIR (or --from-csv RUNS.CSV --out DIR)");
  if (!o.from_csv.empty() && o.out.empty()) throw ValueError("--from-csv needs --out DIR (the CSV is not rewritten)");
  if (!o.from_csv.empty() && o.quick) throw ValueError("--quick is for --runs: a runs.csv says what it holds");
  const fs::path out = o.out.empty() ? fs::path(o.runs) : fs::path(o.out);
  {
    std::error_code ec;
    if (fs::exists(out, ec) && !fs::is_directory(out, ec))
      throw ValueError("--out " + quote_clipped(out.string()) + ": exists and is not a directory");
    std::vector<fs::path> inputs = {recipe.path};
    if (!o.from_csv.empty()) inputs.push_back(o.from_csv);
    std::vector<std::string> written = {"summary.csv", "comparisons.csv", "report.md", "chart.svg"};
    if (o.from_csv.empty()) written.insert(written.begin(), "runs.csv");  // --from-csv writes no runs.csv
    for (const std::string& name : written) check_output_file(out / name, inputs, "--out");
    // The report's own folders are the runs' and the recipe's; elsewhere a report.md is someone's.
    const auto same = [](const fs::path& a, const fs::path& b) {
      std::error_code e;
      return fs::equivalent(a, b, e);
    };
    const bool own = (!o.runs.empty() && same(out, o.runs)) || same(out, recipe.path.parent_path());
    if (!own && !o.overwrite)
      for (const std::string& name : written)
        if (fs::exists(out / name, ec))
          throw ValueError("--out " + quote_clipped(out.string()) + " holds " + name +
                           " already (not the --runs directory or the recipe's folder): give --overwrite to replace it");
  }
  std::vector<StudyRun> runs;
  std::vector<std::string> missing;
  if (!o.from_csv.empty()) {
    runs = read_study_runs_csv(recipe, o.from_csv);
    if (runs.empty()) throw ValueError("--from-csv " + quote_clipped(o.from_csv) + ": no run in it; nothing written");
    for (const StudyCell& cell : recipe.cells)
      for (std::uint64_t seed : recipe.seeds) {
        bool found = false;
        for (const StudyRun& r : runs) found = found || (r.cell == cell.name && r.seed == seed);
        if (!found) missing.push_back(cell.name + "-seed" + std::to_string(seed));
      }
  } else {
    std::error_code ec;
    if (!fs::is_directory(fs::path(o.runs) / "runs", ec))
      throw ValueError("--runs " + quote_clipped(o.runs) + ": no runs/ directory there (what `study run` makes)");
    const SweepPlan plan = plan_study(recipe, o.runs, o.quick);
    // Every run there must hold the options this recipe gives it (not --quick ones, not an older
    // recipe's): else its numbers would be reported as this recipe's.
    for (const SweepRun& run : plan.runs) {
      const std::string planned = check_train_arguments(run).to_config_ini();
      const std::string difference = planned_difference({{run.name, planned}}, plan, run);
      if (!difference.empty())
        throw ValueError(plan.run_dir(run).string() + " was trained with other options than the recipe gives (" +
                         difference + ")" + (o.quick ? "" : "; runs of `study run --quick`? report them with --quick"));
    }
    runs = collect_study_runs(recipe, plan, missing);
    if (runs.empty())
      throw ValueError("--runs " + quote_clipped(o.runs) + ": no finished run of this recipe; nothing written");
    for (StudyRun& r : runs) r.facts["commit"] = o.commit.empty() ? "unrecorded" : o.commit;
  }
  const StudyReport report = report_study(recipe, runs);
  std::string markdown = study_report_markdown(recipe, report, runs, missing);
  if (o.quick)
    markdown = "> **Quick form** (`study run --quick`: the recipe's quick flags, its first two seeds): a check of "
               "the pipeline, not a result.\n\n" + markdown;
  const std::string chart = study_chart_svg(recipe, report);  // drawn first: a chart it cannot draw writes nothing
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw ValueError("--out " + quote_clipped(out.string()) + ": cannot make it: " + ec.message());
  if (o.from_csv.empty()) write_file_atomic(out / "runs.csv", study_runs_csv(recipe, runs), "study report");
  write_file_atomic(out / "summary.csv", study_summary_csv(report), "study report");
  write_file_atomic(out / "comparisons.csv", study_comparisons_csv(report), "study report");
  write_file_atomic(out / "report.md", markdown, "study report");
  write_file_atomic(out / "chart.svg", chart, "study report");
  std::cout << markdown << "\nwrote " << (o.from_csv.empty() ? "runs.csv, " : "")
            << "summary.csv, comparisons.csv, report.md and chart.svg to " << out.string() << std::endl;
  return 0;
}

}  // namespace

int run_study(const CLI::App& study, const StudyOptions& o) {
  const bool run = study.get_subcommands().front()->get_name() == "run";
  try {
    return run ? study_run(o) : study_report(o);
  } catch (const ValueError& e) {
    std::cerr << "headlab study " << (run ? "run" : "report") << ": " << e.what() << "\n";
    return 2;
  }
}

}  // namespace headlab::cli
