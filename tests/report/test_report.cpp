// report: the progress line, metrics.jsonl and SVG charts. The progress tests
// use a fake clock, so the ETA and the throttling are exact; the metrics tests
// write under the system temp dir and remove what they wrote; the SVG tests
// check the document with a small tag-balance parser (no XML library here).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/report/report.hpp"
#include "test_support.hpp"

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::TempDir;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + what.size())) ++n;
  return n;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A simple well-formedness check: every <tag> is closed by </tag> in order
// (or is self-closing <tag/>), comments are skipped, and every '&' starts one
// of the five XML entities. Returns "" when fine, else what went wrong.
std::string xml_problem(const std::string& doc) {
  std::vector<std::string> open;
  for (std::size_t i = 0; (i = doc.find('<', i)) != std::string::npos;) {
    if (doc.compare(i, 4, "<!--") == 0) {
      const std::size_t end = doc.find("-->", i + 4);
      if (end == std::string::npos) return "unterminated comment";
      if (doc.substr(i + 4, end - i - 4).find("--") != std::string::npos) return "'--' inside a comment";
      i = end + 3;
      continue;
    }
    const std::size_t end = doc.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    const std::string tag = doc.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag: " + tag;
    if (!tag.empty() && tag.back() == '/') {
      // self-closing
    } else if (!tag.empty() && tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "unbalanced </" + tag.substr(1) + ">";
      open.pop_back();
    } else {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end + 1;
  }
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  for (std::size_t i = 0; (i = doc.find('&', i)) != std::string::npos; ++i) {
    bool entity = false;
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) entity = entity || doc.compare(i, std::strlen(e), e) == 0;
    if (!entity) return "a bare '&'";
  }
  return "";
}

// The numbers in every <polyline points="x,y x,y ..."> of a document.
std::vector<std::vector<double>> polyline_numbers(const std::string& doc) {
  std::vector<std::vector<double>> all;
  for (std::size_t p = doc.find("<polyline"); p != std::string::npos; p = doc.find("<polyline", p + 1)) {
    const std::size_t a = doc.find("points=\"", p) + 8, b = doc.find('"', a);
    std::string points = doc.substr(a, b - a);
    for (char& c : points)
      if (c == ',') c = ' ';
    std::istringstream in(points);
    std::vector<double> numbers;
    for (double v; in >> v;) numbers.push_back(v);
    all.push_back(numbers);
  }
  return all;
}

// A fake clock the tests move by hand.
struct FakeClock {
  double now = 1000.0;
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

}  // namespace

// ---------------------------------------------------------------------------
// ProgressReporter
// ---------------------------------------------------------------------------

TEST_CASE("report: duration and rate formats") {
  CHECK(ProgressReporter::format_duration(0) == "0:00");
  CHECK(ProgressReporter::format_duration(42) == "0:42");
  CHECK(ProgressReporter::format_duration(61.4) == "1:01");
  CHECK(ProgressReporter::format_duration(3725) == "1:02:05");
  CHECK(ProgressReporter::format_duration(kNaN) == "?");
  CHECK(ProgressReporter::format_rate(950) == "950");
  CHECK(ProgressReporter::format_rate(12345) == "12.3k");
  CHECK(ProgressReporter::format_rate(999990) == "1.0M");
  CHECK(ProgressReporter::format_rate(2.5e6) == "2.5M");
}

TEST_CASE("report: progress lines mode prints about 20 lines with a correct ETA") {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions options;
  options.mode = ProgressMode::Lines;
  options.clock = clock.fn();
  {
    ProgressReporter progress(100, out, options);
    CHECK_FALSE(progress.bar());
    CHECK(progress.every() == 5);  // ceil(100 / 20)
    for (int step = 1; step <= 100; ++step) {
      clock.now += 0.5;  // half a second per step
      progress.update(step, 1.234, 1e-3, 12345);
    }
    progress.finish();
  }
  const auto lines = split_lines(out.str());
  REQUIRE(lines.size() == 20);
  CHECK(out.str().find('\r') == std::string::npos);
  // Step 50: 25 s elapsed for 50 steps, so 50 more steps take 25 s.
  CHECK(lines[9] == "step 50/100  loss 1.234  lr 1.0e-03  12.3k tok/s  elapsed 0:25  ETA 0:25");
  // Step 10: 5 s for 10 steps, 90 left -> 45 s.
  CHECK(lines[1].find("ETA 0:45") != std::string::npos);
  CHECK(lines.back() == "step 100/100  loss 1.234  lr 1.0e-03  12.3k tok/s  elapsed 0:50  ETA 0:00");
}

TEST_CASE("report: progress lines mode intervals, early stop and resumed runs") {
  FakeClock clock;
  ProgressOptions options;
  options.mode = ProgressMode::Lines;
  options.clock = clock.fn();

  SUBCASE("45 steps: every 3 -> 15 lines, no tok/s when not measured") {
    std::ostringstream out;
    ProgressReporter progress(45, out, options);
    for (int step = 1; step <= 45; ++step) progress.update(step, 0.5, 0.01);
    progress.finish();
    const auto lines = split_lines(out.str());
    CHECK(lines.size() == 15);
    CHECK(out.str().find("tok/s") == std::string::npos);
  }
  SUBCASE("an explicit interval that does not divide the total still prints the last step") {
    std::ostringstream out;
    options.every = 7;
    ProgressReporter progress(20, out, options);
    for (int step = 1; step <= 20; ++step) progress.update(step, 0.5, 0.01);
    const auto lines = split_lines(out.str());
    REQUIRE(lines.size() == 3);  // 7, 14, 20
    CHECK(lines[2].rfind("step 20/20 ", 0) == 0);
  }
  SUBCASE("a run stopped early: finish() prints where it stopped, once") {
    std::ostringstream out;
    options.every = 10;
    ProgressReporter progress(100, out, options);
    for (int step = 1; step <= 37; ++step) {
      clock.now += 1;
      progress.update(step, std::nan(""), 0.01);
    }
    progress.finish();
    progress.finish();
    const auto lines = split_lines(out.str());
    REQUIRE(lines.size() == 4);  // 10, 20, 30, then 37
    CHECK(lines[3] == "step 37/100  loss nan  lr 1.0e-02  elapsed 0:37  ETA 1:03");
  }
  SUBCASE("a resumed run: the ETA counts only the steps this run did") {
    std::ostringstream out;
    options.every = 10;
    options.start_step = 80;
    ProgressReporter progress(100, out, options);
    clock.now += 20;  // 10 steps in 20 s: 2 s a step, 10 steps left
    progress.update(90, 1.0, 0.01);
    CHECK(out.str().find("ETA 0:20") != std::string::npos);
  }
  SUBCASE("Auto on a string stream means lines") {
    std::ostringstream out;
    ProgressReporter progress(10, out);
    CHECK_FALSE(progress.bar());
  }
  SUBCASE("bad arguments") {
    std::ostringstream out;
    CHECK_THROWS_AS(ProgressReporter(0, out), ValueError);
    options.start_step = 5;
    CHECK_THROWS_AS(ProgressReporter(5, out, options), ValueError);
  }
}

TEST_CASE("report: progress bar mode redraws in place at most ~10 times a second") {
  FakeClock clock;
  ProgressOptions options;
  options.mode = ProgressMode::Bar;
  options.clock = clock.fn();

  SUBCASE("the default interval: 10 s of steps at 100 steps/s") {
    std::ostringstream out;
    {
      ProgressReporter progress(1000, out, options);
      CHECK(progress.bar());
      for (int step = 1; step <= 1000; ++step) {
        clock.now = 1000.0 + step / 100.0;
        progress.update(step, 2.0, 3e-4, 5000);
      }
    }  // the destructor finishes the line
    const std::string text = out.str();
    const std::size_t redraws = count(text, "\r");
    CHECK(redraws >= 95);
    CHECK(redraws <= 102);  // 10 per second plus the first and the last
    CHECK(count(text, "\n") == 1);
    CHECK(text.back() == '\n');
    CHECK(text.find("[####################] step 1000/1000  loss 2  lr 3.0e-04  5.0k tok/s  ETA 0:00") !=
          std::string::npos);
  }
  SUBCASE("an exact interval: 1/8 s at 1/64 s a step redraws every 8th step") {
    std::ostringstream out;
    options.min_redraw_seconds = 0.125;
    options.bar_width = 10;
    ProgressReporter progress(64, out, options);
    for (int step = 1; step <= 60; ++step) {
      clock.now = 1000.0 + step / 64.0;
      progress.update(step, 1.5, 1e-3);
    }
    // Steps 1, 9, 17, ..., 57: 8 redraws; the bar for step 57 is 8/10 full.
    CHECK(count(out.str(), "\r") == 8);
    CHECK(out.str().find("[########..] step 57/64") != std::string::npos);
    // finish() draws the throttled last update (step 60) and ends the line.
    progress.finish();
    CHECK(count(out.str(), "\r") == 9);
    CHECK(out.str().find("step 60/64") != std::string::npos);
    CHECK(out.str().back() == '\n');
  }
  SUBCASE("a shorter line blanks the leftovers of a longer one") {
    std::ostringstream out;
    options.min_redraw_seconds = 0;
    ProgressReporter progress(10, out, options);
    progress.update(1, 1.0, 1e-3, 123456);  // with tok/s
    progress.update(2, 1.0, 1e-3);          // without: shorter
    const std::string text = out.str();
    const std::size_t second = text.rfind('\r');
    CHECK(text.size() - second - 1 == second - 1);  // both redraws are equally wide on screen
  }
}

// ---------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------

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
  CHECK(rows[2].number("ok") == 1);
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

TEST_CASE("report: a metrics writer that cannot open its file throws IOError naming it") {
  TempDir dir;
  const fs::path not_a_dir = dir.path / "file";
  std::ofstream(not_a_dir) << "x";
  CHECK_THROWS_WITH_AS(MetricsWriter(not_a_dir / "run"), doctest::Contains(not_a_dir.string().c_str()), IOError);
}

// ---------------------------------------------------------------------------
// SVG charts
// ---------------------------------------------------------------------------

TEST_CASE("report: svg chart is well formed, escaped, one polyline per series") {
  ChartSeries a{"a<b & c", {0, 25, 50, 75, 100}, {1.0, 0.8, 0.5, 0.4, 0.35}, {}};
  ChartSeries b{"val \"loss\"", {0, 25, 50, 75, 100}, {1.1, 0.9, 0.7, 0.6, 0.55}, {}};
  ChartOptions options;
  options.title = "runs <1> & <2>";
  options.x_label = "step";
  options.y_label = "loss";
  const std::string svg = svg_line_chart({a, b}, options);

  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.size() >= 7);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("a&lt;b &amp; c") != std::string::npos);
  CHECK(svg.find("val &quot;loss&quot;") != std::string::npos);
  CHECK(svg.find("runs &lt;1&gt; &amp; &lt;2&gt;") != std::string::npos);
  CHECK(svg.find("a<b") == std::string::npos);
  CHECK(count(svg, "<polyline") == 2);
  CHECK(count(svg, "<circle") == 10);  // short series: a dot on every point
  CHECK(count(svg, "error-bars") == 0);
  CHECK(svg.find("#1f77b4") != std::string::npos);  // two different colours
  CHECK(svg.find("#ff7f0e") != std::string::npos);
  CHECK(svg.find("class=\"legend\"") != std::string::npos);
  // x from 0 to 100: nice ticks every 20.
  for (const char* label : {">0</text>", ">20</text>", ">40</text>", ">60</text>", ">80</text>", ">100</text>"})
    CHECK(svg.find(label) != std::string::npos);
  // y from 0.35 to 1.1: ticks every 0.2 from 0.2 to 1.2.
  CHECK(svg.find(">0.2</text>") != std::string::npos);
  CHECK(svg.find(">1.2</text>") != std::string::npos);
}

TEST_CASE("report: svg error bars, markers on long series, log axis") {
  SUBCASE("error bars: one path per series that has them") {
    ChartSeries s{"mean of 3 seeds", {1, 2, 3}, {0.5, 0.4, 0.3}, {0.05, 0.02, 0.01}};
    ChartSeries t{"no bars", {1, 2, 3}, {0.6, 0.5, 0.45}, {}};
    const std::string svg = svg_line_chart({s, t});
    CHECK(xml_problem(svg) == "");
    CHECK(count(svg, "class=\"error-bars\"") == 1);
    CHECK(count(svg, "<polyline") == 2);
    CHECK(count(svg, "<circle") == 6);
  }
  SUBCASE("a long series is a bare line") {
    ChartSeries s{"long", {}, {}, {}};
    for (int i = 0; i < 200; ++i) {
      s.x.push_back(i);
      s.y.push_back(std::exp(-i / 50.0));
    }
    const std::string svg = svg_line_chart({s});
    CHECK(count(svg, "<polyline") == 1);
    CHECK(count(svg, "<circle") == 0);
    REQUIRE(polyline_numbers(svg).size() == 1);
    CHECK(polyline_numbers(svg)[0].size() == 400);
  }
  SUBCASE("log y: ticks on 1-2-5 values, y <= 0 skipped and said so") {
    ChartSeries s{"loss", {1, 2, 3, 4}, {3.0, 0.4, 0.0, 0.05}, {}};
    ChartOptions options;
    options.log_y = true;
    const std::string svg = svg_line_chart({s}, options);
    CHECK(xml_problem(svg) == "");
    CHECK(svg.find("1 of 4 points skipped") != std::string::npos);
    CHECK(count(svg, "<circle") == 3);
    for (const char* label : {">0.05</text>", ">0.1</text>", ">1</text>", ">5</text>"})
      CHECK(svg.find(label) != std::string::npos);
  }
  SUBCASE("mismatched lengths are a ValueError") {
    CHECK_THROWS_AS(svg_line_chart({ChartSeries{"x", {1, 2}, {1}, {}}}), ValueError);
    CHECK_THROWS_AS(svg_line_chart({ChartSeries{"x", {1, 2}, {1, 2}, {0.1}}}), ValueError);
  }
}

TEST_CASE("report: svg skips NaN and infinite points and says so") {
  ChartSeries s{"loss", {1, 2, 3, 4, 5}, {1.0, kNaN, 0.5, kInf, 0.2}, {}};
  const std::string svg = svg_line_chart({s});
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("<!-- series 0 \"loss\": 2 of 5 points skipped (NaN or infinite) -->") != std::string::npos);
  CHECK(count(svg, "<circle") == 3);
  const auto numbers = polyline_numbers(svg);
  REQUIRE(numbers.size() == 1);
  REQUIRE(numbers[0].size() == 6);  // three points
  for (double v : numbers[0]) CHECK(std::isfinite(v));

  SUBCASE("nothing drawable at all: an empty chart that says so") {
    const std::string empty = svg_line_chart({ChartSeries{"gone", {1, 2}, {kNaN, kNaN}, {}}});
    CHECK(xml_problem(empty) == "");
    CHECK(count(empty, "<polyline") == 0);
    CHECK(empty.find("no data") != std::string::npos);
    CHECK(empty.find("nan") == std::string::npos);
  }
}

TEST_CASE("report: svg of a constant series or a single point has a real axis") {
  ChartSeries flat{"flat", {0, 1, 2, 3}, {2.0, 2.0, 2.0, 2.0}, {}};
  const std::string svg = svg_line_chart({flat});
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
  const auto numbers = polyline_numbers(svg);
  REQUIRE(numbers.size() == 1);
  REQUIRE(numbers[0].size() == 8);
  for (std::size_t i = 1; i < 8; i += 2) {
    CHECK(std::isfinite(numbers[0][i]));
    CHECK(numbers[0][i] == numbers[0][1]);  // a flat line
    CHECK(numbers[0][i] > 20);              // inside the plot area, not on an edge
    CHECK(numbers[0][i] < 365);
  }
  CHECK(count(svg, ">2.0</text>") == 1);  // the value is a y tick (the x ticks are 0 1 2 3)

  const std::string one = svg_line_chart({ChartSeries{"one", {5}, {0}, {}}});
  CHECK(xml_problem(one) == "");
  CHECK(count(one, "<polyline") == 0);
  CHECK(count(one, "<circle") == 1);
  CHECK(one.find("nan") == std::string::npos);

  const std::string zero_log = svg_line_chart({ChartSeries{"c", {1, 2}, {1.0, 1.0}, {}}}, [] {
    ChartOptions o;
    o.log_y = true;
    return o;
  }());
  CHECK(xml_problem(zero_log) == "");
  CHECK(zero_log.find("nan") == std::string::npos);
}

TEST_CASE("report: svg loss curve") {
  const std::string svg = svg_loss_curve({10, 20, 30}, {2.0, 1.5, 1.2}, "copy task & friends");
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("copy task &amp; friends") != std::string::npos);
  CHECK(svg.find(">step</text>") != std::string::npos);
  CHECK(svg.find(">loss</text>") != std::string::npos);
  CHECK(count(svg, "<polyline") == 1);
}

// ---------------------------------------------------------------------------
// SVG heatmaps
// ---------------------------------------------------------------------------

namespace {

// The fill of every heatmap cell (<rect class="cell ...">), in document order.
std::vector<std::string> cell_fills(const std::string& doc) {
  std::vector<std::string> fills;
  for (std::size_t p = doc.find("class=\"cell"); p != std::string::npos; p = doc.find("class=\"cell", p + 1)) {
    const std::size_t a = doc.find("fill=\"", p) + 6, b = doc.find('"', a);
    fills.push_back(doc.substr(a, b - a));
  }
  return fills;
}

// The number in attribute `name`="..." of the tag that starts at `tag`.
double attribute(const std::string& doc, std::size_t tag, const std::string& name) {
  const std::size_t a = doc.find(" " + name + "=\"", tag) + name.size() + 3;
  return std::stod(doc.substr(a, doc.find('"', a) - a));
}

struct Box {
  double x0, y0, x1, y1;
};

// The box of every heatmap cell, in document order.
std::vector<Box> cell_boxes(const std::string& doc) {
  std::vector<Box> boxes;
  for (std::size_t p = doc.find("class=\"cell"); p != std::string::npos; p = doc.find("class=\"cell", p + 1)) {
    const double x = attribute(doc, p, "x"), y = attribute(doc, p, "y");
    boxes.push_back({x, y, x + attribute(doc, p, "width"), y + attribute(doc, p, "height")});
  }
  return boxes;
}

// The box around boxes[begin, end).
Box bounds(const std::vector<Box>& boxes, std::size_t begin, std::size_t end) {
  Box b{kInf, kInf, -kInf, -kInf};
  for (std::size_t i = begin; i < end; ++i) {
    b.x0 = std::min(b.x0, boxes[i].x0);
    b.y0 = std::min(b.y0, boxes[i].y0);
    b.x1 = std::max(b.x1, boxes[i].x1);
    b.y1 = std::max(b.y1, boxes[i].y1);
  }
  return b;
}

bool overlap(const Box& a, const Box& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

void check_document(const std::string& svg) {
  CHECK(svg.rfind("<svg", 0) == 0);
  REQUIRE(svg.size() >= 7);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  CHECK(xml_problem(svg) == "");
  for (const char* bad : {"=\"nan", "=\"-nan", "(nan", "(-nan", "=\"inf", "=\"-inf"})  // no NaN or infinite coordinate
    CHECK(svg.find(bad) == std::string::npos);
}

// Every cell lies inside the document's width x height.
void check_cells_inside(const std::string& svg) {
  const double W = attribute(svg, 0, "width"), H = attribute(svg, 0, "height");
  for (const Box& b : cell_boxes(svg)) {
    CHECK(b.x0 >= 0);
    CHECK(b.y0 >= 0);
    CHECK(b.x1 <= W);
    CHECK(b.y1 <= H);
  }
}

}  // namespace

TEST_CASE("report: svg heatmap of a score per layer and head") {
  const std::vector<std::vector<double>> scores = {{0.10, 0.50, 0.20}, {0.30, 0.90, kNaN}};
  HeatmapOptions options;
  options.title = "head <importance> & more";
  options.x_label = "head";
  options.y_label = "layer";
  options.row_labels = {"<s>", "layer & 1"};
  options.col_labels = {"h0", "h1", "h2"};
  const std::string svg = svg_heatmap(scores, options);
  check_document(svg);
  check_cells_inside(svg);

  const std::size_t rows = 2, cols = 3, extras = 3;  // the background, the frame round the grid, the colour bar
  CHECK(count(svg, "<rect") == rows * cols + extras);
  CHECK(count(svg, "class=\"cell") == rows * cols);

  // Escaped text: labels, title, tooltips.
  CHECK(svg.find(">&lt;s&gt;</text>") != std::string::npos);
  CHECK(svg.find(">layer &amp; 1</text>") != std::string::npos);
  CHECK(svg.find(">head &lt;importance&gt; &amp; more</text>") != std::string::npos);
  CHECK(svg.find("<title>&lt;s&gt;, h1: 0.5</title>") != std::string::npos);
  CHECK(svg.find("<s>") == std::string::npos);
  CHECK(svg.find(">head</text>") != std::string::npos);
  CHECK(svg.find(">layer</text>") != std::string::npos);

  // Colours: the scale runs over the data, 0.1 (white) to 0.9 (dark blue).
  const auto fills = cell_fills(svg);
  REQUIRE(fills.size() == rows * cols);
  CHECK(fills[0] == "#ffffff");  // 0.1, the minimum
  CHECK(fills[4] == "#08306b");  // 0.9, the maximum
  CHECK(fills[0] != fills[4]);
  CHECK(fills[1] == "#6baed6");  // 0.5, the middle of the scale
  CHECK(fills[2] != fills[0]);
  CHECK(fills[2] != fills[1]);
  // Values with 2 decimals, white on the dark cell, dark on the light one.
  CHECK(svg.find("fill=\"#ffffff\">0.90</text>") != std::string::npos);
  CHECK(svg.find("fill=\"#222222\">0.10</text>") != std::string::npos);
  // The NaN cell: hatched, marked n/a.
  CHECK(fills[5] == "url(#hl-nan)");
  CHECK(count(svg, "class=\"cell nan\"") == 1);
  CHECK(count(svg, ">n/a</text>") == 1);
  CHECK(svg.find("<pattern id=\"hl-nan\"") != std::string::npos);
  CHECK(svg.find("1 NaN cells") != std::string::npos);
  // The colour bar's ends.
  CHECK(svg.find("class=\"colour-bar\"") != std::string::npos);
  CHECK(svg.find(">0.9</text>") != std::string::npos);
  CHECK(svg.find(">0.1</text>") != std::string::npos);
  CHECK(svg.find("rotate(-90)\" dy") == std::string::npos);  // short column labels stay horizontal
}

TEST_CASE("report: svg heatmap scales, defaults and sizes") {
  SUBCASE("a fixed scale: values beyond it take the colour of its ends") {
    HeatmapOptions options;
    options.vmin = 0;
    options.vmax = 1;
    options.annotate = false;
    const std::string svg = svg_heatmap({{-1.0, 0.5, 2.0, kNaN, kInf}}, options);
    check_document(svg);
    CHECK(count(svg, "<rect") == 5 + 3);
    const auto fills = cell_fills(svg);
    REQUIRE(fills.size() == 5);
    CHECK(fills[0] == "#ffffff");
    CHECK(fills[1] == "#6baed6");
    CHECK(fills[2] == "#08306b");
    CHECK(fills[3] == "url(#hl-nan)");
    CHECK(fills[4] == "#08306b");
    CHECK(count(svg, ">n/a</text>") == 1);  // printed even without annotations
    CHECK(svg.find(">0.50</text>") == std::string::npos);
    // No labels given: rows and columns are numbered.
    for (const char* label : {">0</text>", ">1</text>", ">2</text>", ">3</text>", ">4</text>"})
      CHECK(svg.find(label) != std::string::npos);
  }
  SUBCASE("one given end and data beyond it") {
    HeatmapOptions options;
    options.vmin = 0;
    const auto fills = cell_fills(svg_heatmap({{-3.0, -2.0}}, options));
    REQUIRE(fills.size() == 2);
    CHECK(fills[0] == "#ffffff");
    CHECK(fills[1] == "#ffffff");
  }
  SUBCASE("constant data: every cell the middle colour") {
    const std::string svg = svg_heatmap({{2.0, 2.0}, {2.0, 2.0}});
    check_document(svg);
    for (const auto& fill : cell_fills(svg)) CHECK(fill == "#6baed6");
    CHECK(svg.find(">1.8</text>") != std::string::npos);
    CHECK(svg.find(">2.2</text>") != std::string::npos);
    CHECK(count(svg, ">2.00</text>") == 4);
  }
  SUBCASE("a 1 x 1 heatmap, and long column labels rotated under the grid") {
    HeatmapOptions options;
    options.col_labels = {"a long column label"};
    options.cell = 20;
    const std::string svg = svg_heatmap({{-0.001}}, options);
    check_document(svg);
    check_cells_inside(svg);
    CHECK(count(svg, "<rect") == 1 + 3);
    CHECK(count(svg, "rotate(-90)\" dy") == 1);
    CHECK(svg.find(">0.00</text>") != std::string::npos);  // never "-0.00"
    CHECK(svg.find("width=\"20\" height=\"20\"") != std::string::npos);
  }
}

TEST_CASE("report: svg heatmap rejects bad input naming the sizes") {
  CHECK_THROWS_WITH_AS(svg_heatmap({}), doctest::Contains("svg_heatmap: values must be at least 1 x 1, got 0 rows"),
                       ValueError);
  CHECK_THROWS_WITH_AS(svg_heatmap({{}, {}}), doctest::Contains("got 2 rows of 0 values"), ValueError);
  CHECK_THROWS_WITH_AS(svg_heatmap({{1, 2, 3}, {4, 5}}),
                       doctest::Contains("svg_heatmap: values must be rectangular: row 1 has 2 values but row 0 has 3"),
                       ValueError);
  HeatmapOptions options;
  options.row_labels = {"only one"};
  CHECK_THROWS_WITH_AS(svg_heatmap({{1, 2, 3}, {4, 5, 6}}, options),
                       doctest::Contains("svg_heatmap: 1 row_labels for 2 rows"), ValueError);
  options.row_labels = {};
  options.col_labels = {"a", "b"};
  CHECK_THROWS_WITH_AS(svg_heatmap({{1, 2, 3}, {4, 5, 6}}, options),
                       doctest::Contains("svg_heatmap: 2 col_labels for 3 columns"), ValueError);
  options.col_labels = {};
  options.vmin = 1;
  options.vmax = 0;
  CHECK_THROWS_WITH_AS(svg_heatmap({{1}}, options), doctest::Contains("vmin (1) must be less than vmax (0)"),
                       ValueError);
  options.vmax = kNaN;
  CHECK_THROWS_AS(svg_heatmap({{1}}, options), ValueError);
  options.vmin.reset();
  options.vmax.reset();
  options.cell = 2;
  CHECK_THROWS_WITH_AS(svg_heatmap({{1}}, options), doctest::Contains("cell must be >= 4 pixels, got 2"), ValueError);
}

TEST_CASE("report: svg attention grid of self and cross attention") {
  const std::vector<std::string> src = {"<s>", "the", "catastrophically"};
  const AttentionPanel head0{"head <0>", {{1.0, 0.0, 0.0}, {0.5, 0.5, 0.0}, {0.2, 0.3, 0.5}}, src, src};
  const AttentionPanel head1{"head 1", {{0.1, 0.2, 0.7}, {0.3, 0.3, 0.4}, {0.0, 0.0, 1.0}}, src, src};
  const AttentionPanel cross{"cross & 0",
                             {{0.25, 0.25, 0.25, 0.25}, {0.1, 0.6, kNaN, 0.3}},
                             {"<s>", "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"},
                             {"<s>", "the", "cat", "</s>"}};
  AttentionGridOptions options;
  options.title = "attention <copy task>";
  options.row_titles = {"encoder layer 0", "decoder cross & attention"};
  const std::string svg = svg_attention_grid({{head0, head1}, {cross}}, options);
  check_document(svg);
  check_cells_inside(svg);

  const std::size_t cells = 9 + 9 + 8, panels = 3, extras = 2;  // a frame per panel; the background, the colour bar
  CHECK(count(svg, "<rect") == cells + panels + extras);
  CHECK(count(svg, "class=\"cell") == cells);
  CHECK(count(svg, "class=\"panel\"") == panels);

  // Escaped titles and labels.
  CHECK(svg.find(">attention &lt;copy task&gt;</text>") != std::string::npos);
  CHECK(svg.find(">head &lt;0&gt;</text>") != std::string::npos);
  CHECK(svg.find(">cross &amp; 0</text>") != std::string::npos);
  CHECK(svg.find(">decoder cross &amp; attention</text>") != std::string::npos);
  CHECK(svg.find(">encoder layer 0</text>") != std::string::npos);
  CHECK(count(svg, ">&lt;s&gt;</text>") == 2 + 2 + 2);  // a query and a key label in each panel
  CHECK(svg.find(">&lt;/s&gt;</text>") != std::string::npos);
  CHECK(svg.find("<s>") == std::string::npos);
  // Long labels: 7 characters and "…"; the tooltips keep them whole.
  CHECK(count(svg, ">catastr\xE2\x80\xA6</text>") == 4);
  CHECK(svg.find(">catastrophically<") == std::string::npos);
  CHECK(count(svg, ">\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xE2\x80\xA6</text>") == 1);
  CHECK(svg.find("<title>the \xE2\x86\x92 catastrophically: 0</title>") != std::string::npos);
  CHECK(svg.find("<title>&lt;s&gt; \xE2\x86\x92 &lt;/s&gt;: 0.25</title>") != std::string::npos);
  // Key labels rotated under each grid: 3 + 3 + 4.
  CHECK(count(svg, "rotate(-90)") == 10);

  // The fixed scale: 1 is dark blue, 0 white, 0.5 the middle; NaN hatched.
  const auto fills = cell_fills(svg);
  REQUIRE(fills.size() == cells);
  CHECK(fills[0] == "#08306b");
  CHECK(fills[1] == "#ffffff");
  CHECK(fills[3] == "#6baed6");
  CHECK(fills[0] != fills[1]);
  CHECK(fills[18 + 6] == "url(#hl-nan)");
  CHECK(count(svg, "class=\"cell nan\"") == 1);
  CHECK(svg.find("class=\"colour-bar\"") != std::string::npos);

  // Layout: the panels do not overlap; head 1 is right of head 0, the cross
  // attention panel (4 keys wide) under head 0 and in its column.
  const auto boxes = cell_boxes(svg);
  const Box b0 = bounds(boxes, 0, 9), b1 = bounds(boxes, 9, 18), b2 = bounds(boxes, 18, 26);
  CHECK(b0.x1 - b0.x0 == 3 * 14);
  CHECK(b2.x1 - b2.x0 == 4 * 14);
  CHECK(b2.y1 - b2.y0 == 2 * 14);
  CHECK_FALSE(overlap(b0, b1));
  CHECK_FALSE(overlap(b0, b2));
  CHECK_FALSE(overlap(b1, b2));
  CHECK(b1.x0 > b0.x1);
  CHECK(b2.y0 > b0.y1 + 20);  // room for the key labels of row 0 and the row title
}

TEST_CASE("report: svg attention grid with rows of different lengths and no labels") {
  AttentionPanel small{"", {{0.5}}, {}, {}};
  AttentionPanel wide{"a rather long panel title", {{0.1, 0.9}}, {}, {}};
  AttentionGridOptions options;
  options.cell = 6;
  const std::string svg = svg_attention_grid({{small, small, small}, {}, {wide}}, options);
  check_document(svg);
  check_cells_inside(svg);
  CHECK(count(svg, "<rect") == (3 + 2) + 4 + 2);
  const auto boxes = cell_boxes(svg);
  REQUIRE(boxes.size() == 5);
  for (const Box& b : boxes) {
    CHECK(b.x1 - b.x0 == 6);
    CHECK(b.y1 - b.y0 == 6);
  }
  CHECK(boxes[3].y0 > boxes[0].y1);  // the row after the empty one is below the first
  CHECK(svg.find(">a rather long panel title</text>") != std::string::npos);  // titles are not shortened
  CHECK(svg.find("<title>0 \xE2\x86\x92 1: 0.9</title>") != std::string::npos);  // unlabelled tokens are numbered
  CHECK(svg.find(">1</text>") != std::string::npos);
}

TEST_CASE("report: svg attention grid rejects bad panels naming them and the sizes") {
  const AttentionPanel ok{"head 0", {{1.0, 0.0}, {0.5, 0.5}}, {"a", "b"}, {"a", "b"}};
  AttentionPanel ragged{"head 2", {{1.0, 0.0}, {1.0}}, {}, {}};
  CHECK_THROWS_WITH_AS(
      svg_attention_grid({{ok, ok, ragged}}),
      doctest::Contains("svg_attention_grid: panel 'head 2' (row 0, column 2): weights must be rectangular: "
                        "query 1 has 1 weights but query 0 has 2"),
      ValueError);
  AttentionPanel queries{"cross", {{1.0, 0.0}, {0.5, 0.5}}, {"a", "b", "c"}, {}};
  CHECK_THROWS_WITH_AS(svg_attention_grid({{ok}, {queries}}),
                       doctest::Contains("panel 'cross' (row 1, column 0): 3 query_labels for 2 queries"), ValueError);
  AttentionPanel keys{"keys", {{1.0, 0.0}, {0.5, 0.5}}, {}, {"a"}};
  CHECK_THROWS_WITH_AS(svg_attention_grid({{keys}}),
                       doctest::Contains("panel 'keys' (row 0, column 0): 1 key_labels for 2 keys"), ValueError);
  AttentionPanel empty{"nothing", {}, {}, {}};
  CHECK_THROWS_WITH_AS(
      svg_attention_grid({{empty}}),
      doctest::Contains("panel 'nothing' (row 0, column 0): weights must be at least 1 x 1, got 0 queries"),
      ValueError);
  AttentionPanel no_keys{"no keys", {{}, {}}, {}, {}};
  CHECK_THROWS_WITH_AS(svg_attention_grid({{no_keys}}), doctest::Contains("got 2 queries of 0 keys"), ValueError);
  CHECK_THROWS_WITH_AS(svg_attention_grid({}), doctest::Contains("svg_attention_grid: no panels to draw (0 rows"),
                       ValueError);
  CHECK_THROWS_WITH_AS(svg_attention_grid({{}, {}}), doctest::Contains("(2 rows, all empty)"), ValueError);
  AttentionGridOptions options;
  options.row_titles = {"one"};
  CHECK_THROWS_WITH_AS(svg_attention_grid({{ok}, {ok}}, options),
                       doctest::Contains("svg_attention_grid: 1 row_titles for 2 rows of panels"), ValueError);
  options.row_titles = {};
  options.cell = 1;
  CHECK_THROWS_WITH_AS(svg_attention_grid({{ok}}, options), doctest::Contains("cell must be >= 2 pixels, got 1"),
                       ValueError);
}
