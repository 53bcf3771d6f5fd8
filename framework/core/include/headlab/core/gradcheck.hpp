// headlab/core/gradcheck.hpp: compare backward() with central differences, in float64.
//
// For inputs x_1..x_n and y = f(x_1..x_n), gradcheck draws a fixed random
// upstream gradient w of y's shape and compares, for every element j of every
// input i that requires grad,
//   analytic  d(sum(w * y))/d x_i[j]  from y.backward(w)
//   numeric   (L(x_i[j] + eps) - L(x_i[j] - eps)) / (2 eps)
// with |analytic - numeric| <= atol + rtol * |numeric|. It also checks that each
// gradient has exactly its input's shape.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-6;
  double rtol = 1e-5;
  unsigned seed = 1234;  // for the upstream gradient w
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // on failure: op, input, element index, expected, received
  double max_abs_error = 0.0;
};

using GradcheckFn = std::function<TensorD(const std::vector<TensorD>&)>;

// `name` labels the check in messages (usually the op name).
GradcheckResult gradcheck(const std::string& name, const GradcheckFn& f, const std::vector<TensorD>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace headlab
