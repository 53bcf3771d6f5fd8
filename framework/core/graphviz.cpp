// graphviz.cpp: DOT export of the graph behind a tensor.
#include "headlab/core/graphviz.hpp"

#include <sstream>
#include <unordered_map>

#include "headlab/core/shape_utils.hpp"

namespace headlab {

template <typename T>
std::string to_dot(const Tensor<T>& root) {
  std::ostringstream os;
  os << "digraph headlab {\n  rankdir=LR;\n  node [shape=record, fontname=\"monospace\"];\n";
  std::unordered_map<const Node<T>*, std::size_t> ids;
  std::vector<const Node<T>*> stack{root.node().get()};
  ids[root.node().get()] = 0;
  while (!stack.empty()) {  // iterative: deep graphs are fine
    const Node<T>* n = stack.back();
    stack.pop_back();
    const std::size_t id = ids[n];
    os << "  n" << id << " [label=\"{" << n->op << " | " << shape_str(n->shape())
       << (n->requires_grad ? " | grad" : "") << "}\"" << (n == root.node().get() ? ", style=bold" : "") << "];\n";
    for (const auto& in : n->inputs) {
      auto [it, inserted] = ids.emplace(in.get(), ids.size());
      if (inserted) stack.push_back(in.get());
      os << "  n" << it->second << " -> n" << id << ";\n";
    }
  }
  os << "}\n";
  return os.str();
}

template std::string to_dot<float>(const Tensor<float>&);
template std::string to_dot<double>(const Tensor<double>&);

}  // namespace headlab
