// report: SVG line charts. The tests check the document with a small
// tag-balance parser (no XML library here).
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/report/charts.hpp"
#include "child_process.hpp"
#include "report_checks.hpp"

namespace test_charts {

using namespace headlab;
using headlab::testing::count;
using headlab::testing::element_texts;
using headlab::testing::kInf;
using headlab::testing::kNaN;
using headlab::testing::xml_problem;

namespace {

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

}  // namespace

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

// Finite values whose range is past the largest double: refused by name, never drawn at -nan.
TEST_CASE("report: a linear axis refuses values from -1e308 to 1e308, which no scale can draw") {
  CHECK_THROWS_WITH_AS(svg_line_chart({ChartSeries{"loss", {1, 2}, {1e308, -1e308}, {}}}, ChartOptions{}),
                       doctest::Contains("chart axis: values from -1e+308 to 1e+308 span more than a double holds"),
                       ValueError);
  const std::string near_the_edge = svg_line_chart({ChartSeries{"loss", {1, 2}, {1e308, 1.7e308}, {}}}, ChartOptions{});
  CHECK(near_the_edge.find("nan") == std::string::npos);  // (a guard: this one drew before too)
  CHECK(near_the_edge.find("inf") == std::string::npos);
  // A constant series near the largest double: widened by 10% it would pass it.
  CHECK_THROWS_AS(svg_line_chart({ChartSeries{"loss", {1, 2}, {1.7e308, 1.7e308}, {}}}, ChartOptions{}), ValueError);
}

// Subnormal and huge values on a log axis (a loss of 5e-324): before, the axis ran from log10(0) and
// its tick loop never ended (8 GB in a minute). In a child under an alarm, so a hang fails the test.
TEST_CASE("report: a log axis over subnormal and huge values ends, with finite ticks") {
  const auto child = headlab::testing::fork_child([](int to_parent) {
    ::alarm(20);
    ChartOptions options;
    options.log_y = true;
    const std::string svg = svg_line_chart({ChartSeries{"loss", {1, 2, 3}, {5e-324, 1.0, 1e308}, {}}}, options);
    const char ok = xml_problem(svg).empty() && svg.find("inf") == std::string::npos ? 'y' : 'n';
    (void)!::write(to_parent, &ok, 1);
  });
  char answer = 0;
  (void)!::read(child.from_child, &answer, 1);
  ::close(child.from_child);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(answer == 'y');
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

TEST_CASE("report: svg panels share one x axis, each with its own y axis, legend and log option") {
  ChartPanel loss{"loss", {ChartSeries{"training loss", {100, 200, 300, 400}, {4.0, 2.0, 1.0, 0.5}, {}},
                           ChartSeries{"validation loss", {200, 400}, {2.5, 0.8}, {}}},
                  true};
  ChartPanel bleu{"BLEU", {ChartSeries{"validation BLEU", {200, 400}, {10, 35}, {}}}, false};
  ChartOptions o;
  o.title = "run";
  o.x_label = "step";
  const std::string svg = svg_chart_panels({loss, bleu}, o);
  CHECK(xml_problem(svg) == "");
  CHECK(svg.find("height=\"800\"") != std::string::npos);  // 400 pixels per panel
  CHECK(count(svg, "<polyline") == 3);
  CHECK(count(svg, "class=\"legend\"") == 2);
  for (const char* text : {">training loss</text>", ">validation loss</text>", ">validation BLEU</text>", ">loss</text>",
                           ">BLEU</text>"})
    CHECK(count(svg, text) == 1);
  CHECK(count(svg, ">step</text>") == 1);  // under the last panel only
  // The loss panel is a log axis: 1-2-5 ticks from 0.5 to 5, each a label once; BLEU is linear.
  for (const char* label : {">0.5</text>", ">1</text>", ">2</text>", ">5</text>"}) CHECK(count(svg, label) == 1);
  CHECK(count(svg, ">40</text>") == 1);
  CHECK(count(svg, ">400</text>") == 2);  // the x ticks, under each panel
  // One x range for both: the first validation point of each panel sits at the same x pixel.
  const auto lines = polyline_numbers(svg);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1][0] == lines[2][0]);
  CHECK(lines[1][2] == lines[2][2]);

  SUBCASE("a value <= 0 on a log panel is skipped and named in a comment") {
    loss.series[0].y[3] = 0.0;
    const std::string skipped = svg_chart_panels({loss, bleu}, o);
    CHECK(xml_problem(skipped) == "");
    CHECK(skipped.find("<!-- panel 0 series 0 \"training loss\": 1 of 4 points skipped (NaN or infinite, or y <= 0 "
                       "on the log axis) -->") != std::string::npos);
    CHECK(polyline_numbers(skipped)[0].size() == 6);
  }
  SUBCASE("one panel is exactly svg_line_chart") {
    ChartOptions one = o;
    one.y_label = "loss";
    one.log_y = true;
    CHECK(svg_chart_panels({loss}, o) == svg_line_chart(loss.series, one));
  }
  SUBCASE("a flat accuracy of 0 sits on 0 to 1, and a log range within 2 to 5 has a tick at every digit") {
    const ChartPanel accuracy{"accuracy", {ChartSeries{"exact match", {100, 200}, {0, 0}, {}}}, false, {0, 1}};
    const ChartPanel narrow{"loss", {ChartSeries{"loss", {100, 200}, {2.3, 3.1}, {}}}, true};
    const std::string svg2 = svg_chart_panels({narrow, accuracy}, o);
    CHECK(xml_problem(svg2) == "");
    CHECK(svg2.find(">-1.0</text>") == std::string::npos);  // not the +-1 of a constant series
    CHECK(count(svg2, ">1.0</text>") == 1);
    CHECK(count(svg2, ">0.2</text>") == 1);
    for (const char* label : {">2</text>", ">3</text>", ">4</text>", ">5</text>"}) CHECK(count(svg2, label) == 1);
  }
  SUBCASE("no panel is a ValueError") { CHECK_THROWS_AS(svg_chart_panels({}, o), ValueError); }
}

namespace {

// The x tick labels: the texts drawn 16 px under the frame's bottom edge, centred.
std::vector<std::string> x_tick_labels(const std::string& doc) {
  std::vector<std::string> out;
  for (std::size_t p = doc.find("<text"); p != std::string::npos; p = doc.find("<text", p + 1)) {
    const std::size_t end = doc.find('>', p);
    const std::string tag = doc.substr(p, end - p);
    if (tag.find("text-anchor=\"middle\"") == std::string::npos || tag.find(" x=\"") == std::string::npos) continue;
    const std::size_t a = end + 1;
    const std::string text = doc.substr(a, doc.find("</text>", a) - a);
    if (!text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '-')) out.push_back(text);
  }
  return out;
}

// The numbers in attribute `name`="..." of every tag that starts with `tag`.
std::vector<double> attributes(const std::string& doc, const std::string& tag, const std::string& name) {
  std::vector<double> out;
  for (std::size_t p = doc.find(tag); p != std::string::npos; p = doc.find(tag, p + 1)) {
    const std::size_t a = doc.find(" " + name + "=\"", p) + name.size() + 3;
    out.push_back(std::stod(doc.substr(a, doc.find('"', a) - a)));
  }
  return out;
}

}  // namespace

TEST_CASE("report: svg chart axis titles, log2 head axis, padding inside the frame, offsets, bands") {
  ChartOptions o;  // no title: the texts below are ticks, axis titles and legend names only
  o.x_label = "heads";
  o.y_label = "accuracy";
  SUBCASE("axis titles are drawn") {
    const std::string svg = svg_line_chart({{"a", {1, 2}, {0.5, 0.7}, {}}}, o);
    const auto t = element_texts(svg);
    CHECK(std::count(t.begin(), t.end(), "heads") == 1);
    CHECK(std::count(t.begin(), t.end(), "accuracy") == 1);
  }
  SUBCASE("a log2 x axis has ticks at the powers of two only, evenly spaced") {
    o.log2_x = true;
    const std::string svg = svg_line_chart({{"a", {1, 2, 4, 8, 16}, {100, 200, 300, 400, 500}, {}}}, o);
    CHECK(x_tick_labels(svg) == std::vector<std::string>{"1", "2", "4", "8", "16"});
    const auto xs = polyline_numbers(svg).at(0);  // x0, y0, x1, y1, ...
    REQUIRE(xs.size() == 10);
    for (std::size_t i = 2; i + 2 < xs.size(); i += 2) CHECK(xs[i + 2] - xs[i] == doctest::Approx(xs[2] - xs[0]).epsilon(1e-3));
    // A linear axis over the same points has ticks that are not powers of two (and an empty one).
    o.log2_x = false;
    CHECK(x_tick_labels(svg_line_chart({{"a", {1, 2, 4, 8, 16}, {100, 200, 300, 400, 500}, {}}}, o)) !=
          std::vector<std::string>{"1", "2", "4", "8", "16"});
    // A point at x <= 0 cannot sit on the log axis: skipped and said so.
    o.log2_x = true;
    CHECK(svg_line_chart({{"a", {0, 1, 2}, {1, 2, 3}, {}}}, o).find("1 of 3 points skipped") != std::string::npos);
  }
  SUBCASE("points at the axis ends and their error bars lie inside the frame") {
    const std::string svg = svg_line_chart({{"a", {0, 10}, {0, 1}, {0.2, 0.2}}}, o);
    const double fx = attributes(svg, "<rect x=", "x").at(0), fw = attributes(svg, "<rect x=", "width").at(0);
    const double fy = attributes(svg, "<rect x=", "y").at(0), fh = attributes(svg, "<rect x=", "height").at(0);
    for (double cx : attributes(svg, "<circle", "cx")) {
      CHECK(cx - 2.5 > fx);
      CHECK(cx + 2.5 < fx + fw);
    }
    // The caps of the bars (3 px either side of the point) stay inside too.
    const std::size_t d = svg.find("class=\"error-bars\" d=\"") + 22;
    std::string path = svg.substr(d, svg.find('"', d) - d);
    for (char& c : path)
      if (std::isalpha(static_cast<unsigned char>(c))) c = ' ';
    std::istringstream in(path);
    std::vector<double> numbers;
    for (double v; in >> v;) numbers.push_back(v);
    // Each bar is "M x lo V hi M x-3 hi H x+3 M x-3 lo H x+3": 9 numbers, x at 0, 3, 5, 6, 8.
    REQUIRE(numbers.size() == 18);
    for (std::size_t i = 0; i < numbers.size(); ++i) {
      const bool is_x = i % 9 == 0 || i % 9 == 3 || i % 9 == 5 || i % 9 == 6 || i % 9 == 8;
      CHECK(numbers[i] > (is_x ? fx : fy));
      CHECK(numbers[i] < (is_x ? fx + fw : fy + fh));
    }
    for (double cy : attributes(svg, "<circle", "cy")) {
      CHECK(cy > fy);
      CHECK(cy < fy + fh);
    }
  }
  SUBCASE("series at the same x are drawn series_offset pixels apart") {
    o.series_offset = 5;
    const std::string svg = svg_line_chart({{"a", {1, 2}, {1, 2}, {}}, {"b", {1, 2}, {1, 2}, {}}}, o);
    const auto cx = attributes(svg, "<circle", "cx");
    REQUIRE(cx.size() == 4);
    CHECK(cx[2] - cx[0] == doctest::Approx(5));
    CHECK(cx[3] - cx[1] == doctest::Approx(5));
    o.series_offset = 0;
    const auto same = attributes(svg_line_chart({{"a", {1, 2}, {1, 2}, {}}, {"b", {1, 2}, {1, 2}, {}}}, o), "<circle", "cx");
    CHECK(same[2] == same[0]);
  }
  SUBCASE("a band is one shaded path, and the y axis covers it") {
    ChartSeries s{"random orders", {0, 0.5, 1}, {0.9, 0.5, 0.1}, {}};
    s.band_low = {0.8, 0.3, kNaN};
    s.band_high = {1.0, 0.7, kNaN};
    const std::string svg = svg_line_chart({s}, o);
    CHECK(xml_problem(svg) == "");
    CHECK(count(svg, "class=\"band\"") == 1);
    const std::size_t d = svg.find("class=\"band\" d=\"M");
    REQUIRE(d != std::string::npos);
    CHECK(count(svg.substr(d, svg.find("Z\"", d) - d), "L") == 3);  // 2 points banded: 4 corners
    const auto t = element_texts(svg);
    CHECK(std::find(t.begin(), t.end(), "1.0") != t.end());  // the band's top (1.0) is on the y axis
    s.band_low = {0.1};
    CHECK_THROWS_AS(svg_line_chart({s}, o), ValueError);
  }
}
}  // namespace test_charts
