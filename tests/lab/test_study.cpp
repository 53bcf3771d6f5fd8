// Study recipes, their plans, and the statistics and verdicts of a report (headlab/lab/study.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "headlab/core/errors.hpp"
#include "headlab/lab/study.hpp"
#include "headlab/report/statistics.hpp"

namespace test_study {

using namespace headlab;
namespace fs = std::filesystem;

namespace {

// A copy-task recipe pinning every option (the [train] of a resolved config.ini) with `study` after it.
std::string pinned_recipe(const std::string& study) {
  return TrainOptions::defaults_for(Task::copy).to_config_ini() + "\n[study]\n" + study;
}

const std::string kStudy =
    "title = two cells\nseeds = 1,2,3\nthreads = 1\ncell = one --heads 1\ncell = two --heads 2 --train 'a b.tsv'\n"
    "metrics = acc:valid_accuracy valid_loss\ncompare = two vs one on acc | confirm > 0.1 | refute within 0.02\n"
    "quick = --steps 5\n";

StudyRun run_of(const std::string& cell, std::uint64_t seed, double acc) {
  StudyRun r;
  r.cell = cell;
  r.seed = seed;
  r.values = {{"acc", acc}, {"valid_loss", 1 - acc}};
  return r;
}

// Every stored option of `o` set to another value its row accepts (a changed default, for each).
std::pair<TrainOptions, std::size_t> perturbed(TrainOptions o) {
  std::size_t changed = 0;
  for (const OptionInfo& info : train_option_table()) {
    if (!info.stored) continue;
    const std::string before = info.get(o);
    std::vector<std::string> candidates;
    if (info.kind == OptionKind::choice) {
      for (const std::string& c : info.choices)
        if (c != before) candidates.push_back(c);
    } else if (info.kind == OptionKind::flag) {
      candidates = {before == "true" ? "false" : "true"};
    } else if (info.kind == OptionKind::text) {
      candidates = {"0.5,0.6", "perturbed.txt", "char"};
    } else {
      candidates = {"3", "7", "0.25", "0.5", "2"};
    }
    for (const std::string& c : candidates) {
      TrainOptions trial = o;
      try {
        info.set(trial, c);
      } catch (const std::exception&) {
        continue;
      }
      if (info.get(trial) != before) {
        o = trial;
        ++changed;
        break;
      }
    }
  }
  return {o, changed};
}

}  // namespace

TEST_CASE("study recipe: the [study] section read, [train] left to train's reader") {
  const StudyRecipe r = parse_study_recipe(pinned_recipe(kStudy), "r.ini");
  CHECK(r.title == "two cells");
  CHECK(r.seeds == std::vector<std::uint64_t>{1, 2, 3});
  REQUIRE(r.cells.size() == 2);
  CHECK(r.cells[1].flags == std::vector<std::string>{"--heads", "2", "--train", "a b.tsv"});
  CHECK(r.metrics == std::vector<std::string>{"acc", "valid_loss"});
  CHECK(r.metric_fields.at("acc") == "valid_accuracy");
  CHECK(r.metric_fields.at("valid_loss") == "valid_loss");
  REQUIRE(r.comparisons.size() == 1);
  CHECK(r.comparisons[0].label() == "two vs one");
  CHECK(r.comparisons[0].confirm_sign == '>');
  CHECK(r.comparisons[0].confirm_bound == 0.1);
  CHECK(r.comparisons[0].refute_within == 0.02);
  CHECK(r.quick_flags == std::vector<std::string>{"--steps", "5"});
  CHECK(unpinned_train_options(r).empty());
}

TEST_CASE("study recipe: refusals name FILE:LINE and the key") {
  struct Case {
    std::string study, message;
  };
  const std::vector<Case> cases = {
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncolour = red\n", "unknown [study] key 'colour'"},
      {"threads = 1\nmetrics = a\ncell = x\n", "has no seeds line"},
      {"seeds = 1\nthreads = 1\nmetrics = a\n", "has no cell line"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncell = x --heads 2\n", "cell x is given twice"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = a/b\n", "cell name 'a/b' must be"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x --seed 3\n", "--seed is set by the study"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x --threads=2\n", "--threads is set by the study"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x --train 'a.tsv\n", "an unclosed quote"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncompare = x vs y on a\n", "no cell is named 'y'"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncell = y\ncompare = x vs y on b\n", "'b' is not one of"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncell = y\ncompare = x vs y on a | confirm >= 2\n",
       "is not a criterion"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncell = y\ncompare = x against y\n", "expected 'A vs B on METRIC"},
      {"seeds = 1,1\nthreads = 1\nmetrics = a\ncell = x\n", "seeds:"},
      {"seeds = 1\nthreads = 0\nmetrics = a\ncell = x\n", "threads:"},
      {"seeds = 1\nseeds = 2\nthreads = 1\nmetrics = a\ncell = x\n", "seeds is given twice"},
      {"seeds = 1\nthreads = 1\nmetrics =\ncell = x\n", "the metrics line names no metric"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell\n", "expected key = value in [study], got 'cell'"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = \"\"\n", "cell name '' must be"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x --print-config\n", "--print-config is set by the study"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x -h\n", "--help is set by the study"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x --lr\n", "r.ini:76: --lr needs a value"},
      {"seeds = 1\nthreads = 1\nmetrics = a steps\ncell = x\n", "metrics: 'steps' is a column runs.csv has of its own"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x --steps --pre-ln\n", ": --steps needs a value"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\nquick = --steps\n", ": --steps needs a value"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncell = y\ncompare = x vs y on a | confirm > 1 | confirm < 2\n",
       "a second confirm criterion"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncell = y\ncompare = x vs y on a | confirm > 0.05 | refute > 0.01\n",
       "confirm > and refute > point the same way"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncell = y\ncompare = x vs y on a | confirm < 0 | refute < 1\n",
       "confirm < and refute < point the same way"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\ncell = y\ncompare = x vs y on a\ncompare = y vs x on a | confirm > 0\n",
       "compare: y and x on a are compared already at r.ini:"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\nbaseline = chance\n", ": baseline: must be a finite number, got 'chance'"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\nbaseline = nan uniform\n", "baseline: must be a finite number"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\nbaseline = 0.25\n", "baseline: name it after its value"},
      {"seeds = 1\nthreads = 1\nmetrics = a\ncell = x\nbaseline = 0.25 a\nbaseline = 0.5 b\n",
       "baseline is given twice"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.study);
    CHECK_THROWS_WITH_AS(parse_study_recipe(pinned_recipe(c.study), "r.ini"), doctest::Contains(c.message.c_str()),
                         ValueError);
  }
  // Criteria on opposite sides may share a band (a significant but negligible difference), and one
  // pair of cells may be compared on two metrics.
  const StudyRecipe band = parse_study_recipe(
      pinned_recipe("seeds = 1\nthreads = 1\nmetrics = a b\ncell = x\ncell = y\n"
                    "compare = x vs y on a | confirm < 0 | refute within 0.01\ncompare = x vs y on b | confirm > 0 | refute < 0.5\n"),
      "r.ini");
  CHECK(band.comparisons.size() == 2);
  // The [train] reader still checks its section.
  CHECK_THROWS_WITH_AS(parse_study_recipe("[train]\nstpes=5\n[study]\n" + kStudy, "r.ini"),
                       doctest::Contains("r.ini:2: unknown key 'stpes'"), ValueError);
}

TEST_CASE("study recipe: an option left out is named, and a pinned recipe does not depend on the defaults") {
  // One line removed: named as unpinned, and then a changed default does change the run.
  std::string text = pinned_recipe(kStudy);
  const std::size_t line = text.find("\nff=");
  REQUIRE(line != std::string::npos);
  text.erase(line + 1, text.find('\n', line + 1) - line);
  const StudyRecipe partial = parse_study_recipe(text, "r.ini");
  CHECK(unpinned_train_options(partial) == std::vector<std::string>{"ff"});

  const auto [changed_defaults, changed] = perturbed(TrainOptions::defaults_for(Task::copy));
  CHECK(changed >= 50);  // nearly every option has another value the "new defaults" take
  CHECK(apply_recipe_train(partial, changed_defaults).to_config_ini() !=
        apply_recipe_train(partial, TrainOptions::defaults_for(Task::copy)).to_config_ini());

  // Every committed study recipe: the same resolved options from today's defaults and from changed ones.
  const fs::path studies = fs::path(HEADLAB_FIXTURE_DIR) / ".." / ".." / "docs" / "studies";
  std::size_t recipes = 0;
  for (const auto& entry : fs::directory_iterator(studies)) {
    const fs::path path = entry.path() / "recipe.ini";
    if (!fs::exists(path)) continue;
    CAPTURE(path.string());
    const StudyRecipe recipe = read_study_recipe(path.string());
    CHECK(unpinned_train_options(recipe).empty());
    const TrainOptions today = apply_recipe_train(recipe, TrainOptions::defaults_for(Task::copy));
    for (Task task : all_tasks()) {
      const TrainOptions other = apply_recipe_train(recipe, perturbed(TrainOptions::defaults_for(task)).first);
      CHECK(other.to_config_ini() == today.to_config_ini());
    }
    ++recipes;
  }
  CHECK(recipes >= 3);
}

TEST_CASE("study plan: cells x seeds, each run's flags in order") {
  const StudyRecipe r = parse_study_recipe(pinned_recipe(kStudy), "r.ini");
  const SweepPlan plan = plan_study(r, "/tmp/study-x", false);
  REQUIRE(plan.runs.size() == 6);
  CHECK(plan.runs[0].name == "one-seed1");
  CHECK(plan.runs[5].name == "two-seed3");
  const std::vector<std::string> want = {"--config", r.path.string(), "--heads", "2", "--train", "a b.tsv", "--seed",
                                         "3", "--run-dir", "/tmp/study-x/runs/two-seed3", "--progress", "none"};
  CHECK(plan.runs[5].train_args == want);
  const SweepPlan quick = plan_study(r, "/tmp/study-x", true);
  CHECK(quick.runs.size() == 4);  // the first two seeds
  CHECK(quick.runs[0].train_args[4] == "--steps");
  CHECK(quick.runs[0].train_args[5] == "5");
  // A quick flag replaces the cell's flag of the same name (train refuses a flag given twice); the
  // cell's other flags, with or without a value, stay.
  const StudyRecipe own = parse_study_recipe(
      pinned_recipe("seeds = 1\nthreads = 1\nmetrics = a\ncell = c --steps 400 --pre-ln --heads=2 --eval-every 5\n"
                    "quick = --steps=50 --heads 1\n"),
      "r.ini");
  const std::vector<std::string> args = plan_study(own, "/tmp/study-y", true).runs[0].train_args;
  const std::vector<std::string> want_quick = {"--config", own.path.string(), "--pre-ln", "--eval-every", "5",
                                               "--steps=50", "--heads", "1"};
  CHECK(std::vector<std::string>(args.begin(), args.begin() + 8) == want_quick);
}

TEST_CASE("study report: the statistics are headlab/report's, the verdicts follow the criteria") {
  StudyRecipe r = parse_study_recipe(pinned_recipe(kStudy), "r.ini");
  // "two" clearly above "one": confirmed.
  std::vector<StudyRun> runs = {run_of("one", 1, 0.50), run_of("one", 2, 0.52), run_of("one", 3, 0.48),
                                run_of("two", 1, 0.90), run_of("two", 2, 0.93), run_of("two", 3, 0.88)};
  StudyReport report = report_study(r, runs);
  REQUIRE(report.cells.size() == 4);
  CHECK(report.cells[0].cell == "one");
  CHECK(report.cells[0].metric == "acc");
  CHECK(report.cells[0].mean == doctest::Approx(0.5));
  const SampleSummary one = summarize({0.50, 0.52, 0.48});
  CHECK(report.cells[0].ci_low == one.ci_low);
  REQUIRE(report.comparisons.size() == 1);
  const StudyComparisonResult& c = report.comparisons[0];
  const MeanDifference w = welch_test({0.90, 0.93, 0.88}, {0.50, 0.52, 0.48});
  CHECK(c.difference == w.difference);
  CHECK(c.ci_low == w.ci_low);
  CHECK(c.welch_p == w.p);
  CHECK(c.has_paired);
  CHECK(c.paired_p == paired_test({0.90, 0.93, 0.88}, {0.50, 0.52, 0.48}).p);
  CHECK(c.p_holm == w.p);  // one comparison: Holm leaves it
  CHECK(c.verdict == "confirmed");

  // The same cells, no effect: refuted (the CI inside ±0.02).
  runs = {run_of("one", 1, 0.500), run_of("one", 2, 0.501), run_of("one", 3, 0.502),
          run_of("two", 1, 0.501), run_of("two", 2, 0.500), run_of("two", 3, 0.502)};
  CHECK(report_study(r, runs).comparisons[0].verdict == "refuted");
  // The other way round, clearly: refuted.
  runs = {run_of("one", 1, 0.90), run_of("one", 2, 0.93), run_of("one", 3, 0.88),
          run_of("two", 1, 0.50), run_of("two", 2, 0.52), run_of("two", 3, 0.48)};
  CHECK(report_study(r, runs).comparisons[0].verdict == "refuted");
  // Noisy: unresolved.
  runs = {run_of("one", 1, 0.2), run_of("one", 2, 0.9), run_of("one", 3, 0.5),
          run_of("two", 1, 0.3), run_of("two", 2, 0.95), run_of("two", 3, 0.6)};
  CHECK(report_study(r, runs).comparisons[0].verdict == "unresolved");
  // One run of a cell: no test.
  runs = {run_of("one", 1, 0.5), run_of("two", 1, 0.9), run_of("two", 2, 0.9)};
  report = report_study(r, runs);
  CHECK(report.comparisons[0].verdict == "too few runs");
  CHECK(std::isnan(report.cells[0].sd));

  // Two comparisons: Holm doubles the smaller p.
  r.comparisons.push_back(r.comparisons[0]);
  r.comparisons[1].a = "one", r.comparisons[1].b = "two";
  runs = {run_of("one", 1, 0.50), run_of("one", 2, 0.52), run_of("one", 3, 0.48),
          run_of("two", 1, 0.90), run_of("two", 2, 0.93), run_of("two", 3, 0.88)};
  report = report_study(r, runs);
  CHECK(report.comparisons[0].p_holm == std::min(1.0, 2 * report.comparisons[0].welch_p));
}

TEST_CASE("study report: Holm counts every declared comparison, an untested one as p = 1") {
  StudyRecipe r = parse_study_recipe(
      pinned_recipe("seeds = 1,2,3\nthreads = 1\nmetrics = acc\ntest = paired\ncell = one\ncell = two\n"
                    "cell = three\ncompare = two vs one on acc | confirm > 0\ncompare = three vs one on acc | confirm > 0\n"),
      "r.ini");
  std::vector<StudyRun> runs = {run_of("one", 1, 0.50), run_of("one", 2, 0.52), run_of("one", 3, 0.47),
                                run_of("two", 1, 0.56), run_of("two", 2, 0.60), run_of("two", 3, 0.52),
                                run_of("three", 1, 0.9)};
  const StudyReport report = report_study(r, runs);
  REQUIRE(report.comparisons.size() == 2);
  CHECK(report.comparisons[0].test == "paired");
  CHECK(report.comparisons[0].p_holm == std::min(1.0, 2 * report.comparisons[0].paired_p));
  CHECK(report.comparisons[1].verdict == "too few runs");
  CHECK(report.comparisons[1].test.empty());
  // test = paired where the seeds differ: Welch, and the row says so.
  runs = {run_of("one", 1, 0.50), run_of("one", 2, 0.52), run_of("one", 3, 0.47),
          run_of("two", 1, 0.56), run_of("two", 2, 0.60), run_of("two", 4, 0.52)};
  CHECK(report_study(r, runs).comparisons[0].test == "welch");
  // Values whose squared deviations overflow a double (they read "not testable") or underflow it
  // (they read t = inf, p = 0: "confirmed"): tested on the values scaled, as at any other scale.
  runs = {run_of("one", 1, -1e308), run_of("one", 2, 1e308), run_of("two", 1, -1e308), run_of("two", 2, 1e308)};
  for (StudyRun& run : runs) run.values["valid_loss"] = 0;
  CHECK(report_study(r, runs).comparisons[0].verdict == "unresolved");
  CHECK(report_study(r, runs).comparisons[0].p_holm == 1);
  const double one[] = {0.50, 0.52, 0.47}, two[] = {0.56, 0.60, 0.52};
  std::vector<StudyRun> tiny;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    tiny.push_back(run_of("one", seed, one[seed - 1] * 1e-170));
    tiny.push_back(run_of("two", seed, two[seed - 1] * 1e-170));
  }
  runs = {};
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    runs.push_back(run_of("one", seed, one[seed - 1]));
    runs.push_back(run_of("two", seed, two[seed - 1]));
  }
  const StudyComparisonResult at_tiny = report_study(r, tiny).comparisons[0], at_one = report_study(r, runs).comparisons[0];
  CHECK(at_tiny.verdict == at_one.verdict);
  CHECK(at_tiny.paired_p == doctest::Approx(at_one.paired_p));
  CHECK(at_tiny.welch_p == doctest::Approx(at_one.welch_p));
}

TEST_CASE("study report: report.md escapes the text a recipe or a CSV gave it") {
  StudyRecipe r = parse_study_recipe(pinned_recipe(kStudy), "r.ini");
  r.title = "<script>x</script> | y";
  std::vector<StudyRun> runs = {run_of("one", 1, 0.1), run_of("one", 2, 0.2)};
  runs[0].facts["cpu"] = "<b>cpu</b>";
  const std::string md = study_report_markdown(r, report_study(r, runs), runs, {});
  CHECK(md.find("<script>") == std::string::npos);
  CHECK(md.find("# &lt;script&gt;x&lt;/script&gt; \\| y") != std::string::npos);
  CHECK(md.find("<b>") == std::string::npos);
  // A summary.json's text with line breaks (once a heading of its own in report.md).
  runs[0].facts["cpu"] = "AMD\n\n# Verdict: claim **confirmed**\n";
  const std::string broken = study_report_markdown(r, report_study(r, runs), runs, {});
  CHECK(broken.find("\n# Verdict") == std::string::npos);
  CHECK(broken.find("AMD  # Verdict") != std::string::npos);
}

TEST_CASE("study report: a measured runs.csv read, its faults named by line") {
  const StudyRecipe r = parse_study_recipe(pinned_recipe(kStudy), "r.ini");
  const fs::path dir = fs::temp_directory_path() / "headlab_test_study_csv";
  fs::create_directories(dir);
  const auto csv = [&](const std::string& text) {
    std::ofstream(dir / "runs.csv") << text;
    return (dir / "runs.csv").string();
  };
  const auto runs = read_study_runs_csv(r, csv("cell,seed,cpu,acc,valid_loss\none,1,\"AMD, EPYC\",0.5,0.4\n"
                                               "two,1,x,0.75,0.3\n"));
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].facts.at("cpu") == "AMD, EPYC");
  CHECK(runs[1].values.at("acc") == 0.75);
  CHECK_THROWS_WITH_AS(read_study_runs_csv(r, csv("cell,seed,acc\none,1,0.5\n")),
                       doctest::Contains("runs.csv:1: no column 'valid_loss'"), ValueError);
  CHECK_THROWS_WITH_AS(read_study_runs_csv(r, csv("cell,seed,acc,valid_loss,acc\none,1,0.5,1,0.9\n")),
                       doctest::Contains("runs.csv:1: the column 'acc' is named twice"), ValueError);
  CHECK_THROWS_WITH_AS(read_study_runs_csv(r, csv("cell,seed,acc,valid_loss\none,1,nan,1\n")),
                       doctest::Contains("runs.csv:2: acc: 'nan' is not a finite number"), ValueError);
  CHECK_THROWS_WITH_AS(read_study_runs_csv(r, csv("cell,seed,acc,valid_loss\nthree,1,1,1\n")),
                       doctest::Contains("runs.csv:2: cell 'three' is not the recipe's"), ValueError);
  CHECK_THROWS_WITH_AS(read_study_runs_csv(r, csv("cell,seed,acc,valid_loss\none,1,1,1\none,1,1,1\n")),
                       doctest::Contains("runs.csv:3: one seed 1 is given twice"), ValueError);
  CHECK_THROWS_WITH_AS(read_study_runs_csv(r, csv("cell,seed,acc,valid_loss\none,1,1\n")),
                       doctest::Contains("runs.csv:2: 3 fields, the header has 4"), ValueError);
  CHECK_THROWS_WITH_AS(read_study_runs_csv(r, csv("cell,seed,acc,valid_loss\none,9,1,1\n")),
                       doctest::Contains("runs.csv:2: seed 9 is not one of the recipe's seeds"), ValueError);
  CHECK_THROWS_WITH_AS(read_study_runs_csv(r, dir.string()), doctest::Contains("not a regular file"), ValueError);
  fs::remove_all(dir);
}

TEST_CASE("study report: the CSV files hold every number exactly and the chart every seed") {
  const StudyRecipe r = parse_study_recipe(pinned_recipe(kStudy), "r.ini");
  const std::vector<StudyRun> runs = {run_of("one", 1, 0.1), run_of("one", 2, 0.2), run_of("two", 1, 0.3),
                                      run_of("two", 2, 1.0 / 3.0)};
  const StudyReport report = report_study(r, runs);
  const std::string summary = study_summary_csv(report);
  CHECK(summary.rfind("cell,metric,n,mean,sd,ci95_low,ci95_high\n", 0) == 0);
  CHECK(summary.find("one,acc,2,0.15000000000000002,") != std::string::npos);
  CHECK(study_runs_csv(r, runs).find("two,2,,,,,,,0.3333333333333333,") != std::string::npos);
  const std::string comparisons = study_comparisons_csv(report);
  CHECK(comparisons.find("two vs one,acc,2,2,") != std::string::npos);
  const std::string svg = study_chart_svg(r, report);
  std::size_t dots = 0;
  for (std::size_t at = svg.find("class=\"seed\""); at != std::string::npos; at = svg.find("class=\"seed\"", at + 1))
    ++dots;
  CHECK(dots == 4);
  const std::string md = study_report_markdown(r, report, runs, {"one-seed3"});
  CHECK(md.find("Not finished (left out of every number above): one-seed3.") != std::string::npos);
  CHECK(md.find("| two vs one | acc |") != std::string::npos);
}

TEST_CASE("study report: a recipe's baseline is a dashed line on the chart, its label escaped") {
  const StudyRecipe plain = parse_study_recipe(pinned_recipe(kStudy), "r.ini");
  CHECK(std::isnan(plain.baseline));
  const StudyRecipe r = parse_study_recipe(pinned_recipe(kStudy + "baseline = 0.0625 chance: 1 of 16 <values>\n"), "r.ini");
  CHECK(r.baseline == 0.0625);
  CHECK(r.baseline_label == "chance: 1 of 16 <values>");
  const std::vector<StudyRun> runs = {run_of("one", 1, 0.1), run_of("one", 2, 0.2), run_of("two", 1, 0.3),
                                      run_of("two", 2, 0.4)};
  const StudyReport report = report_study(r, runs);
  const std::string svg = study_chart_svg(r, report);
  CHECK(svg.find("stroke-dasharray") != std::string::npos);
  CHECK(svg.find("chance: 1 of 16 &lt;values&gt;") != std::string::npos);
  CHECK(study_chart_svg(plain, report_study(plain, runs)).find("stroke-dasharray") == std::string::npos);
}
}  // namespace test_study
