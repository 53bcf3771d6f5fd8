// attention/cache.cpp: the per-layer KV cache for incremental decoding.
//
// Entries are kept in order of position. Without a window the cache only
// grows. With a window W and k sinks it keeps the entries at positions < k
// plus the newest W others, evicting the oldest non-sink entry first: exactly
// the keys a query at the newest position may still see.
#include <algorithm>

#include "headlab/attention/attention.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

template <typename T>
std::size_t KVCache<T>::elements_per_token() const {
  return per_token_;
}

template <typename T>
std::size_t KVCache<T>::stored_elements() const {
  return first_.size() + second_.size();
}

template <typename T>
void KVCache<T>::clear() {
  first_ = Array<T>();
  second_ = Array<T>();
  positions_.clear();
  length_ = 0;
  per_token_ = 0;
}

namespace {
// a (B, ...) -> (rows.size(), ...) with result[i] = a[rows[i]]; contiguous row copies.
template <typename T>
Array<T> take_rows(const Array<T>& a, const std::vector<std::size_t>& rows) {
  Shape shape = detail::shape_of(a);
  const std::size_t batch = shape.at(0), row_size = batch ? a.size() / batch : 0;
  shape[0] = rows.size();
  Array<T> out = Array<T>::from_shape(shape);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] >= batch)
      throw IndexError("KVCache::select_rows: row " + std::to_string(rows[i]) + " of a cache with batch " +
                       std::to_string(batch));
    std::copy_n(a.data() + rows[i] * row_size, row_size, out.data() + i * row_size);
  }
  return out;
}
}  // namespace

template <typename T>
void KVCache<T>::select_rows(const std::vector<std::size_t>& rows) {
  if (positions_.empty()) return;  // nothing stored yet
  first_ = take_rows(first_, rows);
  second_ = take_rows(second_, rows);
}

template <typename T>
void KVCache<T>::append(const Array<T>& first, const Array<T>& second, std::size_t time_axis, std::size_t window,
                        std::size_t sinks) {
  NoGradGuard no_grad;  // the cache holds plain values
  const Shape fs = detail::shape_of(first);
  const std::size_t n = fs.at(time_axis);
  if (detail::shape_of(second).at(time_axis) != n) {
    throw ShapeError("KVCache: the two arrays appended disagree on the number of tokens");
  }
  const std::size_t batch = fs.at(0);
  if (n > 0) per_token_ = (first.size() + second.size()) / (n * std::max<std::size_t>(1, batch));
  const auto axis = static_cast<std::ptrdiff_t>(time_axis);
  if (positions_.empty()) {
    first_ = first;
    second_ = second;
  } else {
    first_ = concat<T>({Tensor<T>(first_), Tensor<T>(first)}, axis).value();
    second_ = concat<T>({Tensor<T>(second_), Tensor<T>(second)}, axis).value();
  }
  for (std::size_t i = 0; i < n; ++i) positions_.push_back(static_cast<std::int64_t>(length_ + i));
  length_ += n;

  if (window > 0) {
    // Positions are sorted: the first `kept_sinks` entries are sinks, keep them and the newest `window` others.
    const auto kept_sinks = static_cast<std::size_t>(
        std::count_if(positions_.begin(), positions_.end(), [&](std::int64_t p) { return p < std::int64_t(sinks); }));
    const std::size_t others = positions_.size() - kept_sinks;
    if (others > window) {
      const std::size_t drop = others - window;
      auto keep = [&](const Array<T>& a) {
        return concat<T>({narrow(Tensor<T>(a), axis, 0, kept_sinks), narrow(Tensor<T>(a), axis, kept_sinks + drop, window)},
                         axis)
            .value();
      };
      first_ = keep(first_);
      second_ = keep(second_);
      positions_.erase(positions_.begin() + static_cast<std::ptrdiff_t>(kept_sinks),
                       positions_.begin() + static_cast<std::ptrdiff_t>(kept_sinks + drop));
    }
  }
}

template class KVCache<float>;
template class KVCache<double>;

}  // namespace headlab
