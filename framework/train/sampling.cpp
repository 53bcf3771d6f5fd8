// sampling.cpp: the next token from logits (headlab/train/sampling.hpp).
#include "headlab/train/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "headlab/core/errors.hpp"

namespace headlab {

void SamplingOptions::validate() const {
  if (!(std::isfinite(temperature) && temperature >= 0.0))
    throw ValueError("temperature must be >= 0 and finite, got " + std::to_string(temperature));
  if (!(std::isfinite(top_p) && top_p > 0.0 && top_p <= 1.0))
    throw ValueError("top_p must be in (0, 1], got " + std::to_string(top_p));
}

namespace {

void check_logits(const std::vector<float>& logits) {
  if (logits.empty()) throw ValueError("sampling: no logits (a vocabulary of 0 tokens)");
  for (std::size_t i = 0; i < logits.size(); ++i)
    if (!std::isfinite(logits[i]))
      throw ValueError("sampling: the logit of token " + std::to_string(i) + " is " + std::to_string(logits[i]));
}

// The first maximum: the lowest id among the largest logits.
std::size_t argmax(const std::vector<float>& logits) {
  return static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Token ids ordered by probability, most probable first, ties by the lower id.
std::vector<std::size_t> ranked_by_probability(const std::vector<double>& p) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  return order;
}

// p / sum(p), in place.
void normalise(std::vector<double>& p) {
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  for (double& v : p) v /= total;
}

}  // namespace

std::vector<double> next_token_probabilities(const std::vector<float>& logits, const SamplingOptions& o) {
  o.validate();
  check_logits(logits);
  const std::size_t V = logits.size();
  std::vector<double> p(V, 0.0);
  if (o.temperature == 0.0) {  // greedy: all the mass on the argmax
    p[argmax(logits)] = 1.0;
    return p;
  }

  // Softmax of z / T, shifted by the largest logit so that no exp overflows:
  //   p_i = exp((z_i - z_max) / T) / sum_j exp((z_j - z_max) / T)
  const double z_max = logits[argmax(logits)];
  for (std::size_t i = 0; i < V; ++i) p[i] = std::exp((double(logits[i]) - z_max) / o.temperature);
  normalise(p);

  const std::vector<std::size_t> ranked = ranked_by_probability(p);
  // Top-k: the tokens ranked k and below get 0.
  if (o.top_k > 0 && o.top_k < V) {
    for (std::size_t r = o.top_k; r < V; ++r) p[ranked[r]] = 0.0;
    normalise(p);
  }
  // Top-p: walk the ranking, summing; the token whose running sum reaches p is the last one kept.
  // (Zeroing tokens does not change the order of the others, so the ranking above still holds.)
  if (o.top_p < 1.0) {
    double running = 0.0;
    std::size_t r = 0;
    while (r < V && running < o.top_p) running += p[ranked[r++]];
    for (; r < V; ++r) p[ranked[r]] = 0.0;
    normalise(p);
  }
  return p;
}

std::int64_t sample_next_token(const std::vector<float>& logits, const SamplingOptions& o, Generator& gen) {
  if (o.temperature == 0.0) {
    o.validate();
    check_logits(logits);
    return static_cast<std::int64_t>(argmax(logits));
  }
  const std::vector<double> p = next_token_probabilities(logits, o);
  // Inverse CDF: the first i with u < p_0 + ... + p_i. A token of probability 0 adds an empty
  // interval and is never chosen.
  const double u = gen.uniform01();
  double cumulative = 0.0;
  std::size_t last_possible = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) continue;
    cumulative += p[i];
    last_possible = i;
    if (u < cumulative) return static_cast<std::int64_t>(i);
  }
  return static_cast<std::int64_t>(last_possible);  // u at the very top, above a sum rounded to just under 1
}

}  // namespace headlab
