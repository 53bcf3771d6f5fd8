// A run's figure (headlab/train/run_curves.hpp): which series each task draws from its metrics
// rows, the log loss axis, and rows it cannot use.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/train/run_curves.hpp"

namespace test_run_curves {

using namespace headlab;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

// Training rows every step, an evaluation row (with `metric`) every 5 steps, as the loop writes them.
std::vector<MetricRow> rows_of_a_run(std::size_t steps, const std::vector<std::string>& metrics) {
  std::vector<MetricRow> rows;
  for (std::size_t s = 1; s <= steps; ++s) {
    MetricRow row;
    row.set("step", s).set("loss", 3.0 / double(s)).set("lr", 1e-3);
    if (s % 5 == 0) {
      row.set("valid_loss", 3.5 / double(s));
      for (const std::string& m : metrics) row.set(m, 0.1 * double(s));
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace

TEST_CASE("run curves: training and validation loss on one panel, the task's metric on its own") {
  struct Case {
    Task task;
    std::vector<std::string> keys;
    std::vector<std::string> legends;  // beyond "training loss" and "validation loss"
    std::size_t panels;
  };
  const std::vector<Case> cases = {
      {Task::translate, {"valid_bleu"}, {"validation BLEU"}, 2},
      {Task::copy, {"valid_exact_match"}, {"exact match"}, 2},
      {Task::induction,
       {"repeated_loss", "first_half_loss", "repeated_accuracy"},
       {"repeated half", "first half", "repeated-half accuracy"},
       3}};
  for (const Case& c : cases) {
    CAPTURE(task_name(c.task));
    const RunCurves curves = run_curves(rows_of_a_run(20, c.keys), c.task);
    const std::string& svg = curves.svg;
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(count(svg, "class=\"legend\"") == c.panels);
    CHECK(count(svg, "<polyline") == 2 + c.keys.size());
    CHECK(count(svg, ">training loss</text>") == 1);
    CHECK(count(svg, ">validation loss</text>") == 1);
    for (const std::string& legend : c.legends) CHECK(count(svg, ">" + legend + "</text>") == 1);
    // A dot per point (series of at most 50 points): 20 steps, 4 evaluations per evaluated series.
    CHECK(count(svg, "<circle") == 20 + 4 * (1 + c.keys.size()));
    CHECK(svg.find(task_name(c.task) + ": loss and ") != std::string::npos);
    CHECK(curves.skipped_on_log == 0);
  }
}

TEST_CASE("run curves: --log-y puts the loss panels on a log axis and skips losses <= 0") {
  std::vector<MetricRow> rows = rows_of_a_run(20, {"valid_bleu"});
  const std::string linear = run_curves(rows, Task::translate).svg;
  CurvesOptions log;
  log.log_y = true;
  const RunCurves logged = run_curves(rows, Task::translate, log);
  CHECK(logged.svg != linear);
  // Loss from 3 down to 0.15: 1-2-5 ticks of a log axis, which the linear one (0 to 3.5) lacks.
  CHECK(logged.svg.find(">0.1</text>") != std::string::npos);
  CHECK(logged.svg.find(">0.2</text>") != std::string::npos);
  CHECK(linear.find(">0.1</text>") == std::string::npos);
  // The BLEU panel stays linear: its ticks from 0 to 2 are in both.
  CHECK(linear.find(">2.0</text>") != std::string::npos);
  CHECK(logged.svg.find(">2.0</text>") != std::string::npos);

  rows[6].set("loss", 0.0);
  rows[9].set("valid_loss", -1.0);
  const RunCurves skipped = run_curves(rows, Task::translate, log);
  CHECK(skipped.skipped_on_log == 2);
  CHECK(skipped.svg.find("panel 0 series 0 \"training loss\": 1 of 20 points skipped") != std::string::npos);
  CHECK(skipped.svg.find("panel 0 series 1 \"validation loss\": 1 of 4 points skipped") != std::string::npos);
  CHECK(run_curves(rows, Task::translate).skipped_on_log == 0);  // a linear axis draws them
}

TEST_CASE("run curves: no evaluation yet, rows without a step, and a text where a number belongs") {
  // Interrupted before its first evaluation: the loss line, and "no data" in the metric panel.
  const std::string early = run_curves(rows_of_a_run(4, {"valid_exact_match"}), Task::copy).svg;
  CHECK(count(early, "<polyline") == 1);
  CHECK(count(early, "no data") == 1);

  std::vector<MetricRow> rows = rows_of_a_run(10, {"valid_exact_match"});
  MetricRow stepless;
  stepless.set("loss", 9.0);
  rows.push_back(stepless);
  CHECK(run_curves(rows, Task::copy).svg.find("1 of") == std::string::npos);  // left out, not a skipped point

  rows[2].set("loss", "high");
  CHECK_THROWS_WITH_AS(run_curves(rows, Task::copy), "metrics row 3: 'loss' is not a number: 'high'", FormatError);
}

// Before: "loss": true was read as a loss of 1, and a step of 1e300 or 2.5 was drawn.
TEST_CASE("run curves: a true loss and a step no run reaches are FormatErrors naming the row") {
  std::vector<MetricRow> rows = rows_of_a_run(4, {"valid_exact_match"});
  rows[1] = metric_row_from_json_line(R"({"step": 2, "loss": true})", "");
  CHECK_THROWS_WITH_AS(run_curves(rows, Task::copy), "metrics row 2: 'loss' is not a number: 'true'", FormatError);
  for (const char* step : {"1e300", "2.5", "-1"}) {
    CAPTURE(step);
    rows = rows_of_a_run(4, {"valid_exact_match"});
    rows[3] = metric_row_from_json_line(std::string(R"({"loss": 1, "step": )") + step + "}", "");
    CHECK_THROWS_WITH_AS(run_curves(rows, Task::copy),
                         doctest::Contains("metrics row 4: 'step' is "), FormatError);
  }
  rows = rows_of_a_run(4, {"valid_exact_match"});
  rows[3] = metric_row_from_json_line(R"({"loss": 1, "step": 9007199254740992})", "");  // 2^53: the largest step
  CHECK(run_curves(rows, Task::copy).svg.find("<polyline") != std::string::npos);
}
}  // namespace test_run_curves
