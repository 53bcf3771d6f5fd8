// Tensor basics: factories, shapes, printing, casting, the seeded generator.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "headlab/headlab.hpp"

namespace test_tensor {

using namespace headlab;

TEST_CASE("tensor: factories fill the requested shape") {
  CHECK(zeros<float>({2, 3}).shape() == Shape{2, 3});
  CHECK(xt::all(xt::equal(zeros<float>({2, 3}).value(), 0.0f)));
  CHECK(xt::all(xt::equal(ones<double>({4}).value(), 1.0)));
  CHECK(xt::all(xt::equal(full<double>({2, 2}, 7.5).value(), 7.5)));
  const TensorD r = arange<double>(5.0);
  CHECK(r.shape() == Shape{5});
  CHECK(r.value()(4) == 4.0);
  const TensorD r2 = arange<double>(1.0, 2.0, 0.25);
  CHECK(r2.shape() == Shape{4});
  CHECK(r2.value()(3) == doctest::Approx(1.75));
  CHECK(arange<double>(3.0, 1.0).numel() == 0);
  const TensorF d = from_data<float>({1, 2, 3, 4, 5, 6}, {2, 3}, true);
  CHECK(d.value()(1, 0) == 4.0f);
  CHECK(d.requires_grad());
  CHECK(d.dim() == 2);
  CHECK(d.size(-1) == 3);
  CHECK(d.op() == "leaf");
}

TEST_CASE("tensor: uniform and normal are seeded and have the right moments") {
  Generator g1(123), g2(123), g3(124);
  const TensorD a = uniform<double>({1000}, -2.0, 3.0, g1);
  const TensorD b = uniform<double>({1000}, -2.0, 3.0, g2);
  const TensorD c = uniform<double>({1000}, -2.0, 3.0, g3);
  CHECK(xt::all(xt::equal(a.value(), b.value())));
  CHECK_FALSE(xt::all(xt::equal(a.value(), c.value())));
  CHECK(xt::amin(a.value())() >= -2.0);
  CHECK(xt::amax(a.value())() < 3.0);
  Generator g4(5);
  const TensorD n = normal<double>({20000}, 1.0, 2.0, g4);
  const double m = xt::mean(n.value())();
  const double sd = std::sqrt(xt::variance(n.value())());
  // Standard errors: 2/sqrt(20000) = 0.014 for the mean; ~0.01 for the sd.
  CHECK(std::abs(m - 1.0) < 0.06);
  CHECK(std::abs(sd - 2.0) < 0.05);
}

TEST_CASE("tensor: printing shows shape, op and values") {
  std::ostringstream os;
  os << from_data<double>({1.5, -2, 3, 4}, {2, 2});
  const std::string s = os.str();
  CHECK(s.find("shape=[2, 2]") != std::string::npos);
  CHECK(s.find("op=leaf") != std::string::npos);
  CHECK(s.find("1.5") != std::string::npos);
  CHECK(s.find("-2") != std::string::npos);
  std::ostringstream empty;
  empty << TensorD();
  CHECK(empty.str() == "Tensor(undefined)");
}

TEST_CASE("tensor: cast between float and double keeps values") {
  const TensorD d = from_data<double>({0.1, 0.25}, {2}, true);
  const TensorF f = cast<float>(d);
  CHECK(f.value()(0) == 0.1f);
  CHECK(f.requires_grad());
  CHECK(cast<double>(f).value()(1) == 0.25);
}

TEST_CASE("generator: below() is uniform over its range and never reaches n") {
  Generator g(9);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const auto v = g.below(7);
    REQUIRE(v < 7);
    counts[v]++;
  }
  for (int c : counts) CHECK(std::abs(c - 1000) < 150);
}
}  // namespace test_tensor
