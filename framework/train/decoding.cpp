// decoding.cpp: greedy decoding and beam search with a KV cache per decoder layer.
#include "headlab/train/decoding.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "headlab/core/task_marker.hpp"
#include "headlab/core/errors.hpp"

namespace headlab {

double gnmt_length_penalty(std::size_t n, double alpha) {
  return std::pow((5.0 + static_cast<double>(n)) / 6.0, alpha);
}

namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

// log_softmax of one row of logits, in double:  x_v - (m + log sum_u exp(x_u - m)).
template <typename T>
void log_softmax_row(const T* logits, std::size_t V, std::vector<double>& out) {
  out.resize(V);
  double m = kMinusInf;
  for (std::size_t v = 0; v < V; ++v) m = std::max(m, static_cast<double>(logits[v]));
  double sum = 0;
  for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v]) - m);
  const double lse = m + std::log(sum);
  for (std::size_t v = 0; v < V; ++v) out[v] = static_cast<double>(logits[v]) - lse;
}

// Generated-token cap of each row: non-pad source ids + extra, at most what the positions allow.
std::vector<std::size_t> length_caps(const SourceBatch& batch, const DecodeOptions& o, std::size_t max_len) {
  const std::size_t B = batch.source.shape()[0], S = batch.source.shape()[1];
  std::vector<std::size_t> caps(B);
  for (std::size_t b = 0; b < B; ++b) {
    std::size_t len = 0;
    for (std::size_t s = 0; s < S; ++s) len += !batch.source_padding(b, s);
    caps[b] = std::max<std::size_t>(1, std::min(len + o.extra_tokens, max_len));
  }
  return caps;
}

void check_batch(const SourceBatch& batch, const char* op) {
  const auto& s = batch.source.shape();
  if (batch.source.dimension() != 2 || s[0] == 0 || s[1] == 0)
    throw ShapeError(std::string(op) + ": sources must be a non-empty (B, S) array");
  if (batch.source_padding.shape() != batch.source.shape())
    throw ShapeError(std::string(op) + ": source padding must have the sources' shape (B, S)");
}

// Rows of `a` (B, ...) repeated: result row b * K + k = a row b.      (B, ...) -> (B K, ...)
template <typename A>
A repeat_rows(const A& a, std::size_t K) {
  std::vector<std::size_t> shape(a.shape().begin(), a.shape().end());
  const std::size_t B = shape[0], row = B ? a.size() / B : 0;
  shape[0] = B * K;
  A out = A::from_shape(shape);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t k = 0; k < K; ++k) std::copy_n(a.data() + b * row, row, out.data() + (b * K + k) * row);
  return out;
}

// Restores the model's training flag on scope exit.
template <typename T>
struct EvalModeGuard {
  explicit EvalModeGuard(Transformer<T>& m) : model(m), was_training(m.is_training()) { m.eval(); }
  ~EvalModeGuard() { model.train(was_training); }
  Transformer<T>& model;
  bool was_training;
};

}  // namespace

template <typename T>
std::vector<Hypothesis> greedy_translate(Transformer<T>& model, const SourceBatch& batch, const DecodeOptions& o) {
  check_batch(batch, "greedy_translate");
  NoGradGuard no_grad;
  EvalModeGuard<T> eval_mode(model);
  const std::size_t B = batch.source.shape()[0];
  const std::vector<std::size_t> caps = length_caps(batch, o, model.config().max_len);
  const std::size_t longest = *std::max_element(caps.begin(), caps.end());
  Masks masks;
  masks.src_key_padding = batch.source_padding;
  const Tensor<T> memory = model.encode(batch.source, masks, nullptr);  // (B, S, D)
  std::vector<KVCache<T>> caches(model.decoder_layers());
  std::vector<Hypothesis> out(B);
  std::vector<bool> done(B, false);
  IndexArray next = IndexArray::from_shape({B, 1});
  next.fill(o.bos);
  std::vector<double> logp;
  for (std::size_t n = 1; n <= longest; ++n) {
    const Tensor<T> step_logits = model.project(model.decode(memory, next, masks, nullptr, &caches));
    const Array<T>& logits = step_logits.value();  // (B, 1, V)
    const std::size_t V = logits.shape()[2];
    bool all_done = true;
    for (std::size_t b = 0; b < B; ++b) {
      if (done[b]) continue;
      log_softmax_row(logits.data() + b * V, V, logp);
      const auto best = static_cast<std::int64_t>(std::max_element(logp.begin(), logp.end()) - logp.begin());
      out[b].tokens.push_back(best);
      out[b].log_prob += logp[static_cast<std::size_t>(best)];
      next(b, 0) = best;
      done[b] = best == o.eos || n == caps[b];
      all_done = all_done && done[b];
    }
    if (all_done) break;
  }
  for (auto& h : out) h.score = h.log_prob / gnmt_length_penalty(h.tokens.size(), o.length_penalty);
  return out;
}

template <typename T>
std::vector<Hypothesis> beam_search(Transformer<T>& model, const SourceBatch& batch, const DecodeOptions& o) {
  check_batch(batch, "beam_search");
  if (o.beam == 0) throw ValueError("beam_search: beam size must be >= 1");
  // BEGIN TASK 5.1: beam search
  HEADLAB_TASK("5.1");
  NoGradGuard no_grad;
  EvalModeGuard<T> eval_mode(model);
  const std::size_t B = batch.source.shape()[0], K = o.beam;
  const std::vector<std::size_t> caps = length_caps(batch, o, model.config().max_len);
  const std::size_t longest = *std::max_element(caps.begin(), caps.end());

  // Every sentence's memory repeated K times: row b K + k is beam k of sentence b.
  Masks masks;
  masks.src_key_padding = batch.source_padding;
  const Array<T> memory_once = model.encode(batch.source, masks, nullptr).value();  // (B, S, D)
  const Tensor<T> memory(repeat_rows(memory_once, K));                              // (B K, S, D)
  Masks beam_masks;
  beam_masks.src_key_padding = repeat_rows(batch.source_padding, K);
  std::vector<KVCache<T>> caches(model.decoder_layers());

  std::vector<std::vector<std::int64_t>> tokens(B * K);
  std::vector<double> scores(B * K, kMinusInf);  // summed log-probabilities; -inf = no beam
  for (std::size_t b = 0; b < B; ++b) scores[b * K] = 0;  // step 0: one live beam per sentence
  std::vector<std::vector<Hypothesis>> finished(B);
  std::vector<bool> done(B, false);
  IndexArray next = IndexArray::from_shape({B * K, 1});
  next.fill(o.bos);

  struct Candidate {
    double score;
    std::size_t beam;
    std::int64_t token;
  };
  auto ranks_before = [](const Candidate& a, const Candidate& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.beam != b.beam) return a.beam < b.beam;
    return a.token < b.token;
  };
  std::vector<double> logp;
  std::vector<Candidate> candidates;
  for (std::size_t n = 1; n <= longest; ++n) {
    const Tensor<T> step_logits = model.project(model.decode(memory, next, beam_masks, nullptr, &caches));
    const Array<T>& logits = step_logits.value();  // (B K, 1, V)
    const std::size_t V = logits.shape()[2];
    std::vector<std::size_t> rows(B * K);  // row i of the next step continues row rows[i]
    std::vector<std::vector<std::int64_t>> next_tokens(B * K);
    std::vector<double> next_scores(B * K, kMinusInf);
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t k = 0; k < K; ++k) rows[b * K + k] = b * K;  // placeholders for dead rows
      if (done[b]) continue;
      candidates.clear();
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t row = b * K + k;
        if (scores[row] == kMinusInf) continue;
        log_softmax_row(logits.data() + row * V, V, logp);
        for (std::size_t v = 0; v < V; ++v) candidates.push_back({scores[row] + logp[v], k, static_cast<std::int64_t>(v)});
      }
      const std::size_t top = std::min(2 * K, candidates.size());
      std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(top), candidates.end(),
                        ranks_before);
      std::size_t chosen = 0;
      for (std::size_t rank = 0; rank < top && chosen < K; ++rank) {
        const Candidate& c = candidates[rank];
        const std::vector<std::int64_t>& prefix = tokens[b * K + c.beam];
        if (c.token == o.eos) {
          if (rank < K) {
            Hypothesis h;
            h.tokens.insert(h.tokens.end(), prefix.begin(), prefix.end());  // not `= prefix`: GCC 12 -O3 -Wnonnull
            h.tokens.push_back(c.token);
            h.log_prob = c.score;
            h.score = c.score / gnmt_length_penalty(n, o.length_penalty);
            finished[b].push_back(std::move(h));
          }
          continue;
        }
        const std::size_t slot = b * K + chosen++;
        rows[slot] = b * K + c.beam;
        next_tokens[slot] = prefix;
        next_tokens[slot].push_back(c.token);
        next_scores[slot] = c.score;
        next(slot, 0) = c.token;
      }
      // Done when no live beam can still beat the best finished hypothesis. A live beam's
      // log-probability only falls as it grows, and lp is largest at the cap, so
      // live / lp(cap) bounds the score of anything it can become.
      double best_finished = kMinusInf, best_live = kMinusInf;
      for (const auto& h : finished[b]) best_finished = std::max(best_finished, h.score);
      for (std::size_t k = 0; k < K; ++k) best_live = std::max(best_live, next_scores[b * K + k]);
      const double live_bound = best_live / gnmt_length_penalty(caps[b], o.length_penalty);
      if (best_live == kMinusInf || (!finished[b].empty() && live_bound <= best_finished)) {
        done[b] = true;
      } else if (n == caps[b]) {  // length cap: the live beams finish as they are
        for (std::size_t k = 0; k < K; ++k) {
          const std::size_t slot = b * K + k;
          if (next_scores[slot] == kMinusInf) continue;
          Hypothesis h;
          h.tokens = next_tokens[slot];
          h.log_prob = next_scores[slot];
          h.score = h.log_prob / gnmt_length_penalty(n, o.length_penalty);
          finished[b].push_back(std::move(h));
        }
        done[b] = true;
      }
    }
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    for (auto& cache : caches) cache.select_rows(rows);
    tokens = std::move(next_tokens);
    scores = std::move(next_scores);
    for (std::size_t b = 0; b < B; ++b)
      if (done[b])
        for (std::size_t k = 0; k < K; ++k) scores[b * K + k] = kMinusInf;
  }
  std::vector<Hypothesis> out(B);
  for (std::size_t b = 0; b < B; ++b) {
    const Hypothesis* best = nullptr;
    for (const auto& h : finished[b])
      if (!best || h.score > best->score) best = &h;  // ties: the earliest finished
    if (best) out[b] = *best;
  }
  return out;
  // END TASK 5.1
}

template std::vector<Hypothesis> greedy_translate<float>(Transformer<float>&, const SourceBatch&, const DecodeOptions&);
template std::vector<Hypothesis> greedy_translate<double>(Transformer<double>&, const SourceBatch&, const DecodeOptions&);
template std::vector<Hypothesis> beam_search<float>(Transformer<float>&, const SourceBatch&, const DecodeOptions&);
template std::vector<Hypothesis> beam_search<double>(Transformer<double>&, const SourceBatch&, const DecodeOptions&);

}  // namespace headlab
