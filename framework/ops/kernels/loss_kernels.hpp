// loss_kernels.hpp (internal): the fast cross-entropy, its log-softmax done with the SIMD row
// kernels of row_kernels.hpp. The readable version, with the formulas, is in ops/loss.cpp.
//
//   logits (N, C), targets (N) -> the mean loss over the kept targets (those != ignore_index)
//   and dloss/dlogits (N, C), the gradient for an upstream gradient of 1 (0 on ignored rows).
#pragma once

#include <cstdint>

#include "headlab/core/tensor.hpp"

namespace headlab::kernels {

template <typename T>
struct CrossEntropyResult {
  T loss = 0;
  Array<T> dlogits;  // (N, C)
};

template <typename T>
CrossEntropyResult<T> cross_entropy(const Array<T>& logits, const IndexArray& targets, std::int64_t ignore_index,
                                    T label_smoothing);

}  // namespace headlab::kernels
