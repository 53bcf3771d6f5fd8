// Process settings (denormal flushing) and the vectorised row kernels behind softmax,
// cross_entropy and layer_norm, checked against plain scalar loops.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <doctest/doctest.h>

#include "headlab/headlab.hpp"
#include "ops/kernels/row_kernels.hpp"
#include "headlab/core/shape_utils.hpp"

namespace test_runtime {

using namespace headlab;

TEST_CASE("set_flush_denormal: subnormal results become zero only while it is on") {
  volatile float tiny = std::numeric_limits<float>::min();  // 1.18e-38, the smallest normal float
  volatile float half = 0.5f;
  CHECK(tiny * half > 0.0f);  // a subnormal by default
  REQUIRE(set_flush_denormal(true));
  CHECK(tiny * half == 0.0f);
  volatile float sub = std::numeric_limits<float>::denorm_min();
  CHECK(sub * 1.0f == 0.0f);  // a subnormal input reads as zero
  REQUIRE(set_flush_denormal(false));
  CHECK(tiny * half > 0.0f);
  CHECK(sub * 1.0f > 0.0f);
}

TEST_CASE_TEMPLATE("row kernels agree with scalar loops for every length around the SIMD width", T, float, double) {
  Generator gen(3);
  for (std::size_t n = 0; n <= 3 * detail::Batch<T>::size + 1; ++n) {
    CAPTURE(n);
    std::vector<T> a(n), b(n), out(n);
    for (std::size_t j = 0; j < n; ++j) {
      a[j] = static_cast<T>(gen.uniform01() * 8 - 4);
      b[j] = static_cast<T>(gen.uniform01() * 2 - 1);
    }
    T max = -std::numeric_limits<T>::infinity(), sum = 0, dot = 0, exp_sum = 0;
    for (std::size_t j = 0; j < n; ++j) {
      max = std::max(max, a[j]);
      sum += a[j];
      dot += a[j] * b[j];
    }
    const T tol = std::is_same_v<T, float> ? T(1e-5) : T(1e-13);
    CHECK(detail::row_max(a.data(), n) == max);
    CHECK(detail::row_sum(a.data(), n) == doctest::Approx(sum).epsilon(tol).scale(4.0 * n + 1));
    CHECK(detail::row_dot(a.data(), b.data(), n) == doctest::Approx(dot).epsilon(tol).scale(4.0 * n + 1));
    const T total = detail::row_exp_shifted(a.data(), T(1.5), out.data(), n);
    for (std::size_t j = 0; j < n; ++j) {
      CHECK(out[j] == doctest::Approx(std::exp(a[j] - T(1.5))).epsilon(tol));
      exp_sum += std::exp(a[j] - T(1.5));
    }
    CHECK(total == doctest::Approx(exp_sum).epsilon(tol));
  }
}

TEST_CASE("flush_subnormals zeroes subnormals only, and softmax and its backward hand out none") {
  const float tiny = std::numeric_limits<float>::min();
  std::vector<float> x{tiny, tiny / 4, -tiny / 4, std::numeric_limits<float>::denorm_min(), 0.5f,
                       -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  detail::flush_subnormals(x.data(), x.size());
  CHECK(x[0] == tiny);
  CHECK(x[1] == 0.0f);
  CHECK(x[2] == 0.0f);
  CHECK(x[3] == 0.0f);
  CHECK(x[4] == 0.5f);
  CHECK(std::isinf(x[5]));
  CHECK(std::isnan(x[6]));  // a NaN is not hidden

  // exp(-95) ~ 5e-42 is subnormal in float: the weight comes out as exactly 0. (The fast kernels
  // flush; the readable references, HEADLAB_KERNELS=reference, do not.)
  const KernelChoiceScope fast_kernels(KernelChoice::fast);
  TensorF scores = from_data<float>({0.0f, -95.0f, -1.0f}, {1, 3}, true);
  TensorF y = softmax(scores, -1);
  CHECK(y.value()(0, 1) == 0.0f);
  CHECK(y.value()(0, 0) == doctest::Approx(1.0f / (1.0f + std::exp(-1.0f))));
  sum(mul(y, from_data<float>({1.0f, 2.0f, 3.0f}, {1, 3})), {}, false).backward();
  for (float g : scores.grad()) CHECK((g == 0.0f || std::abs(g) >= tiny));
  CHECK(scores.grad()(0, 1) == 0.0f);
}

TEST_CASE("buffer pool: freed tensor storage is handed out again, aligned, and the cache stays bounded") {
  if (!buffer_pool_enabled()) {  // sanitizer build: blocks go straight back to the system
    Array<float> a = detail::empty_array<float>({256, 64});
    CHECK(reinterpret_cast<std::uintptr_t>(a.data()) % 64 == 0);
    CHECK(buffer_pool_stats().cached_bytes == 0);
    return;
  }
  buffer_pool_release();
  const BufferPoolStats before = buffer_pool_stats();
  CHECK(before.cached_bytes == 0);
  const float* first_data = nullptr;
  {
    Array<float> a = detail::empty_array<float>({256, 64});  // 64 KiB: pooled
    first_data = a.data();
    CHECK(reinterpret_cast<std::uintptr_t>(a.data()) % 64 == 0);
    CHECK(buffer_pool_stats().in_use_bytes >= before.in_use_bytes + 256 * 64 * sizeof(float));
  }
  const BufferPoolStats freed = buffer_pool_stats();
  CHECK(freed.cached_bytes >= 256 * 64 * sizeof(float));
  CHECK(freed.cached_bytes <= freed.peak_in_use_bytes);
  {
    Array<float> b = detail::empty_array<float>({64, 250});  // 62.5 KiB: the same size class
    CHECK(b.data() == first_data);
    CHECK(buffer_pool_stats().hits == freed.hits + 1);
  }
  {
    Array<float> small = detail::empty_array<float>({8});  // under 4 KiB: plain malloc, never cached
    CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % 64 == 0);
  }
  CHECK(buffer_pool_stats().cached_bytes == freed.cached_bytes);
  // Impossible sizes are refused, and leave the accounting alone.
  const std::size_t peak = buffer_pool_stats().peak_in_use_bytes;
  // (OutOfMemory names the size; a bare std::bad_alloc would reach the user without it.)
  CHECK_THROWS_WITH_AS(detail::pool_allocate(std::numeric_limits<std::size_t>::max()),
                       doctest::Contains("a tensor buffer of 18446744073709551615 bytes"), OutOfMemory);
  CHECK_THROWS_WITH_AS(PoolAllocator<float>().allocate(std::numeric_limits<std::size_t>::max() / 2),
                       doctest::Contains("floats"), OutOfMemory);
  CHECK(buffer_pool_stats().peak_in_use_bytes == peak);
  buffer_pool_release();
  CHECK(buffer_pool_stats().cached_bytes == 0);
}
}  // namespace test_runtime
