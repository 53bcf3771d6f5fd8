// The fast kernels of ops/kernels/ against the readable references in the ops' files
// (ops/kernels/README.md): each op runs once with KernelChoice::fast and once with
// KernelChoice::reference on the same inputs and the same upstream gradient, and the values and
// every input's gradient must agree to rounding, in float32 and float64. The lengths straddle the
// SIMD width (where the vectorised loops hand over to their scalar tails), and -inf entries and
// fully masked rows go through the softmax family.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "headlab/headlab.hpp"
#include "headlab/core/shape_utils.hpp"
#include "ops/kernels/row_kernels.hpp"

namespace test_kernels_match_reference {

using namespace headlab;

namespace {

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// How close fast and reference must be: |fast - reference| <= tol (1 + |reference|) elementwise,
// equal infinities included. The two sum in different orders (SIMD lanes, gemm blocking), so they
// differ by rounding: measured at most 1.4e-6 in float and 2.3e-15 in double (matmul, k = 35);
// the tolerances leave a few times that.
template <typename T>
constexpr double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-13;
}

template <typename T>
double worst_mismatch(const Array<T>& fast, const Array<T>& reference) {
  REQUIRE(detail::shape_of(fast) == detail::shape_of(reference));
  double worst = 0;
  for (std::size_t i = 0; i < fast.size(); ++i) {
    const double f = fast.data()[i], r = reference.data()[i];
    if (f == r) continue;  // also -inf == -inf
    const double err = std::abs(f - r) / (1 + std::abs(r));
    worst = std::max(worst, std::isnan(err) ? std::numeric_limits<double>::infinity() : err);
  }
  return worst;
}

// The SIMD width of T and lengths around it: 1, W - 1, W, W + 1, 2 W + 3.
template <typename T>
std::vector<std::size_t> lengths_around_simd_width() {
  const std::size_t w = detail::Batch<T>::size;
  return {1, w - 1, w, w + 1, 2 * w + 3};
}

template <typename T>
Array<T> random_array(const Shape& shape, Generator& gen, double low = -2, double high = 2) {
  Array<T> a = Array<T>::from_shape(shape);
  for (auto& x : a) x = static_cast<T>(gen.uniform(low, high));
  return a;
}

using OpOf = std::function<Tensor<double>(const std::vector<Tensor<double>>&)>;

// What one run of an op gives: its value and the gradient of every input.
template <typename T>
struct Outcome {
  Array<T> value;
  std::vector<Array<T>> grads;
};

// Runs op on fresh leaves holding `inputs` with the kernel choice `choice`, then its backward
// with the upstream gradient `upstream` (the output's shape).
template <typename T, typename Op>
Outcome<T> run_op(KernelChoice choice, const Op& op, const std::vector<Array<T>>& inputs, const Array<T>& upstream) {
  const KernelChoiceScope scope(choice);
  std::vector<Tensor<T>> leaves;
  for (const Array<T>& a : inputs) leaves.emplace_back(a, true);
  const Tensor<T> y = op(leaves);
  Outcome<T> o{y.value(), {}};
  y.backward(upstream);
  for (const Tensor<T>& leaf : leaves) o.grads.push_back(leaf.grad());
  return o;
}

// The fast and the reference run of op agree on the value and on every gradient.
template <typename T, typename Op>
void check_fast_equals_reference(const std::string& what, const Op& op, const std::vector<Array<T>>& inputs,
                                 Generator& gen) {
  CAPTURE(what);
  Shape out_shape;
  {
    const KernelChoiceScope scope(KernelChoice::fast);
    std::vector<Tensor<T>> leaves;
    for (const Array<T>& a : inputs) leaves.emplace_back(a, false);
    out_shape = op(leaves).shape();
  }
  const Array<T> upstream = random_array<T>(out_shape, gen, -1, 1);
  const Outcome<T> fast = run_op(KernelChoice::fast, op, inputs, upstream);
  const Outcome<T> reference = run_op(KernelChoice::reference, op, inputs, upstream);
  CHECK_MESSAGE(worst_mismatch(fast.value, reference.value) <= tolerance<T>(), "forward differs");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    CAPTURE(i);
    CHECK_MESSAGE(worst_mismatch(fast.grads[i], reference.grads[i]) <= tolerance<T>(), "backward differs");
  }
}

}  // namespace

TEST_CASE_TEMPLATE("kernels: softmax and log_softmax, fast equals reference around the SIMD width, with -inf",
                   T, float, double) {
  Generator gen(101);
  for (std::size_t n : lengths_around_simd_width<T>()) {
    CAPTURE(n);
    // Rows along the last axis: row 0 fully masked, about one entry in five of the others -inf.
    Array<T> x = random_array<T>({4, n}, gen, -4, 4);
    for (std::size_t j = 0; j < n; ++j) x(0, j) = kNegInf<T>;
    for (std::size_t i = 1; i < 4; ++i)
      for (std::size_t j = 0; j + 1 < n; ++j)
        if (gen.uniform01() < 0.2) x(i, j) = kNegInf<T>;
    for (std::ptrdiff_t axis : {std::ptrdiff_t(-1), std::ptrdiff_t(0)}) {
      CAPTURE(axis);
      check_fast_equals_reference<T>("softmax", [axis](const auto& in) { return softmax(in[0], axis); }, {x}, gen);
      check_fast_equals_reference<T>("log_softmax", [axis](const auto& in) { return log_softmax(in[0], axis); }, {x},
                                     gen);
    }
    // A middle axis (rows gathered from strided memory) with large logits.
    const Array<T> y = random_array<T>({2, n, 3}, gen, -30, 30);
    check_fast_equals_reference<T>("softmax axis 1", [](const auto& in) { return softmax(in[0], 1); }, {y}, gen);
    check_fast_equals_reference<T>("log_softmax axis 1", [](const auto& in) { return log_softmax(in[0], 1); }, {y},
                                   gen);
  }
}

TEST_CASE_TEMPLATE("kernels: masked_softmax, fast equals reference and masked_fill then softmax, every mask source",
                   T, float, double) {
  Generator gen(103);
  for (std::size_t S : lengths_around_simd_width<T>()) {
    CAPTURE(S);
    const std::size_t B = 2, H = 3, L = 4;
    auto random_mask = [&](const Shape& shape, double p) {
      MaskArray m = MaskArray::from_shape(shape);
      for (auto& x : m) x = gen.uniform01() < p;
      return m;
    };
    const MaskArray pos = random_mask({L, S}, 0.3), pad = random_mask({B, S}, 0.2);
    const MaskArray any = random_mask({B, 1, L, S}, 0.2), full = random_mask({B, H, L, S}, 0.3);
    const Array<T> x = random_array<T>({B, H, L, S}, gen, -6, 6);
    for (const ScoreMask hide : {ScoreMask{&pos, nullptr, nullptr}, ScoreMask{nullptr, &pad, nullptr},
                                 ScoreMask{&pos, &pad, &any}, ScoreMask{nullptr, nullptr, &full},
                                 ScoreMask{&pos, nullptr, &pos}}) {
      check_fast_equals_reference<T>("masked_softmax", [hide](const auto& in) { return masked_softmax(in[0], hide); },
                                     {x}, gen);
      // The same as hiding with masked_fill on the whole (B, h, L, S) mask, then softmax.
      MaskArray hidden = MaskArray::from_shape({B, H, L, S});
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t i = 0; i < L; ++i)
            for (std::size_t j = 0; j < S; ++j)
              hidden(b, h, i, j) = (hide.positions && (*hide.positions)(i, j)) || (hide.padding && (*hide.padding)(b, j)) ||
                                   (hide.mask == &any && any(b, 0, i, j)) || (hide.mask == &full && full(b, h, i, j)) ||
                                   (hide.mask == &pos && pos(i, j));
      const Tensor<T> leaf(x, false);
      const Array<T> masked = masked_softmax(leaf, hide).value();
      const Array<T> composed = softmax(masked_fill(leaf, hidden, kNegInf<T>), -1).value();
      CHECK(worst_mismatch(masked, composed) <= tolerance<T>());
    }
  }
  // Masks that do not fit the scores are refused, naming both shapes.
  const Tensor<T> scores(Array<T>(xt::zeros<T>({2, 3, 4, 5})), false);
  const MaskArray wrong = MaskArray::from_shape({4, 6}), wrong_pad = MaskArray::from_shape({3, 5});
  CHECK_THROWS_WITH_AS(masked_softmax(scores, ScoreMask{&wrong, nullptr, nullptr}),
                       "masked_softmax: position mask of shape [4, 6] should be [4, 5] for scores [2, 3, 4, 5] (B, h, L, S)",
                       ShapeError);
  CHECK_THROWS_AS(masked_softmax(scores, ScoreMask{nullptr, &wrong_pad, nullptr}), ShapeError);
  CHECK_THROWS_AS(masked_softmax(scores, ScoreMask{nullptr, nullptr, &wrong}), ShapeError);
}

TEST_CASE_TEMPLATE("kernels: cross_entropy, fast equals reference around the SIMD width, with ignored rows", T, float,
                   double) {
  Generator gen(102);
  for (std::size_t C : lengths_around_simd_width<T>()) {
    CAPTURE(C);
    const Array<T> logits = random_array<T>({5, C}, gen, -5, 5);
    IndexArray targets = IndexArray::from_shape({5});
    for (std::size_t n = 0; n < 5; ++n) targets(n) = static_cast<std::int64_t>(gen.below(C));
    targets(2) = -100;  // ignored
    for (T eps : {T(0), T(0.1)}) {
      CAPTURE(eps);
      check_fast_equals_reference<T>(
          "cross_entropy", [&](const auto& in) { return cross_entropy(in[0], targets, -100, eps); }, {logits}, gen);
    }
    const IndexArray none_kept = {-100, -100, -100, -100, -100};
    check_fast_equals_reference<T>(
        "cross_entropy, every row ignored",
        [&](const auto& in) { return cross_entropy(in[0], none_kept, -100, T(0.1)); }, {logits}, gen);
  }
}

TEST_CASE_TEMPLATE("kernels: layer_norm, fast equals reference around the SIMD width, with and without affine", T,
                   float, double) {
  Generator gen(103);
  for (std::size_t D : lengths_around_simd_width<T>()) {
    CAPTURE(D);
    const Array<T> x = random_array<T>({2, 3, D}, gen, -3, 3), w = random_array<T>({D}, gen),
                   b = random_array<T>({D}, gen);
    const T eps = T(1e-5);
    check_fast_equals_reference<T>(
        "layer_norm affine", [eps](const auto& in) { return layer_norm(in[0], in[1], in[2], eps); }, {x, w, b}, gen);
    check_fast_equals_reference<T>(
        "layer_norm weight only", [eps](const auto& in) { return layer_norm(in[0], in[1], Tensor<T>(), eps); }, {x, w},
        gen);
    check_fast_equals_reference<T>(
        "layer_norm plain", [eps](const auto& in) { return layer_norm(in[0], Tensor<T>(), Tensor<T>(), eps); }, {x},
        gen);
    const Array<T> row = random_array<T>({D}, gen);  // a 1-D input: one row
    check_fast_equals_reference<T>(
        "layer_norm 1-D", [eps](const auto& in) { return layer_norm(in[0], in[1], in[2], eps); }, {row, w, b}, gen);
  }
}

TEST_CASE_TEMPLATE("kernels: row_copy copies every length around the SIMD width and the memcpy switch, no further", T,
                   float, double) {
  const std::size_t w = detail::Batch<T>::size;
  for (std::size_t n : {std::size_t(0), std::size_t(1), w - 1, w, w + 1, 3 * w + 2, std::size_t(255), std::size_t(256),
                        std::size_t(257), std::size_t(1000)}) {
    CAPTURE(n);
    std::vector<T> from(n), to(n + 1, T(-7));
    for (std::size_t i = 0; i < n; ++i) from[i] = T(i) + T(0.5);
    detail::row_copy(from.data(), n, to.data());
    CHECK(std::equal(from.begin(), from.end(), to.begin()));
    CHECK(to[n] == T(-7));  // the element after the row is untouched
  }
}

TEST_CASE_TEMPLATE("kernels: row_scale multiplies every length around the SIMD width as the scalar loop does", T, float,
                   double) {
  const std::size_t w = detail::Batch<T>::size;
  const T scale = T(0.3);
  for (std::size_t n : {std::size_t(0), std::size_t(1), w - 1, w, w + 1, 3 * w + 2, std::size_t(257)}) {
    CAPTURE(n);
    std::vector<T> from(n), to(n + 1, T(-7));
    for (std::size_t i = 0; i < n; ++i) from[i] = T(i) / T(7) - T(3);
    detail::row_scale(from.data(), n, scale, to.data());
    for (std::size_t i = 0; i < n; ++i) CHECK(to[i] == from[i] * scale);  // one rounding, bit for bit
    CHECK(to[n] == T(-7));  // the element after the row is untouched
  }
}

TEST_CASE_TEMPLATE("kernels: heads split and merged (permute keeping the last axis), every head size around the SIMD "
                   "width", T, float, double) {
  Generator gen(105);
  for (std::size_t d : lengths_around_simd_width<T>()) {
    CAPTURE(d);
    const std::size_t B = 2, L = 3, H = 4;
    const Array<T> x = random_array<T>({B, L, H, d}, gen);
    const Array<T> y = permute(Tensor<T>(x), {0, 2, 1, 3}).value();  // (B, H, L, d)
    REQUIRE(detail::shape_of(y) == Shape{B, H, L, d});
    bool same = true;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t k = 0; k < d; ++k) same = same && y(b, h, l, k) == x(b, l, h, k);
    CHECK(same);
  }
}

TEST_CASE_TEMPLATE("kernels: matmul and linear, fast equals reference, batched, broadcast and empty", T, float,
                   double) {
  Generator gen(104);
  const auto product = [](const auto& in) { return matmul(in[0], in[1]); };
  for (std::size_t k : lengths_around_simd_width<T>()) {
    CAPTURE(k);
    const std::size_t n = 3, m = k + 2;
    check_fast_equals_reference<T>("matmul 2-D", product, {random_array<T>({n, k}, gen), random_array<T>({k, m}, gen)},
                                   gen);
    check_fast_equals_reference<T>("matmul batch @ matrix", product,
                                   {random_array<T>({2, n, k}, gen), random_array<T>({k, m}, gen)}, gen);
    check_fast_equals_reference<T>("matmul broadcast batches", product,
                                   {random_array<T>({2, 1, n, k}, gen), random_array<T>({3, k, m}, gen)}, gen);
    check_fast_equals_reference<T>("matmul matrix @ batch", product,
                                   {random_array<T>({n, k}, gen), random_array<T>({2, k, m}, gen)}, gen);
    const Array<T> x = random_array<T>({2, n, k}, gen), w = random_array<T>({m, k}, gen), b = random_array<T>({m}, gen);
    check_fast_equals_reference<T>("linear with bias", [](const auto& in) { return linear(in[0], in[1], in[2]); },
                                   {x, w, b}, gen);
    check_fast_equals_reference<T>("linear without bias", [](const auto& in) { return linear(in[0], in[1]); }, {x, w},
                                   gen);
  }
  check_fast_equals_reference<T>("matmul k = 0", product,
                                 {random_array<T>({2, 3, 0}, gen), random_array<T>({0, 4}, gen)}, gen);
  check_fast_equals_reference<T>("matmul n = 0", product,
                                 {random_array<T>({2, 0, 3}, gen), random_array<T>({2, 3, 4}, gen)}, gen);
  const auto affine = [](const auto& in) { return linear(in[0], in[1], in[2]); };
  const std::vector<Array<T>> no_rows{random_array<T>({0, 3}, gen), random_array<T>({4, 3}, gen),
                                      random_array<T>({4}, gen)};
  check_fast_equals_reference<T>("linear, no rows", affine, no_rows, gen);
}

TEST_CASE("kernel choice: names, the scope, and which implementation each choice runs") {
  CHECK(parse_kernel_choice("fast") == KernelChoice::fast);
  CHECK(parse_kernel_choice("course") == KernelChoice::course);
  CHECK(parse_kernel_choice("reference") == KernelChoice::reference);
  CHECK_THROWS_AS(parse_kernel_choice("quick"), ValueError);
  const KernelChoice before = kernel_choice();
  {
    const KernelChoiceScope outer(KernelChoice::reference);
    CHECK(kernel_choice() == KernelChoice::reference);
    {
      const KernelChoiceScope inner(KernelChoice::course);
      CHECK(kernel_choice() == KernelChoice::course);
    }
    CHECK(kernel_choice() == KernelChoice::reference);
  }
  CHECK(kernel_choice() == before);

  // Which one ran shows in the subnormals: the fast softmax flushes them to 0 (row_kernels.hpp),
  // the readable references leave them. x = (0, -69.1): y_1 = exp(-69.1) ~ 1e-30 (a normal float),
  // and dy = (0, 1e-9) makes dx = y * (dy - sum(dy * y)) ~ +-1e-39, subnormal.
  const float tiny = std::numeric_limits<float>::min();
  auto run = [](KernelChoice choice) {
    const KernelChoiceScope scope(choice);
    TensorF x = from_data<float>({0.0f, -69.1f, -95.0f}, {1, 3}, true);
    TensorF y = softmax(x, -1);
    y.backward(Array<float>{{0.0f, 1e-9f, 0.0f}});
    return std::make_pair(y.value(), x.grad());
  };
  const auto [y_fast, dx_fast] = run(KernelChoice::fast);
  const auto [y_course, dx_course] = run(KernelChoice::course);
  const auto [y_reference, dx_reference] = run(KernelChoice::reference);
  CHECK(y_fast(0, 2) == 0.0f);                                      // fast forward: exp(-95) flushed
  CHECK(y_course(0, 2) == 0.0f);                                    // course: the forward is no task, fast
  CHECK((y_reference(0, 2) > 0.0f && y_reference(0, 2) < tiny));    // reference forward: kept
  CHECK(dx_fast(0, 1) == 0.0f);                                     // fast backward: flushed
  CHECK((dx_course(0, 1) != 0.0f && std::abs(dx_course(0, 1)) < tiny));  // course: task 0.6's region ran
}
}  // namespace test_kernels_match_reference
