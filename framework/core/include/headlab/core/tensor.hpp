// headlab/core/tensor.hpp: the N-d tensor and the node of the autograd graph.
//
// A Tensor<T> is a handle (shared pointer) to a Node<T>. The node holds
//   value  : the data, an xt::xarray<T> in row-major order,
//   grad   : dL/dvalue, same shape as value, filled by backward(),
//   inputs : the nodes this one was computed from (the graph edges),
//   backward_fn : adds this node's contribution to its inputs' grads.
// Ops build the graph as they run (a "dynamic graph"); backward() walks it
// in reverse topological order. T is float (training) or double (gradcheck):
// every op is written once as a template and explicitly instantiated for both.
#pragma once
#include <atomic>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>

#include "headlab/core/buffer_pool.hpp"
#include "headlab/core/errors.hpp"

namespace headlab {

using Shape = std::vector<std::size_t>;
// Tensor storage: row-major, from the buffer pool (headlab/core/buffer_pool.hpp).
template <typename T>
using Array = xt::xarray<T, xt::layout_type::row_major, PoolAllocator<T>>;
using IndexArray = Array<std::int64_t>;  // token ids, targets
using MaskArray = Array<bool>;          // true = masked

template <typename T>
struct Node {
  Array<T> value;
  Array<T> grad;              // meaningful only when has_grad
  bool has_grad = false;
  bool requires_grad = false;
  bool retains_grad = false;  // keep grad of a non-leaf after backward (for inspection)
  bool released = false;      // graph freed by a backward without retain_graph
  std::string op = "leaf";
  std::vector<std::shared_ptr<Node>> inputs;
  // Reads this->grad (dL/d output) and accumulates into inputs[i]->grad.
  std::function<void(Node&)> backward_fn;

  // Memory (what PyTorch calls saved tensors): the value of a non-leaf is freed as soon as no
  // Tensor handle refers to the node and no backward still to run reads it. Each op declares
  // what its backward reads (ValueUse); a reshape, split or add keeps nothing alive, a linear
  // keeps its input, a relu its output.
  // Atomic: the parameters' nodes are shared by the graphs of a data-parallel step, built on
  // several threads at once (headlab/core/data_parallel.hpp).
  std::atomic<int> handles{0};        // live Tensor handles to this node
  std::atomic<int> value_readers{0};  // recorded consumers whose backward reads this value
  bool backward_reads_value = true;   // this node's own backward reads its value
  bool value_freed = false;
  Shape freed_shape;                  // the value's shape, kept after the value is freed
  Shape shape() const;                // the value's shape, also after it is freed
  void free_value_if_unused() noexcept;

  bool is_leaf() const { return inputs.empty() && !backward_fn && !released; }
  // Destroys long chains iteratively: a 100 000-node graph must not recurse.
  ~Node();
};

template <typename T>
class Tensor {
 public:
  using Scalar = T;

  Tensor() = default;  // an undefined tensor; defined() is false
  explicit Tensor(Array<T> value, bool requires_grad = false);
  // Handles are counted (Node::handles) so that values nobody can reach again are freed.
  Tensor(const Tensor& other) : node_(other.node_) { add_handle(); }
  Tensor(Tensor&& other) noexcept : node_(std::move(other.node_)) {}
  Tensor& operator=(const Tensor& other) {
    if (this != &other) {
      drop_handle();
      node_ = other.node_;
      add_handle();
    }
    return *this;
  }
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      drop_handle();
      node_ = std::move(other.node_);
    }
    return *this;
  }
  ~Tensor() { drop_handle(); }

  bool defined() const { return node_ != nullptr; }
  const Array<T>& value() const;
  Array<T>& mutable_value();  // in-place edits of a leaf (optimisers, init); not tracked
  const Array<T>& grad() const;  // throws if backward has not reached this tensor
  bool has_grad() const;
  Shape shape() const;
  std::size_t dim() const;
  std::size_t numel() const;
  std::size_t size(std::ptrdiff_t axis) const;  // negative axis counts from the end
  T item() const;  // the single element of a one-element tensor
  const std::string& op() const;

  bool requires_grad() const;
  Tensor& set_requires_grad(bool flag);  // leaves only
  Tensor& retain_grad();                 // keep this non-leaf's grad after backward

  // Reverse-mode pass. Without an argument the tensor must hold one element
  // (dL/dL = 1). Gradients accumulate (+=) into every tensor that requires grad.
  // The graph is freed afterwards unless retain_graph is true.
  void backward(bool retain_graph = false) const;
  void backward(const Array<T>& upstream, bool retain_graph = false) const;
  void zero_grad() const;  // forget the accumulated gradient

  Tensor detach() const;  // same value, no history, requires_grad false

  const std::shared_ptr<Node<T>>& node() const { return node_; }
  static Tensor from_node(std::shared_ptr<Node<T>> node);

 private:
  void add_handle() {
    if (node_) ++node_->handles;
  }
  void drop_handle() noexcept {
    if (node_ && --node_->handles == 0) node_->free_value_if_unused();
    node_.reset();
  }
  std::shared_ptr<Node<T>> node_;
};

using TensorF = Tensor<float>;
using TensorD = Tensor<double>;

// ---- Gradient mode --------------------------------------------------------
// While a NoGradGuard lives, ops record no graph (inference, optimiser steps).
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// ---- Building op results (used by every op) -------------------------------
// What an op's backward reads besides dL/d output: which inputs' values (bit i = input i) and
// whether its own output value. The default, everything, is always safe; ops that read less
// declare it, so that the values they do not need can be freed during the forward pass.
struct ValueUse {
  std::uint32_t inputs = ~0u;
  bool output = true;
  static ValueUse nothing() { return {0u, false}; }
  static ValueUse own_output() { return {0u, true}; }
  static ValueUse inputs_only(std::uint32_t bits) { return {bits, false}; }
};

// Creates the output node of `op`. If grad mode is on and some input requires
// grad, the node records its inputs and backward_fn (and, per `use`, which values
// that backward will read); otherwise it is a plain constant and backward_fn is dropped.
template <typename T>
Tensor<T> make_result(const char* op, Array<T> value, std::vector<Tensor<T>> inputs,
                      std::function<void(Node<T>&)> backward_fn, ValueUse use = {});

// Adds `contribution` (dL/d input, exactly the input's shape) to input's grad.
// Throws GradientShapeError naming `op` when a backward got a shape wrong.
template <typename T>
void accumulate_grad(Node<T>& input, Array<T>&& contribution, const std::string& op);
// For a backward that adds into the gradient in place: the buffer accumulate_grad would add input's
// next contribution to (its grad, or a data-parallel part's copy of it: headlab/core/data_parallel.hpp),
// or nullptr when there is none yet (then call accumulate_grad).
template <typename T>
Array<T>* grad_to_add_into(Node<T>& input);
template <typename T>
inline bool wants_grad(const Node<T>& out, std::size_t i) {
  return out.inputs[i]->requires_grad;
}

// ---- Factories ------------------------------------------------------------
class Generator;
template <typename T> Tensor<T> zeros(const Shape& shape, bool requires_grad = false);
template <typename T> Tensor<T> ones(const Shape& shape, bool requires_grad = false);
template <typename T> Tensor<T> full(const Shape& shape, T fill, bool requires_grad = false);
// 0, 1, ..., n-1 as a 1-D tensor; arange(start, stop, step) as in numpy.
template <typename T> Tensor<T> arange(T stop);
template <typename T> Tensor<T> arange(T start, T stop, T step = T(1));
// Row-major data of exactly prod(shape) elements (throws ShapeError otherwise).
template <typename T>
Tensor<T> from_data(const std::vector<T>& data, const Shape& shape, bool requires_grad = false);
template <typename T>
Tensor<T> uniform(const Shape& shape, T low, T high, Generator& gen, bool requires_grad = false);
template <typename T>
Tensor<T> normal(const Shape& shape, T mean, T stddev, Generator& gen, bool requires_grad = false);

// Casts between float and double (a new leaf without history).
template <typename To, typename From> Tensor<To> cast(const Tensor<From>& x);

// Printing: "Tensor(shape=[2, 3], op=add, requires_grad=true)\n{{...}}".
template <typename T> std::ostream& operator<<(std::ostream& os, const Tensor<T>& t);
std::string shape_str(const Shape& shape);

}  // namespace headlab
