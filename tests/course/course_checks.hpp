// tests/course/course_checks.hpp: what the task tests (test_course_tasks.cpp) and the instructor's
// hidden tests (course/grading/) share: every "task ..." case runs the task regions (the listener
// below), seeds that HEADLAB_COURSE_SEED moves, the tests' own central-difference check, and
// attention by loops over the formula. Include it in one file per test binary (it registers a
// doctest listener).
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "headlab/attention/attention.hpp"
#include "headlab/core/gradcheck.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/headlab.hpp"
#include "headlab/models/transformer.hpp"
#include "../small_models.hpp"

using namespace headlab;

namespace course_checks {

// Sets KernelChoice::course while a "task ..." case runs, and puts the previous choice back after it.
struct TaskCasesRunTheRegions : doctest::IReporter {
  explicit TaskCasesRunTheRegions(const doctest::ContextOptions&) {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    const std::string name = tc.m_name;
    active_ = name.rfind("task ", 0) == 0;
    if (active_) {
      previous_ = kernel_choice();
      set_kernel_choice(KernelChoice::course);
    }
  }
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    if (active_) set_kernel_choice(previous_);
    active_ = false;
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  bool active_ = false;
  KernelChoice previous_ = KernelChoice::fast;
};
DOCTEST_REGISTER_LISTENER("task-cases-run-the-regions", 1, TaskCasesRunTheRegions);

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// The seed of every random input: `base`, shifted when HEADLAB_COURSE_SEED is set. Instructors grade
// with a seed they keep to themselves (docs/course.md), so that only a real implementation passes.
// A value that is not a whole number from 0 to 10^12 fails every case that asks, saying so.
inline std::uint64_t seed(std::uint64_t base) {
  static const char* text = [] {  // an empty value counts as unset
    const char* s = std::getenv("HEADLAB_COURSE_SEED");
    return s && *s ? s : nullptr;
  }();
  static const bool valid = [] {
    try {
      if (text) headlab::parse_whole_number(text, 0, 1000000000000ULL);
      return true;
    } catch (const headlab::ValueError&) {
      return false;
    }
  }();
  if (!valid) FAIL("HEADLAB_COURSE_SEED must be a whole number from 0 to 10^12, got '" << std::string(text) << "'");
  static const std::uint64_t offset = text ? headlab::parse_whole_number(text) * 1000003ULL : 0ULL;
  return base + offset;
}

// max |a - b| over the elements; +infinity when any difference is not finite, so that a result
// holding NaN never passes `max_diff(...) < tol` (std::max(m, NaN) would keep m). Equal infinities
// (two -inf of a mask) differ by 0.
inline double max_diff(const Array<double>& a, const Array<double>& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = a.data()[i] == b.data()[i] ? 0.0 : std::abs(a.data()[i] - b.data()[i]);
    if (!std::isfinite(d)) return std::numeric_limits<double>::infinity();
    m = std::max(m, d);
  }
  return m;
}

// One line when `got` is not `expected` to within tol (tol 0: exactly), naming the configuration
// (`what`), the largest difference and the first element that is off, with both values:
//   "split_heads (B, T, n d) = (2, 3, 8), n = 2: element (0, 1, 0, 2) expected 0.25, got -0.5 (max |diff| 0.75)"
// A NaN or an infinity where the other has a number counts as off.
inline void check_close(const std::string& what, const Array<double>& got, const Array<double>& expected,
                        double tol) {
  if (got.shape() != expected.shape()) {
    FAIL_CHECK(what << ": shape " << shape_str(headlab::detail::shape_of(got)) << ", expected "
                        << shape_str(headlab::detail::shape_of(expected)));
    return;
  }
  const double worst = max_diff(got, expected);
  if (worst <= tol) return;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double a = got.data()[i], e = expected.data()[i];
    if (a == e || std::abs(a - e) <= tol) continue;
    std::string index = ")";  // the row-major index i as (i0, i1, ...)
    for (std::size_t axis = got.dimension(), rest = i; axis-- > 0; rest /= got.shape()[axis])
      index = (axis ? ", " : "(") + std::to_string(rest % got.shape()[axis]) + index;
    FAIL_CHECK(what << ": element " << index << " expected " << e << ", got " << a
                    << " (max |diff| " << worst << ")");
    return;
  }
}

// check_close for masks (true = hidden, shown as 1).
inline void check_mask(const std::string& what, const MaskArray& got, const MaskArray& expected) {
  check_close(what, xt::cast<double>(got), xt::cast<double>(expected), 0.0);
}

inline double sigmoid_of(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The tests' own gradient check: central differences computed here, not with the library's
// gradcheck (that is task 0.2, the student's code), so that a task's grade never depends on
// another task being right. With fixed random weights w over f's output, L(x) = sum(w * f(x)):
//   analytic  dL/dx = the gradient that f(x).backward(w) leaves in x          (task 0.1 and the op's backward)
//   numeric   (L(x with x_j + h) - L(x with x_j - h)) / (2 h),  h = 1e-6
// and every element must agree to 1e-6 + 1e-5 |numeric|. The message names the input and element.
inline void check_gradients(const std::string& name, const GradcheckFn& f, const std::vector<Shape>& shapes, double lo,
                     double hi, std::uint64_t base_seed) {
  Generator gen(seed(base_seed));
  std::vector<TensorD> inputs;
  for (const Shape& s : shapes) inputs.push_back(uniform<double>(s, lo, hi, gen, true));
  const TensorD y = f(inputs);
  const Array<double> w = uniform<double>(y.shape(), -1, 1, gen).value();
  y.backward(w);
  const double h = 1e-6;
  auto loss_at = [&](std::size_t which, std::size_t element, double delta) {
    NoGradGuard no_grad;
    std::vector<TensorD> moved;
    for (std::size_t n = 0; n < inputs.size(); ++n) {
      Array<double> value = inputs[n].value();
      if (n == which) value.data()[element] += delta;
      moved.push_back(TensorD(value));
    }
    const Array<double> out = f(moved).value();
    double total = 0;
    for (std::size_t e = 0; e < out.size(); ++e) total += w.data()[e] * out.data()[e];
    return total;
  };
  for (std::size_t n = 0; n < inputs.size(); ++n) {
    CAPTURE(name);
    CAPTURE(n);
    REQUIRE_MESSAGE(inputs[n].has_grad(), name << ": backward left no gradient in input " << n);
    REQUIRE(inputs[n].grad().shape() == inputs[n].value().shape());
    for (std::size_t e = 0; e < inputs[n].numel(); ++e) {
      const double numeric = (loss_at(n, e, h) - loss_at(n, e, -h)) / (2 * h);
      const double analytic = inputs[n].grad().data()[e];
      if (!(std::abs(analytic - numeric) <= 1e-6 + 1e-5 * std::abs(numeric))) {
        FAIL_CHECK(name << ": input " << n << " " << shape_str(inputs[n].shape()) << ", element " << e
                        << " (row-major): central difference " << numeric << ", backward " << analytic);
        return;  // the first wrong element is enough
      }
    }
  }
}

inline MaskArray mask_of(const std::vector<int>& v, const Shape& shape) {
  MaskArray m = MaskArray::from_shape(shape);
  REQUIRE(m.size() == v.size());
  for (std::size_t i = 0; i < v.size(); ++i) m.data()[i] = v[i] != 0;
  return m;
}

// One head by the formula: out_i = sum_j softmax_j(q_i . k_j * scale + bias_ij over visible j) v_j,
// zero when query i sees no key. q (L, d), k (S, d), v (S, dv), hidden/bias (L, S).
inline Array<double> attention_by_loops(const Array<double>& q, const Array<double>& k, const Array<double>& v,
                                 const MaskArray& hidden, const Array<double>& bias, double scale) {
  const std::size_t L = q.shape()[0], S = k.shape()[0], d = q.shape()[1], dv = v.shape()[1];
  Array<double> out = xt::zeros<double>({L, dv});
  for (std::size_t i = 0; i < L; ++i) {
    std::vector<double> w(S, 0.0);
    double m = -kInf;
    for (std::size_t j = 0; j < S; ++j) {
      if (hidden(i, j)) continue;
      double s = 0;
      for (std::size_t c = 0; c < d; ++c) s += q(i, c) * k(j, c);
      w[j] = s * scale + bias(i, j);
      m = std::max(m, w[j]);
    }
    if (m == -kInf) continue;  // no visible key: zero output
    double total = 0;
    for (std::size_t j = 0; j < S; ++j) total += hidden(i, j) ? 0.0 : std::exp(w[j] - m);
    for (std::size_t j = 0; j < S; ++j) {
      if (hidden(i, j)) continue;
      const double p = std::exp(w[j] - m) / total;
      for (std::size_t c = 0; c < dv; ++c) out(i, c) += p * v(j, c);
    }
  }
  return out;
}

// Compares sdpa's output (B, h, L, dv) with attention_by_loops for every (batch, head); query head
// hh uses kv head hh / (h / h_kv). hidden_of(b) gives batch b's (L, S) mask.
inline void check_sdpa_against_loops(const TensorD& q, const TensorD& k, const TensorD& v, const SdpaOptions<double>& opt,
                              const std::function<MaskArray(std::size_t)>& hidden_of, const Array<double>& bias,
                              double scale, const std::string& what = "sdpa") {
  const auto r = scaled_dot_product_attention(q, k, v, opt);
  const std::size_t B = q.size(0), h = q.size(1), L = q.size(2), hkv = k.size(1), dv = v.size(3);
  REQUIRE(r.output.shape() == Shape{B, h, L, dv});
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t hh = 0; hh < h; ++hh) {
      const std::size_t kv = hh / (h / hkv);
      const Array<double> qh = xt::view(q.value(), b, hh), kh = xt::view(k.value(), b, kv),
                          vh = xt::view(v.value(), b, kv), got = xt::view(r.output.value(), b, hh);
      check_close(what + " " + shape_str(q.shape()) + " x " + shape_str(k.shape()) + ", batch " + std::to_string(b) +
                      ", head " + std::to_string(hh) + ": output (L, d_v)",
                  got, attention_by_loops(qh, kh, vh, hidden_of(b), bias, scale), 1e-12);
    }
  }
}

inline TensorD attention_input(std::initializer_list<std::size_t> shape, Generator& gen) {
  return uniform<double>(Shape(shape), -1, 1, gen);
}

// The small encoder-decoder of tests/small_models.hpp, in evaluation mode.
template <typename T>
std::unique_ptr<Transformer<T>> small_transformer(std::size_t vocab, std::uint64_t model_seed) {
  auto model = headlab::testing::small_transformer<T>(vocab, model_seed);
  model->eval();
  return model;
}

}  // namespace course_checks

using namespace course_checks;
