#include "headlab/core/shape_utils.hpp"

#include <algorithm>
#include <sstream>

namespace headlab {

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

namespace detail {

std::size_t numel_of(const Shape& shape) {
  std::size_t n = 1;
  for (std::size_t s : shape) n *= s;
  return n;
}

std::vector<std::size_t> row_major_strides(const Shape& shape) {
  std::vector<std::size_t> strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::size_t normalize_axis(std::ptrdiff_t axis, std::size_t rank, const char* op, const Shape& shape) {
  const auto r = static_cast<std::ptrdiff_t>(rank);
  if (axis < -r || axis >= r) {
    throw ShapeError(std::string(op) + ": axis " + std::to_string(axis) + " out of range for shape " +
                     shape_str(shape) + " (rank " + std::to_string(rank) + ")");
  }
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::vector<std::size_t> normalize_axes(const std::vector<std::ptrdiff_t>& axes, std::size_t rank, const char* op,
                                        const Shape& shape) {
  std::vector<std::size_t> out;
  if (axes.empty()) {
    for (std::size_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (auto a : axes) out.push_back(normalize_axis(a, rank, op, shape));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw ShapeError(std::string(op) + ": repeated axis for shape " + shape_str(shape));
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    // Align from the right: missing leading dims count as 1.
    const std::size_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::size_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(std::string(op) + ": cannot broadcast shapes " + shape_str(a) + " and " + shape_str(b));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<std::size_t> broadcast_strides(const Shape& in, const Shape& out) {
  const std::size_t lead = out.size() - in.size();
  const std::vector<std::size_t> in_strides = row_major_strides(in);
  std::vector<std::size_t> strides(out.size(), 0);
  for (std::size_t d = 0; d < in.size(); ++d) {
    strides[lead + d] = (in[d] == 1 && out[lead + d] != 1) ? 0 : in_strides[d];
  }
  return strides;
}

template <typename T>
Array<T> unbroadcast(const Array<T>& grad, const Shape& target) {
  const Shape out = shape_of(grad);
  if (out == target) return grad;
  Array<T> reduced = xt::zeros<T>(target);
  T* dst = reduced.data();
  const T* src = grad.data();
  for_each_broadcast(target, out, [&](std::size_t i, std::size_t j) { dst[j] += src[i]; });
  return reduced;
}

AxisSplit split_at_axis(const Shape& shape, std::size_t axis) {
  AxisSplit s;
  for (std::size_t d = 0; d < axis; ++d) s.outer *= shape[d];
  s.size = shape[axis];
  for (std::size_t d = axis + 1; d < shape.size(); ++d) s.inner *= shape[d];
  return s;
}

#define INSTANTIATE(T) template Array<T> unbroadcast<T>(const Array<T>&, const Shape&);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace detail
}  // namespace headlab
