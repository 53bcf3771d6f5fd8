// Study statistics (headlab/report/statistics.hpp) against SciPy's values
// (tests/fixtures/statistics.json, made by tests/fixtures/make_statistics_fixtures.py), to 1e-9.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/report/statistics.hpp"
#include "headlab/report/strip_chart.hpp"

namespace test_statistics {

using namespace headlab;
using nlohmann::json;

namespace {

json fixtures() {
  std::ifstream in(std::string(HEADLAB_FIXTURE_DIR) + "/statistics.json");
  REQUIRE(in.good());
  return json::parse(in);
}

// |got - want| <= 1e-9 max(1, |want|)
void check_close(double got, double want, const std::string& what) {
  INFO(what << ": headlab " << got << ", SciPy " << want);
  CHECK(std::fabs(got - want) <= 1e-9 * std::max(1.0, std::fabs(want)));
}

std::vector<double> sample(const json& f, const std::string& name) {
  return f["samples"][name]["values"].get<std::vector<double>>();
}

void check_difference(const MeanDifference& r, const json& want, const std::string& what) {
  check_close(r.difference, want["difference"], what + " difference");
  check_close(r.t, want["t"], what + " t");
  check_close(r.df, want["df"], what + " df");
  check_close(r.p, want["p"], what + " p");
  check_close(r.ci_low, want["ci_low"], what + " ci_low");
  check_close(r.ci_high, want["ci_high"], what + " ci_high");
}

}  // namespace

TEST_CASE("statistics: Student t quantiles match SciPy, whole and fractional df") {
  const json f = fixtures();  // (a range-for over fixtures()[...] would read a destroyed temporary)
  for (const json& q : f["quantiles"])
    check_close(student_t_quantile(q["p"], q["df"]), q["q"], "t quantile p " + q["p"].dump() + " df " + q["df"].dump());
  CHECK_THROWS_AS(student_t_quantile(1.0, 3), ValueError);
  CHECK_THROWS_AS(student_t_quantile(0.5, 0), ValueError);
}

TEST_CASE("statistics: mean, sd and the 95% t-interval of a sample match SciPy") {
  const json f = fixtures();
  for (const auto& [name, s] : f["samples"].items()) {
    const SampleSummary r = summarize(s["values"].get<std::vector<double>>());
    CHECK(r.n == s["n"].get<std::size_t>());
    check_close(r.mean, s["mean"], name + " mean");
    check_close(r.sd, s["sd"], name + " sd");
    check_close(r.ci_low, s["ci_low"], name + " ci_low");
    check_close(r.ci_high, s["ci_high"], name + " ci_high");
  }
  const SampleSummary one = summarize({2.5});
  CHECK(one.mean == 2.5);
  CHECK(std::isnan(one.sd));
  CHECK_THROWS_AS(summarize({}), ValueError);
  CHECK_THROWS_AS(summarize({1.0, NAN}), ValueError);
  // Values whose plain sum passes the largest double: the mean is still theirs (it read inf).
  const SampleSummary huge = summarize({1e308, 1e308, 1e308});
  CHECK(huge.mean == 1e308);
  CHECK(huge.sd == 0.0);
  CHECK(summarize({1.7e308, 1.7e308, -1.7e308}).mean == doctest::Approx(1.7e308 / 3));
}

TEST_CASE("statistics: Welch's test matches scipy.stats.ttest_ind(equal_var=False)") {
  const json f = fixtures();
  for (const json& w : f["welch"])
    check_difference(welch_test(sample(f, w["a"]), sample(f, w["b"])), w, "welch " + w["a"].get<std::string>());
  // Constant samples: no spread, the difference is certain.
  CHECK(welch_test({1, 1, 1}, {1, 1}).p == 1.0);
  CHECK(welch_test({2, 2, 2}, {1, 1}).p == 0.0);
  CHECK_THROWS_AS(welch_test({1.0}, {1.0, 2.0}), ValueError);
}

TEST_CASE("statistics: the paired test matches scipy.stats.ttest_rel") {
  const json f = fixtures();
  for (const json& w : f["paired"])
    check_difference(paired_test(sample(f, w["a"]), sample(f, w["b"])), w, "paired " + w["a"].get<std::string>());
  CHECK_THROWS_WITH_AS(paired_test({1, 2, 3}, {1, 2}), doctest::Contains("a pair needs one of each"), ValueError);
}

TEST_CASE("statistics: a sample's scale changes no t, df or p (values near 1e-170 once read as spread 0: t = inf, p = 0)") {
  const std::vector<double> a = {1, 3, 2.5}, b = {2, 4, 3.5, 5};
  const MeanDifference welch = welch_test(a, b), paired = paired_test(a, {2, 4.5, 3});
  const SampleSummary summary = summarize(a);
  // Past 2^+-100 Welch's df (fourth powers) would under- or overflow; 1e-310 is subnormal.
  for (double scale : {1e-170, 1e-300, 1e200, 1e305, 1e80, 1e-85, 1e-90, 1e-310}) {
    CAPTURE(scale);
    std::vector<double> sa, sb;
    for (double v : a) sa.push_back(v * scale);
    for (double v : b) sb.push_back(v * scale);
    const MeanDifference w = welch_test(sa, sb);
    CHECK(w.t == doctest::Approx(welch.t));
    CHECK(w.df == doctest::Approx(welch.df));
    CHECK(w.p == doctest::Approx(welch.p));
    CHECK(w.difference / scale == doctest::Approx(welch.difference));
    CHECK(w.ci_low / scale == doctest::Approx(welch.ci_low));
    const MeanDifference p = paired_test(sa, {2 * scale, 4.5 * scale, 3 * scale});
    CHECK(p.t == doctest::Approx(paired.t));
    CHECK(p.p == doctest::Approx(paired.p));
    CHECK(p.ci_high / scale == doctest::Approx(paired.ci_high));
    const SampleSummary s = summarize(sa);
    CHECK(s.sd / scale == doctest::Approx(summary.sd));
    CHECK(s.ci_low / scale == doctest::Approx(summary.ci_low));
    CHECK(s.mean / scale == doctest::Approx(summary.mean));
  }
  // Squared deviations past the largest double: the sd (1.2e308) is still a number (it read inf).
  CHECK(summarize({1.7e308, 0.0}).sd == doctest::Approx(1.7e308 / std::sqrt(2.0)));
  // Pairs of opposite sign near the largest double: their differences are taken scaled.
  const MeanDifference far = paired_test({1e308, -1e308, 5e307}, {-1e308, 1e308, 0.0});
  CHECK(std::isfinite(far.t));
  CHECK(far.p == doctest::Approx(paired_test({1, -1, 0.5}, {-1, 1, 0}).p));
}

TEST_CASE("statistics: Holm's adjustment keeps the order and is monotone in the sorted p-values") {
  const json f = fixtures();
  for (const json& h : f["holm"]) {
    const std::vector<double> got = holm_adjust(h["p"].get<std::vector<double>>());
    const std::vector<double> want = h["adjusted"].get<std::vector<double>>();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) check_close(got[i], want[i], "holm " + std::to_string(i));
  }
  CHECK_THROWS_AS(holm_adjust({0.5, 1.5}), ValueError);
}

TEST_CASE("strip chart: values far from 0 and nearly equal end, with every value drawn") {
  // 1e17 and 1e17 + 16: a tick step far below the spacing of doubles there (it once looped for ever).
  const std::string svg = svg_strip_chart({{"a", {1e17}}, {"b", {1e17 + 16}}}, StripChartOptions{});
  CHECK(svg.find("</svg>") != std::string::npos);
  const std::string same = svg_strip_chart({{"a", {3.0, 3.0}}}, StripChartOptions{});
  CHECK(same.find("class=\"seed\"") != std::string::npos);
}

TEST_CASE("strip chart: values whose range passes the largest double are refused, never drawn at inf or nan") {
  CHECK_THROWS_WITH_AS(svg_strip_chart({{"a", {1e308, 1e308}}, {"b", {-1e308, -1e308}}}, StripChartOptions{}),
                       doctest::Contains("span more than a double holds"), ValueError);
  // Huge but drawable: an interval that overflows is left out, the seeds are drawn at finite places.
  const std::string svg = svg_strip_chart({{"a", {1e308, 1.5e308}}}, StripChartOptions{});
  CHECK(svg.find("inf") == std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
}
}  // namespace test_statistics
