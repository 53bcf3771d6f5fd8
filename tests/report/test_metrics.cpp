// report: metrics.jsonl. The tests write under the system temp dir and remove
// what they wrote.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/report/metrics.hpp"
#include "report_checks.hpp"
#include "test_support.hpp"

namespace test_metrics {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::kNaN;
using headlab::testing::split_lines;
using headlab::testing::TempDir;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("report: metrics are appended one JSON object a line and read back exactly") {
  TempDir dir;
  const fs::path run = dir.path / "runs" / "a";  // created by the writer
  {
    MetricsWriter writer(run);
    CHECK(writer.path() == run / "metrics.jsonl");
    MetricRow row;
    row.set("step", 120).set("loss", 0.1).set("lr", 3e-4).set("split", "train");
    writer.write(row);
    // The line is on disk before the writer is closed.
    CHECK(read_text(run / "metrics.jsonl") == "{\"step\":120,\"loss\":0.1,\"lr\":0.0003,\"split\":\"train\"}\n");
    row.set("step", 121).set("loss", kNaN);  // replaced in place
    writer.write(row);
  }
  {
    // A second writer (a resumed run) appends; it never truncates.
    MetricsWriter writer(run);
    writer.write_json(R"({"step": 122, "acc": [1, 2], "ok": true, "note": "a \"quoted\" text"})");
    CHECK_THROWS_AS(writer.write_json("[1, 2]"), ValueError);
    CHECK_THROWS_AS(writer.write_json("{\"step\": "), ValueError);
  }
  const std::vector<MetricRow> rows = read_metrics(run / "metrics.jsonl");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].number("step") == 120);
  CHECK(rows[0].number("loss") == 0.1);  // bit for bit
  CHECK(rows[0].number("lr") == 3e-4);
  CHECK(rows[0].text("split") == "train");
  CHECK(rows[0].fields[0].first == "step");  // the order is kept
  CHECK(rows[0].fields[3].first == "split");
  CHECK(rows[1].number("step") == 121);
  CHECK(std::isnan(rows[1].number("loss")));  // NaN was written as null
  CHECK(rows[1].fields[1].first == "loss");
  CHECK(rows[2].number("step") == 122);
  CHECK(rows[2].text("acc") == "[1,2]");
  CHECK(rows[2].text("ok") == "true");  // kept as its JSON text: never a number 1
  CHECK_THROWS_WITH_AS(rows[2].number("ok"), "MetricRow: 'ok' is not a number: 'true'", ValueError);
  CHECK(rows[2].text("note") == "a \"quoted\" text");
  CHECK_FALSE(rows[2].has("loss"));
  CHECK_THROWS_AS(rows[2].number("loss"), ValueError);
  CHECK_THROWS_AS(rows[2].number("note"), ValueError);
  CHECK_THROWS_AS(rows[2].text("step"), ValueError);
  CHECK(split_lines(read_text(run / "metrics.jsonl")).size() == 3);
}

TEST_CASE("report: a malformed metrics line is reported with its line number") {
  TempDir dir;
  const fs::path file = dir.path / "metrics.jsonl";
  {
    std::ofstream out(file);
    out << "{\"step\":1,\"loss\":2.5}\n\n{\"step\":2,\"loss\":2.4}\n{\"step\":3,\"lo\n";
  }
  try {
    read_metrics(file);
    FAIL("read_metrics accepted a truncated line");
  } catch (const FormatError& e) {
    const std::string what = e.what();
    CHECK(what.find("line 4") != std::string::npos);  // the blank line 2 still counts
    CHECK(what.find(file.string()) != std::string::npos);
  }
  {
    std::ofstream out(file);
    out << "{\"step\":1}\n[1,2]\n";
  }
  CHECK_THROWS_WITH_AS(read_metrics(file), doctest::Contains("line 2: expected a JSON object"), FormatError);
  CHECK_THROWS_AS(read_metrics(dir.path / "missing.jsonl"), IOError);
}

// Before: a value of 100 000 nested '[' overflowed the stack (SIGSEGV in curves and explore).
TEST_CASE("report: a metrics line nested 100 000 deep is a FormatError naming the line") {
  TempDir dir;
  const fs::path file = dir.path / "metrics.jsonl";
  {
    std::ofstream out(file);
    out << "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"x\":" << std::string(100000, '[') << std::string(100000, ']')
        << "}\n";
  }
  CHECK_THROWS_WITH_AS(read_metrics(file), doctest::Contains("line 2: JSON nested deeper than 32 levels"), FormatError);
}

TEST_CASE("report: a metrics writer that cannot open its file throws IOError naming it") {
  TempDir dir;
  const fs::path not_a_dir = dir.path / "file";
  std::ofstream(not_a_dir) << "x";
  CHECK_THROWS_WITH_AS(MetricsWriter(not_a_dir / "run"), doctest::Contains(not_a_dir.string().c_str()), IOError);
}

TEST_CASE("report: metric_number names where a text or a bad step was found") {
  MetricRow row;
  row.set("step", 12.5).set("loss", "true").set("valid_loss", 0.25);
  CHECK(row.find("loss") != nullptr);
  CHECK(row.find("missing") == nullptr);
  CHECK(metric_number(row, "valid_loss", std::string("checkpoint a: ")) == 0.25);
  CHECK_THROWS_WITH_AS(metric_number(row, "loss", std::string("checkpoint a: best_metrics: ")),
                       "checkpoint a: best_metrics: 'loss' is not a number: 'true'", FormatError);
  CHECK_THROWS_WITH_AS(metric_number(row, "step", std::size_t{2}),
                       "metrics row 3: 'step' is 12.5, not a step: a whole number from 0 to 2^53", FormatError);
  CHECK_THROWS_AS(metric_number(row, "missing", std::size_t{0}), ValueError);
}
}  // namespace test_metrics
