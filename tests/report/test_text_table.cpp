// report: Markdown tables whose columns line up (headlab/report/text_table.hpp).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/report/text_table.hpp"
#include "report_checks.hpp"

namespace test_text_table {

using namespace headlab;
using headlab::testing::split_lines;

namespace {
std::size_t characters(const std::string& s) {  // on screen: UTF-8 bytes that start a character
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}
}  // namespace

TEST_CASE("report: text table columns line up, headers apart, '|' escaped") {
  TextTable t({"heads pruned", "loss (random)", "accuracy (random)"});
  t.add_row({"0", "0.123 ± 0.010", "0.99 ± 0.01"});
  t.add_row({"12", "2.5", "a|b"});
  const auto lines = split_lines(t.markdown());
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "| heads pruned | loss (random) | accuracy (random) |");
  CHECK(lines[1] == "|--------------|---------------|-------------------|");
  CHECK(lines[2] == "| 0            | 0.123 ± 0.010 | 0.99 ± 0.01       |");
  CHECK(lines[3] == "| 12           | 2.5           | a\\|b              |");
  for (const auto& line : lines) CHECK(characters(line) == characters(lines[0]));
  CHECK_THROWS_AS(t.add_row({"1"}), ValueError);
}

TEST_CASE("report: a line break from a file stays on its line (a cell, or markdown_inline's text)") {
  TextTable t({"cpu"});
  t.add_row({"AMD\n\n# Verdict: confirmed"});
  CHECK(split_lines(t.markdown()).size() == 3);
  CHECK(t.markdown().find("| AMD  # Verdict: confirmed |") != std::string::npos);
  CHECK(markdown_inline("AMD\r\n# x <b>|</b> & y") == "AMD  # x &lt;b&gt;\\|&lt;/b&gt; &amp; y");
}

TEST_CASE("report: text from a file makes no link, image or code span in Markdown") {
  // Before: a runs.csv cpu value or a recipe title "![x](http://evil/p.png) [click](javascript:...)"
  // reached report.md as an image and a link.
  CHECK(markdown_inline("![x](http://e/p.png) [c](javascript:alert(1))") ==
        "!\\[x\\](http://e/p.png) \\[c\\](javascript:alert(1))");
  CHECK(markdown_inline("a\\|b `code`") == "a\\\\\\|b \\`code\\`");  // a\|b stays one cell: \\ then \|
  TextTable t({"cell"});
  t.add_row({"[c](javascript:alert(1))"});
  t.add_row({"0.5 [0.4, 0.6]"});
  const std::vector<std::string> lines = split_lines(t.markdown());
  CHECK(lines[2].find("[c]\\(javascript") != std::string::npos);
  CHECK(lines[3].find("0.5 [0.4, 0.6]") != std::string::npos);  // an interval is left as it is
}
}  // namespace test_text_table
