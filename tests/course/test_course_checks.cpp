// The course tests' own comparison helper (course_checks.hpp): a result holding NaN or an infinity
// must fail `max_diff(...) < tol` (before, std::max(m, NaN) kept m, so an Adam whose bias correction
// started at t = 0 and turned every parameter into NaN passed its test).
#include <doctest/doctest.h>

#include <limits>

#include "course_checks.hpp"

namespace test_course_checks {

using namespace headlab;

TEST_CASE("course: max_diff fails on NaN and infinity, and equal infinities differ by 0") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Array<double> reference = {1.0, 2.0, -inf};
  CHECK(course_checks::max_diff(reference, Array<double>{1.0, 2.0, -inf}) == 0.0);
  CHECK(course_checks::max_diff(reference, Array<double>{1.5, 2.0, -inf}) == doctest::Approx(0.5));
  CHECK_FALSE(course_checks::max_diff(reference, Array<double>{nan, 2.0, -inf}) < 1e-6);
  CHECK_FALSE(course_checks::max_diff(reference, Array<double>{1.0, inf, -inf}) < 1e-6);
  CHECK_FALSE(course_checks::max_diff(reference, Array<double>{1.0, 2.0, nan}) < 1e-6);
}
}  // namespace test_course_checks
