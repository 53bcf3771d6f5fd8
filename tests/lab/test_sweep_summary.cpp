// sweep: the statistics and summaries behind `headlab ablate` (headlab/lab/sweep.hpp): mean and
// sd, cells, summary.csv and summary.md, the charts. The runs' summary.json files are written by
// hand into a directory under the system temp dir (removed at scope exit), and the expected
// statistics are computed in the test from the same numbers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/lab/sweep.hpp"
#include "sweep_test_files.hpp"
#include "test_support.hpp"

namespace test_sweep_summary {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::spec_of;
using headlab::testing::TempDir;
using headlab::testing::value_error;
using headlab::testing::write_file;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

// ---------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------

TEST_CASE("sweep: mean_std is the mean and the sample standard deviation") {
  const MetricStats s = mean_std({1, 2, 4});
  const double mean = (1.0 + 2.0 + 4.0) / 3.0;
  const double var = ((1 - mean) * (1 - mean) + (2 - mean) * (2 - mean) + (4 - mean) * (4 - mean)) / (3 - 1);
  CHECK(s.n == 3);
  CHECK(s.mean == doctest::Approx(mean).epsilon(1e-14));
  CHECK(s.std == doctest::Approx(std::sqrt(var)).epsilon(1e-14));
  CHECK(s.std == doctest::Approx(std::sqrt(7.0 / 3.0)).epsilon(1e-14));  // by hand: (16/9 + 1/9 + 25/9) / 2
  const MetricStats one = mean_std({2.5});
  CHECK(one.n == 1);
  CHECK(one.mean == 2.5);
  CHECK(std::isnan(one.std));
  const MetricStats none = mean_std({});
  CHECK(none.n == 0);
  CHECK(std::isnan(none.mean));
  const double v = 13358.222222222223;  // equal values: exactly that value, std exactly 0
  const MetricStats same = mean_std({v, v, v});
  CHECK(same.mean == v);
  CHECK(same.std == 0);
  CHECK(std::isnan(mean_std({1, std::nan(""), 3}).mean));  // a diverged run stays visible
}

namespace {
// heads=1,2 x gate=none,headwise x seeds 1,2,3 in `dir`, with synthetic summaries:
// valid_loss = heads + (gate == headwise) / 10 + seed / 100, parameters = 1000 heads,
// except that heads=2,gate=headwise,seed=3 has no summary (and so is missing), and
// heads=1,gate=none,seed=2 has an interrupted one.
SweepPlan synthetic_sweep(const fs::path& dir) {
  const SweepPlan plan = plan_sweep(spec_of({"heads=1,2", "gate=none,headwise"}, {1, 2, 3}), dir);
  for (const SweepRun& run : plan.runs) {
    if (run.name == "heads=2,gate=headwise,seed=3") continue;
    const int heads = std::stoi(run.values[0]);
    const double loss = heads + (run.values[1] == "headwise" ? 0.1 : 0.0) + double(run.seed) / 100;
    const bool interrupted = run.name == "heads=1,gate=none,seed=2";
    std::ostringstream json;
    json.precision(17);
    json << "{\"task\": \"copy\", \"valid_loss\": " << loss << ", \"parameters\": " << 1000 * heads
         << ", \"interrupted\": " << (interrupted ? "true" : "false") << ", \"curve\": [1, 2]}";
    write_file(plan.run_dir(run) / "summary.json", json.str());
  }
  return plan;
}
}  // namespace

TEST_CASE("sweep: summarize_sweep groups finished runs by grid cell") {
  TempDir dir;
  const SweepPlan plan = synthetic_sweep(dir.path);
  const SweepSummary summary = summarize_sweep(plan, {{"heads=2,gate=headwise,seed=3", "failed: exit 1"}});
  CHECK(summary.total_runs == 12);
  CHECK(summary.metrics == std::vector<std::string>{"valid_loss", "parameters"});  // numbers only, usual order
  REQUIRE(summary.cells.size() == 4);
  CHECK(summary.cells[1].values == std::vector<std::string>{"1", "headwise"});
  CHECK(summary.cells[1].runs.size() == 3);

  // heads=1, gate=headwise: all three seeds.
  const MetricStats full = summary.cells[1].metrics.at("valid_loss");
  const double a = 1.11, b = 1.12, c = 1.13, mean = (a + b + c) / 3;
  CHECK(full.n == 3);
  CHECK(full.mean == doctest::Approx(mean).epsilon(1e-12));
  CHECK(full.std == doctest::Approx(std::sqrt(((a - mean) * (a - mean) + (b - mean) * (b - mean) +
                                               (c - mean) * (c - mean)) / 2)).epsilon(1e-9));
  CHECK(summary.cells[1].metrics.at("parameters").mean == 1000);
  // heads=1, gate=none: seed 2 was interrupted, so n = 2 (seeds 1 and 3).
  CHECK(summary.cells[0].finished == 2);
  CHECK(summary.cells[0].metrics.at("valid_loss").n == 2);
  CHECK(summary.cells[0].metrics.at("valid_loss").mean == doctest::Approx((1.01 + 1.03) / 2));
  // heads=2, gate=headwise: seed 3 missing.
  CHECK(summary.cells[3].metrics.at("valid_loss").n == 2);

  REQUIRE(summary.unfinished.size() == 2);
  CHECK(summary.unfinished[0].name == "heads=1,gate=none,seed=2");
  CHECK(summary.unfinished[0].state == RunState::Started);
  CHECK(summary.unfinished[1].name == "heads=2,gate=headwise,seed=3");
  CHECK(summary.unfinished[1].state == RunState::NotStarted);
  CHECK(summary.unfinished[1].note == "failed: exit 1");
}

// Text with every run of spaces made one space.
std::string squeeze_spaces(const std::string& text) {
  std::string out;
  for (char c : text)
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  return out;
}

// heads=1,2,4,8 x seeds 1,2: valid_loss falls with heads, valid_accuracy rises, parameters is 5000 in
// every run (heads at a fixed d_model).
SweepPlan head_count_sweep(const fs::path& dir) {
  const SweepPlan plan = plan_sweep(spec_of({"heads=1,2,4,8"}, {1, 2}), dir);
  for (const SweepRun& run : plan.runs) {
    const int heads = std::stoi(run.values[0]);
    std::ostringstream json;
    json << "{\"valid_loss\": " << 2.0 / heads + run.seed * 0.01 << ", \"valid_accuracy\": " << 0.5 + heads * 0.05
         << ", \"parameters\": 5000}";
    write_file(plan.run_dir(run) / "summary.json", json.str());
  }
  return plan;
}

TEST_CASE("sweep: summary.md puts the chosen metric first, drops constant metrics, lines up") {
  TempDir dir;
  const SweepSummary summary = summarize_sweep(head_count_sweep(dir.path));
  const std::string md = summary_markdown(summary, "valid_accuracy");
  const auto lines = split_lines(md);
  std::vector<std::string> table;
  for (const auto& line : lines)
    if (line.rfind("|", 0) == 0) table.push_back(line);
  REQUIRE(table.size() == 6);  // header, rule, 4 cells
  CHECK(squeeze_spaces(table[0]) == "| heads | runs | valid_accuracy | valid_loss |");
  CHECK(table[0].find("parameters") == std::string::npos);
  CHECK(md.find("± 0 ") == std::string::npos);
  CHECK(md.find("The same in every run: parameters = 5000.") != std::string::npos);
  auto characters = [](const std::string& s) {  // on screen: the UTF-8 bytes that start a character ("±")
    return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
  };
  for (const auto& line : table) CHECK(characters(line) == characters(table[1]));
  // Without a chosen metric the usual order: valid_loss first.
  CHECK(squeeze_spaces(split_lines(summary_markdown(summary))[2]) == "| heads | runs | valid_loss | valid_accuracy |");
}

TEST_CASE("sweep: the chart of head counts has a log2 axis with ticks at 1, 2, 4, 8 only") {
  TempDir dir;
  const SweepSummary summary = summarize_sweep(head_count_sweep(dir.path));
  const std::string svg = summary_chart(summary, "heads", "valid_accuracy");  // y ticks 0.5 .. 0.9: no whole numbers
  // The x tick labels are the centred texts 16 px under the frame; "3", "5", "6" or "7" would be ticks
  // of a linear axis.
  for (const char* tick : {">1</text>", ">2</text>", ">4</text>", ">8</text>"}) CHECK(count(svg, tick) == 1);
  for (const char* tick : {">3</text>", ">5</text>", ">6</text>", ">7</text>"}) CHECK(count(svg, tick) == 0);
  CHECK(svg.find(">heads</text>") != std::string::npos);  // the axis title
  // heads=1,2 (a factor 2) stays linear.
  TempDir two;
  const SweepPlan plan = plan_sweep(spec_of({"heads=1,2"}, {1}), two.path);
  for (const SweepRun& run : plan.runs) write_file(plan.run_dir(run) / "summary.json", R"({"valid_loss": 1})");
  CHECK(count(summary_chart(summarize_sweep(plan), "heads", "valid_loss"), ">1.2</text>") == 1);
}

TEST_CASE("sweep: the chart of learning rates spanning a factor 30 has a log10 axis with 1-2-5 ticks") {
  TempDir dir;
  const SweepPlan plan = plan_sweep(spec_of({"lr=0.001,0.003,0.01,0.03"}, {1}), dir.path);
  for (const SweepRun& run : plan.runs) write_file(plan.run_dir(run) / "summary.json", R"({"valid_loss": 2})");
  const std::string svg = summary_chart(summarize_sweep(plan), "lr", "valid_loss");
  // Ticks 0.001, 0.002, 0.005, 0.01, 0.02, 0.05 (1-2-5 over the decades); a linear axis from 0 to
  // 0.03 would have 0.005, 0.01, ... 0.03 and squeeze 0.001 and 0.003 against its left end.
  for (const char* tick : {">0.001</text>", ">0.002</text>", ">0.01</text>", ">0.02</text>"}) CHECK(count(svg, tick) == 1);
  for (const char* tick : {">0.015</text>", ">0.025</text>", ">0.03</text>"}) CHECK(count(svg, tick) == 0);
  // lr=0.01,0.02 (a factor 2) stays linear.
  TempDir two;
  const SweepPlan close = plan_sweep(spec_of({"lr=0.01,0.02"}, {1}), two.path);
  for (const SweepRun& run : close.runs) write_file(close.run_dir(run) / "summary.json", R"({"valid_loss": 2})");
  const std::string linear = summary_chart(summarize_sweep(close), "lr", "valid_loss");
  CHECK(count(linear, ">0.012</text>") + count(linear, ">0.015</text>") == 1);  // a tick between the two
}

TEST_CASE("sweep: summary.csv has the grid keys, n, and mean and std per metric") {
  TempDir dir;
  const SweepSummary summary = summarize_sweep(synthetic_sweep(dir.path));
  const auto lines = split_lines(summary_csv(summary));
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "heads,gate,n,valid_loss_mean,valid_loss_std,parameters_mean,parameters_std");
  CHECK(lines[2].rfind("1,headwise,3,", 0) == 0);
  // Every value reads back as the statistics computed above.
  std::vector<std::string> fields;
  std::istringstream row(lines[2]);
  for (std::string f; std::getline(row, f, ',');) fields.push_back(f);
  REQUIRE(fields.size() == 7);
  const MetricStats s = summary.cells[1].metrics.at("valid_loss");
  CHECK(std::stod(fields[3]) == s.mean);
  CHECK(std::stod(fields[4]) == s.std);
  CHECK(fields[5] == "1000");
  CHECK(fields[6] == "0");

  // A cell with one finished run: its std is undefined and left empty.
  TempDir one;
  const SweepPlan plan = plan_sweep(spec_of({"heads=1,2"}, {1, 2}), one.path);
  write_file(plan.run_dir(plan.runs[0]) / "summary.json", R"({"valid_loss": 2.5})");
  const auto single = split_lines(summary_csv(summarize_sweep(plan)));
  REQUIRE(single.size() == 3);
  CHECK(single[1] == "1,1,2.5,");
  CHECK(single[2] == "2,0,,");
}

TEST_CASE("sweep: summary.md shows mean +- std (n) per metric and names the unfinished runs") {
  TempDir dir;
  const SweepSummary summary =
      summarize_sweep(synthetic_sweep(dir.path), {{"heads=2,gate=headwise,seed=3", "failed: exit 1"}});
  const std::string md = summary_markdown(summary);
  // The columns are padded to line up; with the padding squeezed out:
  const std::string squeezed = squeeze_spaces(md);
  CHECK(squeezed.find("| heads | gate | runs | valid_loss | parameters |") != std::string::npos);
  CHECK(squeezed.find("| 1 | headwise | 3/3 | 1.12 ± 0.01 | 1000 |") != std::string::npos);  // no "± 0", no "(3)"
  CHECK(squeezed.find("| 1 | none | 2/3 | 1.02 ± 0.014 | 1000 |") != std::string::npos);
  CHECK(md.find("| heads | gate     | runs |") != std::string::npos);
  CHECK(md.find("2 of 12 runs are not finished") != std::string::npos);
  CHECK(md.find("`heads=1,gate=none,seed=2` (started)") != std::string::npos);
  CHECK(md.find("`heads=2,gate=headwise,seed=3` (failed: exit 1)") != std::string::npos);
}

TEST_CASE("sweep: the chart has one polyline per combination of the other keys") {
  TempDir dir;
  const SweepSummary summary = summarize_sweep(synthetic_sweep(dir.path));
  CHECK(default_x_key(summary.grid) == "heads");
  const std::string svg = summary_chart(summary, "heads", "valid_loss");
  CHECK(count(svg, "<polyline") == 2);  // gate=none and gate=headwise, two heads values each
  CHECK(svg.find(">gate=none<") != std::string::npos);
  CHECK(svg.find(">gate=headwise<") != std::string::npos);
  CHECK(count(svg, "class=\"error-bars\"") == 2);
  // x = gate, a key that is not numeric: the values' indices, named in the label.
  const std::string by_gate = summary_chart(summary, "gate", "valid_loss");
  CHECK(count(by_gate, "<polyline") == 2);  // heads=1 and heads=2
  CHECK(by_gate.find("gate (0 = none, 1 = headwise)") != std::string::npos);
  CHECK(value_error([&] { summary_chart(summary, "layers", "valid_loss"); }).find("--x layers") !=
        std::string::npos);
}

TEST_CASE("sweep: default_x_key prefers heads, then the first numeric key") {
  CHECK(default_x_key(spec_of({"gate=none,headwise", "heads=1,2"}).grid) == "heads");
  CHECK(default_x_key(spec_of({"gate=none,headwise", "layers=1,2"}).grid) == "layers");
  CHECK(default_x_key(spec_of({"gate=none,headwise", "head_dim=compute,8"}).grid) == "gate");
}
}  // namespace test_sweep_summary
