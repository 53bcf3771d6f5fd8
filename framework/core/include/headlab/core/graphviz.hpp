// headlab/core/graphviz.hpp: draw the autograd graph behind a tensor (micrograd's draw_dot).
//
// to_dot(loss) returns Graphviz DOT text: one box per node with its op name
// and shape, an edge from each input to the node computed from it. Render with
//   dot -Tsvg graph.dot -o graph.svg
#pragma once

#include <string>

#include "headlab/core/tensor.hpp"

namespace headlab {

template <typename T> std::string to_dot(const Tensor<T>& root);

}  // namespace headlab
