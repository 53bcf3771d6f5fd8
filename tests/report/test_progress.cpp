// report: the progress line. The tests use a fake clock, so the ETA and the
// throttling are exact.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/report/progress.hpp"
#include "report_checks.hpp"

namespace test_progress {

using namespace headlab;
using headlab::testing::count;
using headlab::testing::kNaN;
using headlab::testing::split_lines;

namespace {

// A fake clock the tests move by hand.
struct FakeClock {
  double now = 1000.0;
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

}  // namespace

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

TEST_CASE("report: a long run logs a line at least every 10 s, and show() puts the last step out now") {
  // Before: lines came every total/20 steps only, so with a large step cap a 10-minute run logged nothing.
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions options;
  options.mode = ProgressMode::Lines;
  options.clock = clock.fn();
  ProgressReporter progress(1000000, out, options);  // every 50000 steps
  for (int step = 1; step <= 100; ++step) {
    clock.now += 1;  // 1 s a step: a line at 10, 20, ... 100 s
    progress.update(step, 1.0, 0.01);
  }
  REQUIRE(split_lines(out.str()).size() == 10);
  CHECK(split_lines(out.str()).back().rfind("step 100/1000000 ", 0) == 0);
  clock.now += 1;
  progress.update(101, 1.0, 0.01);
  CHECK(split_lines(out.str()).size() == 10);
  progress.show();  // an evaluation is about to print
  REQUIRE(split_lines(out.str()).size() == 11);
  CHECK(split_lines(out.str()).back().rfind("step 101/1000000 ", 0) == 0);
  progress.show();  // shown already: nothing more
  progress.finish();
  CHECK(split_lines(out.str()).size() == 11);
}

TEST_CASE("report: with a time budget the ETA is the nearer stop, and a run with no step cap shows the budget") {
  FakeClock clock;
  ProgressOptions options;
  options.mode = ProgressMode::Lines;
  options.every = 10;
  options.clock = clock.fn();
  options.time_budget = 60;
  SUBCASE("the budget comes first: 30 s of training left, 990 steps at 1 s") {
    std::ostringstream out;
    ProgressReporter progress(1000, out, options);
    clock.now += 10;
    progress.update(10, 1.0, 0.01, -1, 30.0);  // 30 s of the budget used (training time, not the clock)
    REQUIRE_FALSE(out.str().empty());
    CHECK(split_lines(out.str()).back() == "step 10/1000  loss 1  lr 1.0e-02  elapsed 0:10  ETA 0:30");
  }
  SUBCASE("the step cap comes first") {
    std::ostringstream out;
    ProgressReporter progress(20, out, options);
    clock.now += 10;
    progress.update(10, 1.0, 0.01, -1, 10.0);  // 10 steps left at 1 s: 0:10, before the budget's 0:50
    REQUIRE_FALSE(out.str().empty());
    CHECK(split_lines(out.str()).back().find("ETA 0:10") != std::string::npos);
  }
  SUBCASE("no step cap: 'step N', the budget's ETA, a line every 10 s, the bar filled by time") {
    std::ostringstream out;
    options.every = 0;  // the default: about 20 lines of the total, and there is no total
    ProgressReporter progress(0, out, options);
    CHECK(progress.every() == 0);
    clock.now += 3;
    progress.update(30, 1.0, 0.01, -1, 3.0);  // no line: not 10 s yet, no step interval
    CHECK(out.str().empty());
    clock.now += 9;
    progress.update(120, 1.0, 0.01, -1, 12.0);
    REQUIRE_FALSE(out.str().empty());
    CHECK(split_lines(out.str()).back() == "step 120  loss 1  lr 1.0e-02  elapsed 0:12  ETA 0:48");
    std::ostringstream bar_out;
    ProgressOptions bar = options;
    bar.mode = ProgressMode::Bar;
    ProgressReporter bar_progress(0, bar_out, bar);
    bar_progress.update(5, 1.0, 0.01, -1, 30.0);  // half the budget: half the bar
    CHECK(bar_out.str().find("[##########..........] step 5  ") != std::string::npos);
  }
  SUBCASE("no step cap needs a budget") {
    std::ostringstream out;
    options.time_budget = 0;
    CHECK_THROWS_WITH_AS(ProgressReporter(0, out, options), doctest::Contains("or 0 with a time budget"), ValueError);
  }
}
}  // namespace test_progress
