// safetensors_internal.hpp (internal): what safetensors.cpp (TensorFile, writing) and
// safetensors_read.cpp (reading) share.
#pragma once

#include <cstdint>
#include <limits>

#include <nlohmann/json.hpp>

#include "headlab/core/shape_utils.hpp"

namespace headlab::detail {

// The data buffer is little-endian; on a little-endian machine (x86-64,
// AArch64) the bytes of a float in memory are exactly its bytes in the file,
// so memcpy converts in both directions.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors assumes a little-endian machine");

// ordered_json keeps keys in insertion order, so the header we write lists
// the tensors in the order of the data buffer (easier to read in a hex dump).
using ojson = nlohmann::ordered_json;

// prod(shape), or false when it does not fit in 64 bits. Zero dimensions are
// skipped in the overflow test, so [0, 2^40, 2^40] is rejected just as
// [2^40, 2^40] is: no shape accepted here can overflow xtensor's strides.
inline bool checked_numel(const Shape& shape, std::uint64_t& numel) {
  std::uint64_t nonzero_product = 1;
  bool has_zero = false;
  for (std::size_t d : shape) {
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (nonzero_product > std::numeric_limits<std::uint64_t>::max() / d) return false;
    nonzero_product *= d;
  }
  numel = has_zero ? 0 : nonzero_product;
  return true;
}

}  // namespace headlab::detail
