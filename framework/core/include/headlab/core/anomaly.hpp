// headlab/core/anomaly.hpp: finding the op where a NaN or an infinity first appears.
//
// While anomaly detection is on (a debugging mode: it scans every value), each op's
// forward output and, during backward, each op's input gradients are checked:
//   forward:  the output holds a NaN, +inf or -inf that none of the op's inputs held
//             (masked_fill and where are allowed to place +-inf: masks use -inf);
//   backward: a gradient holds a NaN or an infinity (gradients must be finite), where
//             backward adds it: the input's own, or a data-parallel part's copy of a
//             parameter's (headlab/core/data_parallel.hpp), and then the parts' sum.
// The first op that breaks the rule throws NumericalError naming the op, the kind
// of value, where it is, and the shapes of the op's inputs.
#pragma once

#include "headlab/core/errors.hpp"
#include "headlab/core/tensor.hpp"

namespace headlab {

void set_anomaly_detection(bool on);
bool anomaly_detection_enabled();

// Turns detection on for a scope, restoring the previous setting after.
class AnomalyGuard {
 public:
  AnomalyGuard();
  ~AnomalyGuard();
  AnomalyGuard(const AnomalyGuard&) = delete;
  AnomalyGuard& operator=(const AnomalyGuard&) = delete;

 private:
  bool previous_;
};

namespace detail {
// Called by make_result and by the backward pass when detection is on.
template <typename T>
void check_forward_anomaly(const char* op, const Array<T>& output, const std::vector<Tensor<T>>& inputs);
template <typename T>
void check_backward_anomaly(const Node<T>& node);
// Called after a data-parallel step adds a part's gradient of leaf number `leaf` (its index among the
// step's parameters) to what the leaf held: the sum of finite parts can overflow (NumericalError
// naming the leaf and the element).
template <typename T>
void check_gradient_sum_anomaly(const Array<T>& sum, std::size_t leaf);
}  // namespace detail

}  // namespace headlab
