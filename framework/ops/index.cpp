// ops/index.cpp: embedding lookup, gather, masked_fill, where.
//
// Index arguments are IndexArray (int64) and masks MaskArray (bool); they are
// not differentiable. Every index is range-checked before use.
#include "headlab/ops/ops.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

// y[i.., :] = weight[ids[i..], :]     weight (V, D), ids (S...) -> y (S..., D)
// dweight[v, :] = sum over positions i with ids[i] == v of dy[i, :]   (scatter-add)
template <typename T>
Tensor<T> embedding(const Tensor<T>& weight, const IndexArray& ids) {
  const Shape w = weight.shape();
  if (w.size() != 2) throw ShapeError("embedding: weight must be (V, D), got " + shape_str(w));
  const std::size_t V = w[0], D = w[1];
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = ids.data()[i];
    if (id < 0 || static_cast<std::size_t>(id) >= V) {
      throw IndexError("embedding: id " + std::to_string(id) + " at flat position " + std::to_string(i) +
                       " of ids " + shape_str(detail::shape_of(ids)) + " is outside the vocabulary [0, " +
                       std::to_string(V) + ")");
    }
  }
  Shape out = detail::shape_of(ids);
  out.push_back(D);
  Array<T> y = detail::empty_array<T>(out);
  const T* src = weight.value().data();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::copy_n(src + static_cast<std::size_t>(ids.data()[i]) * D, D, y.data() + i * D);
  }
  return make_result<T>("embedding", std::move(y), {weight}, [ids, V, D](Node<T>& node) {
    Array<T> g = xt::zeros<T>(Shape{V, D});
    const T* dy = node.grad.data();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      T* row = g.data() + static_cast<std::size_t>(ids.data()[i]) * D;
      for (std::size_t d = 0; d < D; ++d) row[d] += dy[i * D + d];
    }
    accumulate_grad(*node.inputs[0], std::move(g), "embedding");
  }, ValueUse::nothing());
}

// torch.gather along `axis`: index has x's rank and, on every other axis, a
// size no larger than x's; y has index's shape and
//   y[..., j, ...] = x[..., index[..., j, ...], ...]   (j on `axis`)
// dx[..., index[..., j, ...], ...] += dy[..., j, ...]
template <typename T>
Tensor<T> gather(const Tensor<T>& x, std::ptrdiff_t axis, const IndexArray& index) {
  const Shape xs = x.shape();
  const Shape is = detail::shape_of(index);
  const std::size_t a = detail::normalize_axis(axis, xs.size(), "gather", xs);
  bool ok = is.size() == xs.size();
  for (std::size_t d = 0; ok && d < xs.size(); ++d) ok = d == a || is[d] <= xs[d];
  if (!ok) {
    throw ShapeError("gather: index of shape " + shape_str(is) + " does not fit input of shape " + shape_str(xs) +
                     " along axis " + std::to_string(axis));
  }
  // Offset in x of each element of index, with the index's own value on `axis`.
  const std::vector<std::size_t> x_strides = detail::row_major_strides(xs);
  std::vector<std::size_t> strides = x_strides;
  strides[a] = 0;
  std::vector<std::size_t> offsets(index.size());
  const std::int64_t* idx = index.data();
  detail::for_each_strided(is, strides, [&](std::size_t i, std::size_t base) {
    const std::int64_t v = idx[i];
    if (v < 0 || static_cast<std::size_t>(v) >= xs[a]) {
      throw IndexError("gather: index value " + std::to_string(v) + " at flat position " + std::to_string(i) +
                       " is outside [0, " + std::to_string(xs[a]) + ") for axis " + std::to_string(axis) +
                       " of shape " + shape_str(xs));
    }
    offsets[i] = base + static_cast<std::size_t>(v) * x_strides[a];
  });
  Array<T> y = detail::empty_array<T>(is);
  const T* src = x.value().data();
  for (std::size_t i = 0; i < offsets.size(); ++i) y.data()[i] = src[offsets[i]];
  return make_result<T>("gather", std::move(y), {x}, [xs, offsets = std::move(offsets)](Node<T>& node) {
    Array<T> g = xt::zeros<T>(xs);
    for (std::size_t i = 0; i < offsets.size(); ++i) g.data()[offsets[i]] += node.grad.data()[i];
    accumulate_grad(*node.inputs[0], std::move(g), "gather");
  });
}

namespace {
// The mask broadcast to `shape`, as one byte per element of the output.
std::vector<unsigned char> expand_mask(const MaskArray& mask, const Shape& shape, const char* op) {
  const Shape ms = detail::shape_of(mask);
  if (ms.size() > shape.size() || detail::broadcast_shapes(ms, shape, op) != shape) {
    throw ShapeError(std::string(op) + ": mask of shape " + shape_str(ms) + " does not broadcast to " +
                     shape_str(shape));
  }
  std::vector<unsigned char> out(detail::numel_of(shape));
  const bool* m = mask.data();
  detail::for_each_broadcast(ms, shape, [&](std::size_t i, std::size_t j) { out[i] = m[j] ? 1 : 0; });
  return out;
}
}  // namespace

// y = value where mask else x   (mask broadcasts to x);  dx = dy where !mask else 0
template <typename T>
Tensor<T> masked_fill(const Tensor<T>& x, const MaskArray& mask, T value) {
  std::vector<unsigned char> m = expand_mask(mask, x.shape(), "masked_fill");
  Array<T> y = x.value();
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i]) y.data()[i] = value;
  return make_result<T>("masked_fill", std::move(y), {x}, [m = std::move(m)](Node<T>& node) {
    Array<T> g = detail::pass_on_grad(node);
    for (std::size_t i = 0; i < m.size(); ++i)
      if (m[i]) g.data()[i] = T(0);
    accumulate_grad(*node.inputs[0], std::move(g), "masked_fill");
  }, ValueUse::nothing());
}

// y = a where cond else b   (all three broadcast together)
// da = unbroadcast(dy where cond else 0, A), db = unbroadcast(dy where !cond else 0, B)
template <typename T>
Tensor<T> where(const MaskArray& cond, const Tensor<T>& a, const Tensor<T>& b) {
  const Shape ab = detail::broadcast_shapes(a.shape(), b.shape(), "where");
  const Shape out = detail::broadcast_shapes(detail::shape_of(cond), ab, "where");
  std::vector<unsigned char> m = expand_mask(cond, out, "where");
  Array<T> av = xt::broadcast(a.value(), out);
  Array<T> bv = xt::broadcast(b.value(), out);
  Array<T> y = detail::empty_array<T>(out);
  for (std::size_t i = 0; i < m.size(); ++i) y.data()[i] = m[i] ? av.data()[i] : bv.data()[i];
  return make_result<T>("where", std::move(y), {a, b}, [m = std::move(m)](Node<T>& node) {
    for (std::size_t input = 0; input < 2; ++input) {
      if (!wants_grad(node, input)) continue;
      const bool take_when = input == 0;  // a takes the true positions, b the false ones
      Array<T> g = node.grad;
      for (std::size_t i = 0; i < m.size(); ++i)
        if (static_cast<bool>(m[i]) != take_when) g.data()[i] = T(0);
      accumulate_grad(*node.inputs[input], detail::unbroadcast(g, node.inputs[input]->shape()),
                      "where");
    }
  });
}

#define INSTANTIATE(T)                                                                 \
  template Tensor<T> embedding<T>(const Tensor<T>&, const IndexArray&);                \
  template Tensor<T> gather<T>(const Tensor<T>&, std::ptrdiff_t, const IndexArray&);   \
  template Tensor<T> masked_fill<T>(const Tensor<T>&, const MaskArray&, T);            \
  template Tensor<T> where<T>(const MaskArray&, const Tensor<T>&, const Tensor<T>&);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace headlab
