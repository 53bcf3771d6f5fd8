// headlab/train/recall_task.hpp: multi-query associative recall with several keys per query, a task
// built so that the number of heads matters (after Arora et al. 2023, "Zoology").
//
// A sequence is n key-value pairs, then n queries (n = --length):
//
//   <s>  (k_1 v_1) ... (k_n v_n)   q_1 ... q_n
//
// - keys k_1..k_n are distinct, drawn from --keys K; each value is uniform over --values V;
//   a pair (k, v) is one token, so one position holds the binding;
// - a query q names r = --relations distinct keys of the sequence, in order, as one token;
// - its answer is the values of those keys, in the same order, as one token of V^r (the target at
//   the query's own position; nothing else is a target);
// - with --unordered-answer the answer is the same values sorted ascending, (v_a, v_b) and (v_b,
//   v_a) both answered min, max: the same sequences (the same draws), only the target differs.
//
// What one head has to do (r = 2). The layer's output at a query is x_q + sum_j p_j W_OV x_j: one
// softmax mixes the value vectors of the positions it looks at. To answer (v_a, v_b) it must look
// at key a and key b at once, and the answer's logits (a linear read-out after the final norm)
// then see p_a W_OV x_(a,v_a) + p_b W_OV x_(b,v_b). With p_a = p_b that mixture is the same for
// the query (a, b) as for (b, a), so the order of the answer is lost ("averaging inhibits this",
// Vaswani et al.); one head can only keep it by weighting the two keys unequally and reading the
// values back from their magnitudes, which takes precision its d_k dimensions may not have. Two
// heads keep the look-ups apart: head 1 attends to key a and writes v_a into its own subspace,
// head 2 the same for key b. The other wall is rank (Bhojanapalli et al. 2020): a head's scores
// q.k live in d_k = D / h dimensions; at d_k = 1 a head's weights are monotone in a scalar key, so
// it can only single out the key with the largest or smallest projection, never an arbitrary one.
// docs/studies/head-count-recall.md measures both walls. The unordered form needs no order: one
// head that weights both keys equally sees the sum of their value vectors, which names the pair of
// values up to order; docs/studies/recall-averaging.md compares the two forms.
//
// One step:  logits = model(seq)                       (B, 2n+1, vocab), causal
//            loss = cross_entropy(logits, answers)      targets -100 except at the n queries
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "headlab/core/random.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

struct TrainResult;

// The token ids of the task: 0 <pad>, 1 <s>, then K V pair tokens, K^r query tokens (every tuple
// of r keys; only tuples of distinct keys occur), V^r answer tokens.
struct RecallLayout {
  std::size_t keys = 16, values = 8, relations = 2;
  bool unordered_answer = false;  // answers are the values sorted ascending

  std::size_t query_count() const;   // K^r
  std::size_t answer_count() const;  // V^r
  std::size_t vocab() const;         // 2 + K V + K^r + V^r
  std::int64_t pair_token(std::size_t key, std::size_t value) const;
  std::int64_t query_token(const std::vector<std::size_t>& keys) const;     // r keys, first most significant
  std::int64_t answer_token(const std::vector<std::size_t>& values) const;  // r values, first most significant
  // The r values an answer token stands for; empty when `id` is not an answer token.
  std::vector<std::size_t> answer_values(std::int64_t id) const;
  // The r keys a query token names, in order; empty when `id` is not a query token.
  std::vector<std::size_t> query_keys(std::int64_t id) const;
  // The key of a pair token; -1 when `id` is not a pair token.
  std::ptrdiff_t pair_key(std::int64_t id) const;
  // The answer to the named values: them (ordered) or them sorted (unordered_answer).
  std::int64_t answer_for(std::vector<std::size_t> values) const;
  // A token as a reader sees it: "k3=v5" (a pair), "?k3,k7" (a query), "=v5,v1" (an answer),
  // "<pad>", "<s>"; "#id" outside the vocabulary.
  std::string token_text(std::int64_t id) const;
};
RecallLayout recall_layout(const TrainOptions& options);
// ValueError naming the option when K, V, r and n do not make a task: K >= n >= r >= 1, V >= 2,
// and at most kMaxRecallVocab tokens.
void validate_recall_sizes(std::size_t keys, std::size_t values, std::size_t relations, std::size_t pairs);
constexpr std::size_t kMaxRecallVocab = 1000000;

// sequences (B, 2n+1) as above; targets (B, 2n+1): -100 everywhere but the query positions
// n+1 .. 2n, which hold the answer tokens.
struct RecallBatch {
  IndexArray sequences;
  IndexArray targets;
};
RecallBatch recall_batch(Generator& gen, const RecallLayout& layout, std::size_t batch, std::size_t pairs);
// The held-out sequences of a run (a generator of their own, never the training stream's).
RecallBatch held_out_recall_sequences(const TrainOptions& options, std::size_t count);
// --train-sequences N: the run's finite training set, N sequences drawn once from a generator of its
// own (seed + 2000003: neither the held-out nor the data stream's); (0, 2n+1) for N = 0.
RecallBatch recall_training_set(const TrainOptions& options);
// Rows `rows` of a batch, in that order: (rows.size(), 2n+1) sequences and targets.
RecallBatch recall_rows(const RecallBatch& batch, const std::vector<std::size_t>& rows);

struct RecallScore {
  double loss = 0;             // mean answer NLL
  double answer_accuracy = 0;  // argmax = the answer (every value right)
  double slot_accuracy = 0;    // the share of the r values the argmax gets right (non-answer argmax: none)
};
// The scores of a decoder-only model on recall sequences (eval mode, no graph).
RecallScore recall_eval(DecoderOnlyLM<float>& model, const RecallLayout& layout, const RecallBatch& batch);
TrainResult train_recall(const TrainOptions& options, std::ostream& log);

}  // namespace headlab
