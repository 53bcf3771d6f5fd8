// report: SVG heatmaps and attention grids. The tests check the document with
// a small tag-balance parser (no XML library here) and read the cells' boxes
// and fills back from it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/report/heatmaps.hpp"
#include "report_checks.hpp"

namespace test_heatmaps {

using namespace headlab;
using headlab::testing::count;
using headlab::testing::element_texts;
using headlab::testing::kInf;
using headlab::testing::kNaN;
using headlab::testing::xml_problem;

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
  // Key labels rotated under each grid: 3 + 3 + 4, and the "query" title of each of the 3 panels.
  CHECK(count(svg, "rotate(-90)") == 13);

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

namespace {
// The texts of the colour bar's ticks, in document order.
std::vector<std::string> scale_ticks(const std::string& doc) { return element_texts(doc, "class=\"scale-tick\""); }
}  // namespace

TEST_CASE("report: svg heatmap colour bar: fixed ends, 3 significant digits, a label, a usable size") {
  HeatmapOptions o;
  o.title = "attention entropy";
  o.x_label = "head";
  o.y_label = "attention module";
  o.scale_label = "nats (max ln S)";
  o.vmin = 0.0;
  o.vmax = std::log(13.0);  // entropy of a uniform row over 13 keys
  const std::string svg = svg_heatmap({{0.008225, 0.6103}, {1.2, 2.0}}, o);
  check_document(svg);
  // The ends are the fixed range, not the data's min and max, with 2-3 significant digits.
  CHECK(scale_ticks(svg) == std::vector<std::string>{"2.56", "1.28", "0"});
  CHECK(svg.find(">nats (max ln S)</text>") != std::string::npos);
  CHECK(svg.find(">head</text>") != std::string::npos);
  CHECK(svg.find(">attention module</text>") != std::string::npos);
  // The bar is at least 18 px wide and 140 px tall.
  const std::size_t bar = svg.find("fill=\"url(#hl-scale-v)\"");
  const std::size_t rect = svg.rfind("<rect", bar);
  CHECK(attribute(svg, rect, "width") >= 18);
  CHECK(attribute(svg, rect, "height") >= 140);
  // Without fixed ends the data's range, still 3 significant digits.
  o.vmin.reset();
  o.vmax.reset();
  CHECK(scale_ticks(svg_heatmap({{0.00825, 0.6103}}, o)) == std::vector<std::string>{"0.61", "0.309", "0.00825"});
}

TEST_CASE("report: svg heatmap reference: a red line across the colour bar at its value, and its caption") {
  HeatmapOptions o;
  o.vmin = 0.0;
  o.vmax = 1.0;
  const std::string plain = svg_heatmap({{0.2, 0.9}}, o);
  CHECK(plain.find("class=\"reference\"") == std::string::npos);  // none unless asked
  o.reference = 0.25;
  o.reference_label = "uniform <attention>";
  const std::string svg = svg_heatmap({{0.2, 0.9}}, o);
  check_document(svg);
  CHECK(svg.find(">red line: uniform &lt;attention&gt; = 0.25</text>") != std::string::npos);
  // The line is a quarter of the way up the bar: y = top + height (1 - 0.25).
  const std::size_t bar = svg.rfind("<rect", svg.find("fill=\"url(#hl-scale-v)\""));
  const double top = attribute(svg, bar, "y"), height = attribute(svg, bar, "height");
  const std::size_t path = svg.find("<path d=\"M", svg.find("class=\"reference\""));
  REQUIRE(path != std::string::npos);
  const std::string d = svg.substr(path + 9, svg.find('"', path + 9) - path - 9);  // "M<x> <y>h<w>"
  CHECK(std::stod(d.substr(d.find(' ') + 1)) == doctest::Approx(top + height * 0.75).epsilon(1e-3));
  // Taller than without the caption; outside the scale the line sits at the nearer end.
  CHECK(attribute(svg, svg.find("<svg"), "height") > attribute(plain, plain.find("<svg"), "height"));
  o.reference = 7.0;
  const std::string above = svg_heatmap({{0.2, 0.9}}, o);
  const std::size_t p2 = above.find("<path d=\"M", above.find("class=\"reference\""));
  const std::string d2 = above.substr(p2 + 9, above.find('"', p2 + 9) - p2 - 9);
  CHECK(std::stod(d2.substr(d2.find(' ') + 1)) == doctest::Approx(top).epsilon(1e-3));
  CHECK(above.find("= 7</text>") != std::string::npos);
  o.reference = kNaN;
  CHECK_THROWS_WITH_AS(svg_heatmap({{1}}, o), doctest::Contains("svg_heatmap: reference must be finite"), ValueError);
}

TEST_CASE("report: svg attention grid axis titles, special tokens as text, labelled colour bar") {
  AttentionPanel p{"head 0: induction 0.91", {{1, 0, 0}, {0.5, 0.5, 0}, {0.2, 0.3, 0.5}}, {"<s>", "7", "</s>"},
                   {"<s>", "7", "</s>"}};
  AttentionGridOptions o;
  o.title = "attention maps: run";
  const std::string svg = svg_attention_grid({{p, p}}, o);
  check_document(svg);
  CHECK(count(svg, ">query</text>") == 2);  // one per panel
  CHECK(count(svg, ">key</text>") == 2);
  CHECK(count(svg, ">&lt;s&gt;</text>") == 4);  // a query and a key label per panel
  CHECK(count(svg, ">&lt;/s&gt;</text>") == 4);
  CHECK(count(svg, ">head 0: induction 0.91</text>") == 2);
  CHECK(scale_ticks(svg) == std::vector<std::string>{"0", "0.5", "1"});
  CHECK(svg.find(">attention weight</text>") != std::string::npos);
  const std::size_t bar = svg.find("fill=\"url(#hl-scale-h)\"");
  CHECK(attribute(svg, svg.rfind("<rect", bar), "width") >= 120);
  check_cells_inside(svg);
  // The axis titles may be left out.
  o.query_title = o.key_title = "";
  CHECK(count(svg_attention_grid({{p}}, o), ">query</text>") == 0);
}
}  // namespace test_heatmaps
