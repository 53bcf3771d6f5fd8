// autograd.cpp: the reverse-mode pass.
//
// backward(root, upstream):
//   1. order = reverse topological order of the nodes that require grad,
//      found with an explicit stack (no recursion: deep graphs are fine);
//   2. root.grad += upstream;
//   3. for node in order: node.backward_fn(node) adds dL/d input to each input;
//   4. unless retain_graph, each visited non-leaf drops its inputs, closure and
//      grad, so the activations it kept alive can be freed as the pass goes, not
//      only at its end.
#include <unordered_set>

#include "headlab/core/task_marker.hpp"
#include "headlab/core/tensor.hpp"
#include "headlab/core/anomaly.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

template <typename T>
void Tensor<T>::backward(bool retain_graph) const {
  if (numel() != 1) {
    throw AutogradError("backward: called without an upstream gradient on a tensor of shape " + shape_str(shape()) +
                        " (op " + op() + "); only one-element tensors have an implicit dL/dL = 1");
  }
  backward(xt::ones<T>(value().shape()), retain_graph);
}

template <typename T>
void Tensor<T>::backward(const Array<T>& upstream, bool retain_graph) const {
  Node<T>* root = node().get();
  if (!root) throw ValueError("backward: undefined tensor");
  if (root->released) {
    throw AutogradError("backward: the graph behind op " + root->op +
                        " was already freed by an earlier backward; pass retain_graph=true to the first call");
  }
  if (!root->requires_grad) {
    throw AutogradError("backward: tensor (op " + root->op + ", shape " + shape_str(shape()) +
                        ") does not require grad; no input of its graph has requires_grad set");
  }
  if (detail::shape_of(upstream) != shape()) {
    throw ShapeError("backward: upstream gradient of shape " + shape_str(detail::shape_of(upstream)) +
                     " for a tensor of shape " + shape_str(shape()));
  }
  // BEGIN TASK 0.1: topological sort and backward
  HEADLAB_TASK("0.1");
  // 1. The order: an iterative post-order DFS from the root over the nodes that require grad
  //    (a node is emitted after all of its inputs; no recursion, so deep graphs are fine).
  //    It holds shared pointers: freeing a node's inputs during the pass must not destroy
  //    nodes that are still to be visited.
  std::vector<std::shared_ptr<Node<T>>> order;
  {
    std::unordered_set<Node<T>*> visited;
    std::vector<std::pair<std::shared_ptr<Node<T>>, std::size_t>> stack;  // (node, next input to visit)
    stack.emplace_back(node(), 0);
    visited.insert(root);
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->inputs.size()) {
        std::shared_ptr<Node<T>> child = n->inputs[next++];
        if (child->requires_grad && visited.insert(child.get()).second) stack.emplace_back(std::move(child), 0);
      } else {
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  // 2. Seed the root, 3. walk the order backwards (outputs before inputs), 4. free as we go.
  accumulate_grad(*root, Array<T>(upstream), "backward");
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node<T>& n = **it;
    if (n.released) {
      throw AutogradError("backward: reached op " + n.op +
                          " whose graph was freed by an earlier backward; use retain_graph=true");
    }
    if (n.backward_fn && n.has_grad) {
      n.backward_fn(n);
      if (anomaly_detection_enabled()) detail::check_backward_anomaly(n);
    }
    if (!n.inputs.empty() || n.backward_fn) {  // a non-leaf
      if (!n.retains_grad) {
        n.grad = Array<T>();
        n.has_grad = false;
      }
      if (!retain_graph) {
        n.inputs.clear();
        n.backward_fn = nullptr;
        n.released = true;
      }
    }
    it->reset();  // every consumer of n has run: unless a handle (or a kept graph) holds n, it goes now
  }
  // END TASK 0.1
}

template void Tensor<float>::backward(bool) const;
template void Tensor<double>::backward(bool) const;
template void Tensor<float>::backward(const Array<float>&, bool) const;
template void Tensor<double>::backward(const Array<double>&, bool) const;

}  // namespace headlab
