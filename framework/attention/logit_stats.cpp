// logit_stats.cpp: the largest attention logit of each head (headlab/attention/attention.hpp), for
// the module's taps. Plain loops: it reads a probe's few sequences, never a training step.
//   max_logit[h] = max over b, i, visible j of  sum_c q[b,h,i,c] k[b,g,j,c] * scale,  g = h / (h / h_kv)
#include <cmath>
#include <limits>

#include "headlab/attention/attention.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

template <typename T>
Array<T> max_attention_logit(const Array<T>& q, const Array<T>& k, const MaskArray* hidden,
                             const MaskArray* key_padding, std::optional<double> scale) {
  if (q.dimension() != 4 || k.dimension() != 4 || q.shape()[0] != k.shape()[0] || q.shape()[3] != k.shape()[3] ||
      k.shape()[1] == 0 || q.shape()[1] % k.shape()[1] != 0) {
    throw ShapeError("max_attention_logit: q " + shape_str(Shape(q.shape().begin(), q.shape().end())) + " and k " +
                     shape_str(Shape(k.shape().begin(), k.shape().end())) +
                     " should be (B, h, L, d) and (B, h_kv, S, d) with h_kv dividing h");
  }
  const std::size_t B = q.shape()[0], H = q.shape()[1], L = q.shape()[2], d = q.shape()[3];
  const std::size_t S = k.shape()[2], group = H / k.shape()[1];
  if (hidden && (hidden->shape()[0] != L || hidden->shape()[1] != S))
    throw ShapeError("max_attention_logit: hidden mask should be (L, S) = (" + std::to_string(L) + ", " +
                     std::to_string(S) + ")");
  if (key_padding && (key_padding->shape()[0] != B || key_padding->shape()[1] != S))
    throw ShapeError("max_attention_logit: key padding should be (B, S) = (" + std::to_string(B) + ", " +
                     std::to_string(S) + ")");
  const double s = scale ? *scale : 1.0 / std::sqrt(double(d));
  Array<T> out = Array<T>::from_shape({H});
  for (std::size_t h = 0; h < H; ++h) {
    double best = -std::numeric_limits<double>::infinity();
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j) {
          if ((hidden && (*hidden)(i, j)) || (key_padding && (*key_padding)(b, j))) continue;
          double dot = 0;
          for (std::size_t c = 0; c < d; ++c) dot += double(q(b, h, i, c)) * double(k(b, h / group, j, c));
          best = std::max(best, dot * s);
        }
    out(h) = T(best);
  }
  return out;
}

template Array<float> max_attention_logit<float>(const Array<float>&, const Array<float>&, const MaskArray*,
                                                 const MaskArray*, std::optional<double>);
template Array<double> max_attention_logit<double>(const Array<double>&, const Array<double>&, const MaskArray*,
                                                   const MaskArray*, std::optional<double>);

}  // namespace headlab
