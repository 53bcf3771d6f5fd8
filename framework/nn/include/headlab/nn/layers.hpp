// headlab/nn/layers.hpp: the layers of a transformer, named as in PyTorch.
//
// Parameter names match torch.nn so that a state dict lines up key for key:
//   Linear: weight (out, in), bias (out)        Embedding: weight (V, D)
//   LayerNorm: weight (D), bias (D)
// Shapes are batch first: (B, T, D).
#pragma once

#include <string>
#include <vector>

#include "headlab/nn/module.hpp"
#include "headlab/core/tensor.hpp"

namespace headlab {

class Generator;

// y = x W^T + b; PyTorch init U(-1/sqrt(in), 1/sqrt(in)) for weight and bias.
template <typename T>
class Linear : public Module<T> {
 public:
  Linear(std::size_t in, std::size_t out, bool bias, Generator& gen);
  Tensor<T> forward(const Tensor<T>& x) const;  // (..., in) -> (..., out)
};

// Rows of weight (V, D) looked up by id; PyTorch init N(0, 1).
template <typename T>
class Embedding : public Module<T> {
 public:
  Embedding(std::size_t vocab, std::size_t dim, Generator& gen);
  Tensor<T> forward(const IndexArray& ids) const;  // (B, T) -> (B, T, D)
};

template <typename T>
class LayerNorm : public Module<T> {
 public:
  explicit LayerNorm(std::size_t dim, double eps = 1e-5);
  Tensor<T> forward(const Tensor<T>& x) const;

 private:
  double eps_;
};

// PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(pos / 10000^(2i/D)).
template <typename T>
Array<T> sinusoidal_positions(std::size_t length, std::size_t dim);

}  // namespace headlab
