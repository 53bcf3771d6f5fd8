// headlab/lab/study.hpp: a study as a pinned recipe, its runs, and its statistics.
//
// A recipe is one INI file that `headlab train --config` reads too: a [train] section pinning every
// option of `headlab train` (so that a later change of a default changes none of its runs), and a
// [study] section that says what to run and what would settle the claim:
//
//   [study]
//   title    = Induction heads need two layers          the claim, for the report
//   seeds    = 1,2,3,4,5                                every cell runs every seed
//   threads  = 1                                        threads of every run (the numbers depend on it)
//   cell     = 2-layer --layers 2                       a name ([A-Za-z0-9_.-]) and its train flags;
//   cell     = 1-layer --layers 1                       repeatable; words split at spaces, "..." or '...'
//                                                       keep a value with spaces in one word
//   metrics  = accuracy:valid_accuracy valid_loss        NAME[:FIELD]: reported as NAME, read from the
//                                                       summary.json field FIELD (default NAME) or
//                                                       the runs.csv column NAME
//   compare  = 2-layer vs 1-layer on valid_accuracy | confirm > 0.2 | refute within 0.05
//   test     = welch                                    or paired: the test the verdicts use
//   confirms = text                                     what would confirm the claim, in words
//   refutes  = text                                     what would refute it, in words
//   baseline = 0.0625 chance: 1 of 16 values             a dashed line at VALUE on the chart, named
//                                                       LABEL (chance, uniform attention, a count
//                                                       n-gram), on the chart's metric
//   quick    = --steps 20 --eval-every 10               flags added by `study run --quick` (which runs
//                                                       the first two seeds): the whole pipeline in
//                                                       seconds, for tests
//
// A comparison's difference is mean(A) - mean(B). Its verdict, from the 95% CI of the difference
// and the Holm-adjusted p over all comparisons of the recipe (alpha 0.05):
//   confirmed  "confirm > X": p_holm < 0.05 and ci_low > X   ("confirm < X": ci_high < X)
//   refuted    "refute within R": -R < ci_low and ci_high < R (no effect that matters); "refute > X":
//              ci_low > X ("refute < X": ci_high < X); or, with a confirm criterion, the difference
//              goes the other way: p_holm < 0.05 and the CI entirely on the other side of 0
//   unresolved otherwise (also when no criterion is given).
//
// A run of cell C with seed S is `headlab --threads T train --config RECIPE <C's flags> [quick flags]
// --seed S --run-dir RUNS/runs/C-seedS --progress none`.
//
// Errors: ValueError "FILE:LINE: why" for a [study] line, naming the key; IOError for files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "headlab/lab/sweep.hpp"
#include "headlab/train/config_file.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

struct StudyCell {
  std::string name;                // "2-layer"
  std::vector<std::string> flags;  // {"--layers", "2"}
};

struct StudyComparison {
  std::string a, b, metric;  // mean(a) - mean(b) on metric
  char confirm_sign = 0;     // '>' or '<' (0: no confirm criterion)
  double confirm_bound = 0;  // X of "confirm > X"
  double refute_within = -1; // R of "refute within R"; < 0: none
  char refute_sign = 0;      // '>' or '<' of "refute > X" (0: none)
  double refute_bound = 0;
  std::string text;          // the line as written, for the report
  std::string label() const { return a + " vs " + b; }
};

struct StudyRecipe {
  std::filesystem::path path;  // absolute
  std::string title, confirms, refutes;
  std::vector<std::uint64_t> seeds;
  int threads = 1;
  std::vector<StudyCell> cells;
  std::vector<std::string> metrics;                    // the names, in order
  std::map<std::string, std::string> metric_fields;    // name -> its summary.json field
  std::vector<StudyComparison> comparisons;
  bool paired = false;  // test = paired
  double baseline = std::numeric_limits<double>::quiet_NaN();  // NaN: no baseline line
  std::string baseline_label;
  std::vector<std::string> quick_flags;
  std::vector<ConfigEntry> train;  // the [train] section
};

// Reads and checks a recipe: the [train] section as `train --config` reads it, and the [study]
// section above. Refused (FILE:LINE): an unknown [study] key, a required one missing (seeds,
// threads, cell, metrics), a cell name twice or not [A-Za-z0-9_.-], a cell flag the study sets
// itself (--seed, --run-dir, --resume, --overwrite, --progress, --config, --threads), an unclosed
// quote, a comparison naming an unknown cell or metric or the same cell twice, a bad criterion.
StudyRecipe read_study_recipe(const std::string& path);
StudyRecipe parse_study_recipe(const std::string& text, const std::string& path);

// "--train 'my corpus.tsv' --heads 2" -> {"--train", "my corpus.tsv", "--heads", "2"}: words split
// at spaces and tabs; a word in "..." or '...' is taken as is (no escapes). `where` prefixes the
// ValueError for an unclosed quote.
std::vector<std::string> split_flag_words(const std::string& text, const std::string& where);

// The train options the [train] section does not pin (their flag names): empty for a recipe whose
// runs no default can change. Options no task reads (run-dir, resume, ...) are not asked for.
std::vector<std::string> unpinned_train_options(const StudyRecipe& recipe);
// `start` with every [train] entry applied, as `train --config` applies them (ValueError naming
// FILE:LINE for a bad value). When the recipe pins every option, the result does not depend on
// `start`: that is what makes a recipe immune to a changed default.
TrainOptions apply_recipe_train(const StudyRecipe& recipe, TrainOptions start);

// The runs: cells (in order) x seeds, named "<cell>-seed<S>", each with the arguments above, in
// runs_dir/runs/<name> (runs_dir made absolute). `quick`: the quick flags added (replacing a cell's
// flag of the same name: a quick --steps 50 wins over a cell's --steps 400) and only the first two
// seeds run (the statistics still have two values a cell).
SweepPlan plan_study(const StudyRecipe& recipe, const std::filesystem::path& runs_dir, bool quick);

// ---------------------------------------------------------------------------
// Results (study_report.cpp)
// ---------------------------------------------------------------------------

struct StudyRun {
  std::string cell;
  std::uint64_t seed = 0;
  std::map<std::string, double> values;      // the recipe's metrics, and steps / train_seconds when known
  std::map<std::string, std::string> facts;  // cpu, threads, commit, flags
};

// From the finished runs of a plan: each run's summary.json (its numbers, and "cpu"), one row per
// finished run in plan order; `missing` gets the names of the runs not finished (with why, when a
// summary.json is there but damaged: "h2-seed2 (its summary.json is not a JSON object)"). ValueError naming
// the run and the metric when a finished run lacks a metric.
std::vector<StudyRun> collect_study_runs(const StudyRecipe& recipe, const SweepPlan& plan,
                                         std::vector<std::string>& missing);
// From a runs.csv written by a study's own measuring script: the columns "cell", "seed" and each
// metric (others kept as facts). ValueError "FILE:LINE: why" for a malformed CSV, a missing
// column, a cell the recipe does not have, a value that is not a number.
std::vector<StudyRun> read_study_runs_csv(const StudyRecipe& recipe, const std::string& path);

struct StudyCellSummary {
  std::string cell, metric;
  std::size_t n = 0;
  double mean = 0, sd = 0, ci_low = 0, ci_high = 0;  // NaN where n < 2 leaves them undefined
  std::vector<double> values;                        // every seed's value, for the chart
};

struct StudyComparisonResult {
  StudyComparison comparison;
  std::size_t n_a = 0, n_b = 0;
  double difference = 0, ci_low = 0, ci_high = 0, welch_t = 0, df = 0, welch_p = 0;
  bool has_paired = false;  // both cells hold the same seeds
  double paired_ci_low = 0, paired_ci_high = 0, paired_t = 0, paired_p = 0;
  std::string test;         // the test of p_holm and the verdict: "welch", or "paired" where asked and the
                            // seeds match; "" when the comparison could not be tested
  double p_holm = 0;        // Holm over every declared comparison (an untested one counts as p = 1)
  std::string verdict;      // confirmed, refuted or unresolved (see above); "too few runs" when n < 2;
                            // "not testable (why)" when the values over- or underflow the variances
};

struct StudyReport {
  std::vector<StudyCellSummary> cells;  // cells x metrics, in recipe order
  std::vector<StudyComparisonResult> comparisons;
};
StudyReport report_study(const StudyRecipe& recipe, const std::vector<StudyRun>& runs);

// The files of a report: runs.csv (cell, seed, the facts and values), summary.csv (cell, metric, n,
// mean, sd, ci95_low, ci95_high), comparisons.csv (one row per comparison: the difference, its
// CI, Welch's t, df and p, the paired CI, t and p where the seeds match, the test used, p_holm and
// the verdict),
// report.md (the claim, the criteria, the tables) and chart.svg (the first compared metric, or the
// first metric: every seed a dot, the mean and its 95% CI). Numbers are written so that they read
// back exactly.
std::string study_runs_csv(const StudyRecipe& recipe, const std::vector<StudyRun>& runs);
std::string study_summary_csv(const StudyReport& report);
std::string study_comparisons_csv(const StudyReport& report);
std::string study_report_markdown(const StudyRecipe& recipe, const StudyReport& report,
                                  const std::vector<StudyRun>& runs, const std::vector<std::string>& missing);
std::string study_chart_svg(const StudyRecipe& recipe, const StudyReport& report);

}  // namespace headlab
