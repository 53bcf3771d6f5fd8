// report: the progress line, metrics.jsonl and SVG charts. The progress tests
// use a fake clock, so the ETA and the throttling are exact; the metrics tests
// write under the system temp dir and remove what they wrote; the SVG tests
// check the document with a small tag-balance parser (no XML library here).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/errors.hpp"
#include "headlab/report.hpp"

using namespace headlab;
namespace fs = std::filesystem;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// A fresh directory under the system temp dir, removed with its contents at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("headlab_report_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

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
