// generation.cpp: autoregressive generation with a KV cache (headlab/train/generation.hpp).
#include "headlab/train/generation.hpp"

#include <string>

#include "headlab/core/errors.hpp"

namespace headlab {

namespace {

// ids[begin, end) as one row (1, end - begin).
IndexArray row_of(const std::vector<std::int64_t>& ids, std::size_t begin, std::size_t end) {
  IndexArray a = IndexArray::from_shape({1, end - begin});
  for (std::size_t i = begin; i < end; ++i) a(0, i - begin) = ids[i];
  return a;
}

// The last row of logits (1, T, V) -> (V).
std::vector<float> last_row(const Tensor<float>& logits) {
  const Array<float>& z = logits.value();
  const std::size_t T = z.shape()[1], V = z.shape()[2];
  const float* row = z.data() + (T - 1) * V;
  return std::vector<float>(row, row + V);
}

// The logits of the token after a sequence, as the model sees it through its window: the last
// min(n, max_len) tokens, at positions 0, 1, ...; with keep_first, sequence[0] and the last
// min(n, max_len) - 1 after it (generation.hpp).
class NextTokenLogits {
 public:
  NextTokenLogits(DecoderOnlyLM<float>& model, ContextPath path, bool keep_first)
      : model_(model), path_(path), keep_first_(keep_first), caches_(model.layers()) {}

  std::vector<float> after(const std::vector<std::int64_t>& sequence) {
    const std::size_t n = sequence.size(), max_len = model_.config().max_len;
    // The window is [sequence[0]] + sequence[start, n) with keep_first, else sequence[start, n).
    const std::size_t start = n > max_len ? n - max_len + (keep_first_ ? 1 : 0) : 0;
    if (path_ == ContextPath::recompute) return last_row(model_.forward(window_of(sequence, start, n), nullptr));
    if (start != window_start_) {  // the window slid: every position changed, no cached entry is valid
      for (KVCache<float>& cache : caches_) cache.clear();
      window_start_ = start;
      fed_ = 0;
    }
    // The tokens the cache has not seen yet: the whole window after a (re)build, else the newest one.
    const Tensor<float> logits =
        model_.forward(fed_ == 0 ? window_of(sequence, start, n) : row_of(sequence, fed_, n), nullptr, &caches_);
    fed_ = n;
    return last_row(logits);
  }

 private:
  IndexArray window_of(const std::vector<std::int64_t>& sequence, std::size_t start, std::size_t n) const {
    if (!keep_first_ || start == 0) return row_of(sequence, start, n);
    IndexArray a = IndexArray::from_shape({1, n - start + 1});
    a(0, 0) = sequence[0];
    for (std::size_t i = start; i < n; ++i) a(0, i - start + 1) = sequence[i];
    return a;
  }
  DecoderOnlyLM<float>& model_;
  const ContextPath path_;
  const bool keep_first_;
  std::vector<KVCache<float>> caches_;  // one per layer; position 0 holds the window's first token
  std::size_t window_start_ = 0;
  std::size_t fed_ = 0;  // the window up to sequence[fed_) is in the caches (0: nothing)
};

void check_prompt(const std::vector<std::int64_t>& prompt, std::size_t vocab) {
  if (prompt.empty()) throw ValueError("generate: the prompt is empty (give at least one token)");
  for (std::size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= static_cast<std::int64_t>(vocab))
      throw ValueError("generate: prompt token " + std::to_string(i) + " is " + std::to_string(prompt[i]) +
                       ", not an id in [0, " + std::to_string(vocab) + ")");
}

}  // namespace

std::vector<std::int64_t> generate(DecoderOnlyLM<float>& model, const std::vector<std::int64_t>& prompt,
                                   std::size_t max_new_tokens, const SamplingOptions& options, Generator& gen,
                                   const TokenCallback& on_token, ContextPath path, bool keep_first) {
  options.validate();
  check_prompt(prompt, model.config().tgt_vocab);
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  NextTokenLogits next_logits(model, path, keep_first);
  std::vector<std::int64_t> sequence = prompt, generated;
  try {
    for (std::size_t i = 0; i < max_new_tokens; ++i) {
      const std::vector<float> logits = next_logits.after(sequence);
      const std::int64_t id = sample_next_token(logits, options, gen);
      sequence.push_back(id);
      generated.push_back(id);
      if (on_token && !on_token(GeneratedToken{i, id, &logits})) break;
    }
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  return generated;
}

}  // namespace headlab
