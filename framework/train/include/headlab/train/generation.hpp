// headlab/train/generation.hpp: text from a decoder-only language model, one token at a time.
//
// Autoregressive generation: starting from the prompt x_1..x_n, repeat
//   z = model(context)[last]          the logits (V) of the next token
//   x_{n+1} = sample_next_token(z)    (headlab/train/sampling.hpp)
//   append x_{n+1}; hand it to the callback
// max_new_tokens times, or until the callback returns false.
//
// The context window. The model has positions 0 .. max_len - 1, so it sees at most max_len tokens.
// The context of every step is the last min(n, max_len) tokens of the sequence so far (prompt and
// generated tokens), at positions 0, 1, ...: once the sequence is longer than max_len, the oldest
// tokens fall out, one per new token (as nanoGPT crops idx[:, -block_size:]). A prompt longer than
// max_len is cropped the same way.
//
// Two ways to the same logits:
//   kv_cache   (the default) the prompt is fed once, as one chunk, filling a KV cache per layer;
//              then each step feeds the one new token, attending to the cached keys and values:
//              O(1) new tokens of work per step. When the window slides (the sequence passes max_len)
//              every token changes position, so no cached key is valid any more: the cache is
//              emptied and rebuilt from the new window, and from then on each step costs a forward
//              over max_len tokens, as recomputation does.
//   recompute  each step runs the full causal forward over the window and keeps its last row: the
//              reference the cache is tested against (same tokens for a seed, logits equal up to
//              float rounding).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "headlab/core/random.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/sampling.hpp"

namespace headlab {

enum class ContextPath { kv_cache, recompute };

// One generated token, as the callback sees it.
struct GeneratedToken {
  std::size_t index = 0;                   // 0 for the first new token
  std::int64_t id = 0;
  const std::vector<float>* logits = nullptr;  // the (V) logits it was drawn from
};
// Called once per token, as soon as it is drawn (before the next forward): return false to stop.
using TokenCallback = std::function<bool(const GeneratedToken&)>;

// The generated tokens (the prompt not included), at most max_new_tokens. Runs in eval mode (the
// model's mode is restored afterwards) without recording a graph. ValueError for an empty prompt, a
// prompt id outside [0, V), or invalid options.
// keep_first (a model trained with --bos-windows, the prompt starting with <s>): the first token of
// the sequence stays at position 0 of every context, followed by the last max_len - 1 tokens.
std::vector<std::int64_t> generate(DecoderOnlyLM<float>& model, const std::vector<std::int64_t>& prompt,
                                   std::size_t max_new_tokens, const SamplingOptions& options, Generator& gen,
                                   const TokenCallback& on_token = {}, ContextPath path = ContextPath::kv_cache,
                                   bool keep_first = false);

}  // namespace headlab
