// nn/layers.cpp: Linear, Embedding, LayerNorm, sinusoidal positions.
#include <cmath>

#include "headlab/nn/layers.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

template <typename T>
Linear<T>::Linear(std::size_t in, std::size_t out, bool bias, Generator& gen) {
  const T bound = static_cast<T>(1.0 / std::sqrt(static_cast<double>(in)));
  this->register_parameter("weight", uniform<T>({out, in}, -bound, bound, gen));
  if (bias) this->register_parameter("bias", uniform<T>({out}, -bound, bound, gen));
}

template <typename T>
Tensor<T> Linear<T>::forward(const Tensor<T>& x) const {
  const auto params = this->named_parameters();
  return linear(x, params[0].second, params.size() > 1 ? params[1].second : Tensor<T>());
}

template <typename T>
Embedding<T>::Embedding(std::size_t vocab, std::size_t dim, Generator& gen) {
  this->register_parameter("weight", normal<T>({vocab, dim}, T(0), T(1), gen));
}

template <typename T>
Tensor<T> Embedding<T>::forward(const IndexArray& ids) const {
  return embedding(this->parameter("weight"), ids);
}

template <typename T>
LayerNorm<T>::LayerNorm(std::size_t dim, double eps) : eps_(eps) {
  this->register_parameter("weight", ones<T>({dim}));
  this->register_parameter("bias", zeros<T>({dim}));
}

template <typename T>
Tensor<T> LayerNorm<T>::forward(const Tensor<T>& x) const {
  const auto params = this->named_parameters();
  return layer_norm(x, params[0].second, params[1].second, static_cast<T>(eps_));
}

template <typename T>
Array<T> sinusoidal_positions(std::size_t length, std::size_t dim) {
  Array<T> pe = xt::zeros<T>({length, dim});
  for (std::size_t pos = 0; pos < length; ++pos) {
    for (std::size_t i = 0; i + 1 <= dim; i += 2) {
      const double angle = static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(i) / static_cast<double>(dim));
      pe(pos, i) = static_cast<T>(std::sin(angle));
      if (i + 1 < dim) pe(pos, i + 1) = static_cast<T>(std::cos(angle));
    }
  }
  return pe;
}

template class Linear<float>;
template class Linear<double>;
template class Embedding<float>;
template class Embedding<double>;
template class LayerNorm<float>;
template class LayerNorm<double>;
template Array<float> sinusoidal_positions<float>(std::size_t, std::size_t);
template Array<double> sinusoidal_positions<double>(std::size_t, std::size_t);

}  // namespace headlab
