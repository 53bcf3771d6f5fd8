// headlab/train/decoding.hpp: turning a trained encoder-decoder into output sentences.
//
// Both decoders feed one token per step through the decoder with a KV cache
// per layer, and stop a sentence at </s> or after len(source) + extra_tokens
// generated tokens (</s> counted; never past the model's max_len).
//
// Beam search keeps K hypotheses per sentence. Each step it expands them by
// log p(next token), ranks the top 2K candidates by summed log-probability
// (ties: lower beam, then lower token id) and walks them in order: one ending
// in </s> is finished if its rank is < K, the others become the next beams
// until K are chosen. A sentence is done when no live beam can beat its best
// finished hypothesis any more (best live log p / lp(cap) <= best finished
// score: log p only falls and lp grows with length), or at its length cap (the
// live beams are then finished as they are). Stopping at K finished hypotheses,
// as fairseq does, lets improbable early </s> candidates end the search before
// a confident model's real answer is complete.
// The answer is the finished hypothesis with the best length-normalised score
//   score = log p(y) / lp(n),   lp(n) = ((5 + n) / 6)^alpha   (Wu et al. 2016, GNMT)
// with n the generated tokens (</s> included). Beam 1 with alpha 0 is greedy decoding.
#pragma once

#include <cstdint>
#include <vector>

#include "headlab/data/batching.hpp"
#include "headlab/models/transformer.hpp"

namespace headlab {

struct DecodeOptions {
  std::int64_t bos = 1, eos = 2;
  std::size_t extra_tokens = 10;  // cap: len(source incl. </s>) + extra_tokens generated tokens
  std::size_t beam = 4;           // K
  double length_penalty = 0.6;    // alpha (0 = raw log-probability)
};

struct Hypothesis {
  std::vector<std::int64_t> tokens;  // generated ids, </s> included when produced, <s> excluded
  double log_prob = 0;               // sum of log p of the tokens
  double score = 0;                  // log_prob / lp(n)
};

double gnmt_length_penalty(std::size_t generated_tokens, double alpha);

// One hypothesis per source row. Runs without recording a graph, in eval mode.
template <typename T>
std::vector<Hypothesis> greedy_translate(Transformer<T>& model, const SourceBatch& batch, const DecodeOptions& options);
template <typename T>
std::vector<Hypothesis> beam_search(Transformer<T>& model, const SourceBatch& batch, const DecodeOptions& options);

}  // namespace headlab
