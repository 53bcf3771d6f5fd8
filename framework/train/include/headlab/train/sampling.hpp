// headlab/train/sampling.hpp: choosing the next token from a language model's logits.
//
// From the logits z (V) of the next token:
//   temperature T > 0:  p_i = exp(z_i / T) / sum_j exp(z_j / T)      (T < 1 sharpens, T > 1 flattens)
//   top-k k > 0:        keep the k most probable tokens, p_i = 0 for the others
//   top-p p < 1:        keep the smallest set of the most probable tokens whose probability sum
//                       reaches p (nucleus sampling, Holtzman et al. 2020), p_i = 0 for the others
//   renormalise, then draw i with probability p_i.
// The filters apply in that order (temperature, top-k, top-p), top-p to the distribution top-k left.
// "Most probable" ranks by p_i descending and breaks ties by the lower id, so the kept set is the same
// on every machine. Temperature 0 is greedy decoding: the argmax of z (lowest id on ties), which every
// top-k >= 1 and every top-p keeps, so the filters do not change it.
#pragma once

#include <cstdint>
#include <vector>

#include "headlab/core/random.hpp"

namespace headlab {

struct SamplingOptions {
  double temperature = 1.0;  // T >= 0, finite; 0 = greedy
  std::size_t top_k = 0;     // 0 = off (every token); k >= V keeps every token too
  double top_p = 1.0;        // in (0, 1]; 1 = off
  // ValueError naming the field ("temperature must be >= 0 and finite, got -1").
  void validate() const;
};

// The distribution the next token is drawn from (V probabilities summing to 1, the filtered-out
// tokens exactly 0), computed in double. For temperature 0: 1 on the argmax. ValueError when the
// logits are empty or hold a NaN or an infinity (naming the token), or the options are invalid.
std::vector<double> next_token_probabilities(const std::vector<float>& logits, const SamplingOptions& options);

// One token id in [0, V). Greedy (temperature 0) draws nothing from `gen`; otherwise exactly one
// uniform number u in [0, 1) picks the token by the inverse of the cumulative distribution, the
// tokens taken in id order: the first i with u < p_0 + ... + p_i. Same seed, same tokens.
std::int64_t sample_next_token(const std::vector<float>& logits, const SamplingOptions& options, Generator& gen);

}  // namespace headlab
