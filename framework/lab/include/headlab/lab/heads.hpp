// headlab/lab/heads.hpp: the head lab: what each attention head does, how much the
// loss needs it, and what is left when heads are pruned.
//
// Scores of one attention pattern A = weights (B, h, L, S) of one module, query i
// and key j standing at positions i and j (self-attention; cross-attention is
// read the same way, source and target both counted from 0). Each returns one
// number per head, averaged over the batch and the queries named:
//   entropy          mean over rows of  -sum_j A[i,j] ln A[i,j]   (nats; all-zero rows skipped)
//   sink mass        mean over queries i in Q of A[i, 0]           (StreamingLLM's first-token sink)
//                    Q = [first, last) of a QueryRange, i >= 1; by default every i >= 1
//   its baseline     what uniform attention over the keys each query may see gives on the same
//                    queries: mean over i in Q of [key 0 visible to i] / (keys visible to i);
//                    causal, all queries: (1/(L-1)) sum_{i=1}^{L-1} 1/(i+1); bidirectional or cross:
//                    1/S. A head has a sink only where its mass is well above this (uniform_sink_mass).
//   previous token   mean over queries i >= 1 of A[i, i-1]
//   induction        mean over the second copy i in [T+1, 2T] of A[i, i-(T-1)], for inputs
//                    [<s>] r_1..r_T r_1..r_T: the key right after the earlier copy of the
//                    current token (Olsson et al. 2022). A head "is one" when the score > 0.4.
//   delimiter        text probes: mean over the queries i that have a delimiter (space or
//                    newline) at some j < i of A[i, d(i)], d(i) = the latest such j (Clark et al.
//                    2019's heads that read the last separator)
// Definitions: ../shared/notes attention-spec sections 3-4; docs/head-lab.md.
//
// Importance (Michel, Levy, Neubig 2019): every attention module multiplies head
// h's output by xi_h (a standing head mask, MultiHeadAttention::set_head_mask);
//   I_h = mean over evaluation batches of |dL/dxi_h| at the current mask,
// normalised within each module by the L2 norm of its heads' scores. Pruning
// sets xi_h = 0 for the least important ~10% of the remaining heads, recomputes
// the importance and repeats, without retraining.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "headlab/models/transformer.hpp"
#include "headlab/core/tensor.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab {

// ---- Scores of one pattern: weights (B, h, L, S) -> (h) ------------------------
template <typename T>
std::vector<double> attention_entropy(const Array<T>& weights);
// Queries [first, last) of a pattern (last past L: to the end); query 0 is never counted.
struct QueryRange {
  std::size_t first = 1, last = std::numeric_limits<std::size_t>::max();
};
// "all" (every i >= 1), "first-half" (1 to T of the repeated-tokens probe: no earlier copy yet),
// "second-half" (T + 1 to 2 T), or "A:B" / "A:" (positions A to B - 1, 1 <= A < B). ValueError naming
// --sink-queries otherwise.
QueryRange parse_query_range(const std::string& text, std::size_t block);
std::string query_range_text(const QueryRange& range, std::size_t L);  // "1:17" (last clipped to L)
template <typename T>
std::vector<double> sink_mass(const Array<T>& weights, const QueryRange& queries = {});
// Mean gate per head over the queries i of Q (i >= 1), all channels: gate (B, h, L, 1 or d) -> (h).
template <typename T>
std::vector<double> gate_mean_over(const Array<T>& gate, const QueryRange& queries = {});
template <typename T>
std::vector<double> previous_token_score(const Array<T>& weights);
// The sink mass of uniform attention on L queries and S keys under the module's mask (causal,
// sliding window of `window` keys, the first `sinks` keys always visible: attention.hpp).
double uniform_sink_mass(std::size_t L, std::size_t S, bool causal, std::size_t window, std::size_t sinks,
                         const QueryRange& queries = {});
// block = T of the repeated-tokens input (L >= 2 T + 1 queries needed).
template <typename T>
std::vector<double> induction_score(const Array<T>& weights, std::size_t block);
// ids (B, L) the inputs of the pattern; delimiters the token ids that count.
template <typename T>
std::vector<double> delimiter_score(const Array<T>& weights, const IndexArray& ids,
                                    const std::vector<std::int64_t>& delimiters);

// ---- The attention modules of a model --------------------------------------------
struct AttentionSite {
  std::string name;   // state-dict prefix: "encoder.layers.0.self_attn", "decoder.layers.1.multihead_attn", "layers.0.self_attn"
  std::string kind;   // "encoder self", "decoder self", "cross" or "self" (decoder-only)
  std::size_t layer = 0;
  MultiHeadAttention<float>* module = nullptr;
  std::size_t heads() const { return module->config().num_heads; }
};
std::vector<AttentionSite> attention_sites(Transformer<float>& model);
std::vector<AttentionSite> attention_sites(DecoderOnlyLM<float>& model);
std::vector<AttentionSite> attention_sites(LoadedModel& model);

// ---- Head roles on the repeated-random-tokens probe ---------------------------------
// (count, 2 block + 1): <s> (id 1), then block ids uniform over the task's ordinary
// symbols (copy and induction: [2, vocab); translate: [4, min vocabulary size), past
// <pad> <s> </s> <unk>; lm: the characters, [4, vocab)), then the same block again. The encoder-decoder reads it as
// both source and target. block 0 picks the largest that fits the model (at most 16;
// the induction task's own T).
struct Probe {
  IndexArray sequences;
  std::size_t block = 0;                  // T of the repeated-tokens probe; 0 for text (no induction score)
  std::vector<std::int64_t> delimiters;   // text: the ids of the delimiter score (space, newline)
};
Probe repeated_tokens_probe(const LoadedModel& model, std::size_t count, std::size_t block, std::uint64_t seed);
// A language model's own kind of input: `count` windows of its context (max_len ids) cut from
// `ids` (a text encoded with the model's vocabulary) at starts drawn uniformly from seed (a model
// trained with --bos-windows reads <s> first, as in training: position 0 holds <s>); the
// delimiters are the ids of " " and "\n" that the vocabulary has. ValueError unless the model is
// an lm and ids hold at least one window.
Probe text_probe(const LoadedModel& model, const std::vector<std::int64_t>& ids, std::size_t count, std::uint64_t seed);

struct HeadRoles {
  std::string site, kind;
  std::size_t layer = 0, head = 0;
  double entropy = 0, sink_mass = 0, previous_token = 0, induction = 0;
  double previous_token_uniform = 0;  // what uniform attention over the visible keys scores (every head of its module)
  double induction_uniform = 0;       // the same for the induction score (NaN on a text probe)
  double delimiter = 0;       // text probes: the delimiter score (NaN on the repeated-tokens probe)
  double delimiter_uniform = 0;  // what uniform attention over the visible keys scores on the same queries
  double sink_uniform = 0;    // uniform_sink_mass of the module on the same queries (the same for its heads)
  std::string sink_queries;   // the queries of sink_mass, "1:33"
  double gate_mean;           // mean sigmoid gate of the head (NaN when ungated)
  double gate_queries = 0;    // the same mean over the queries of sink_mass only (NaN when ungated)
  double max_abs_output = 0;  // largest |output| of the head's module (B, L, D) on the probe
  double max_logit = 0;       // the head's largest attention logit q.k / sqrt(d) over visible keys (Qiu et al.)
  double max_residual = 0;    // largest |value| of the residual stream after the head's layer (B, L, D):
                              // the layer's output (post-LN models: after its last LayerNorm)
};
// Runs the probe through the model (eval mode, no graph) with taps on; the sink mass over
// sink_queries (ValueError naming --sink-queries when it holds no query of the probe).
std::vector<HeadRoles> head_roles(LoadedModel& model, const Probe& probe, const QueryRange& sink_queries = {});

// The per-head weights (h, L, S) of every site for one input: copy/induction
// `ids` (1, L); translate: source (1, S) and target (1, T) ids. For pictures.
std::vector<Array<float>> attention_maps(LoadedModel& model, const IndexArray& source, const IndexArray& target);

// ---- Importance and pruning ----------------------------------------------------------
// A head mask per site: mask[s][h] = xi (1 kept, 0 pruned).
using HeadMask = std::vector<std::vector<float>>;
HeadMask full_head_mask(const std::vector<AttentionSite>& sites);
void apply_head_mask(std::vector<AttentionSite>& sites, const HeadMask& mask);  // standing masks on the modules
void clear_head_mask(std::vector<AttentionSite>& sites);

struct HeadImportance {
  std::vector<std::vector<double>> raw;         // mean |dL/dxi_h|
  std::vector<std::vector<double>> normalised;  // raw / L2 norm of the site's raw scores
};
// batch_loss(i) computes the (graph-recording) loss of evaluation batch i, i < batches.
HeadImportance head_importance(std::vector<AttentionSite>& sites, const HeadMask& mask, std::size_t batches,
                               const std::function<Tensor<float>(std::size_t)>& batch_loss);

// What pruning measures on a checkpoint's task: the evaluation loss (mean token
// NLL, no smoothing) and the task's metric (copy: held-out exact match; induction:
// repeated-half accuracy; translate: greedy BLEU x100), on:
//   copy / induction: `sequences` held-out sequences of the run (its own seed);
//   translate: the first `sequences` pairs (0 = all) of data_file (default: the run's --valid,
//   run_evaluation_file).
class HeadLabTask {
 public:
  // draw: which held-out draw of sequences (copy, induction, recall): 0 the run's own held-out
  // sequences; k > 0 another sample of the same distribution, from seed + k x kHeldOutDrawStride
  // (importance estimated on one draw, pruning scored on another). ValueError for translate with draw > 0.
  static constexpr std::uint64_t kHeldOutDrawStride = 1000000007ull;
  HeadLabTask(LoadedModel& model, std::size_t sequences, const std::string& data_file = "", std::uint64_t draw = 0);
  std::vector<AttentionSite>& sites() { return sites_; }
  std::size_t batches() const { return model_.options.task == Task::translate ? pair_batches_.size() : batches_.size(); }
  Tensor<float> batch_loss(std::size_t i);
  struct Score {
    double loss = 0, metric = 0;
  };
  Score evaluate();
  const std::string& metric_name() const { return metric_name_; }

 private:
  LoadedModel& model_;
  std::vector<AttentionSite> sites_;
  std::string metric_name_;
  std::vector<IndexArray> batches_;          // copy / induction: rows of sequences
  std::vector<std::vector<std::size_t>> blocks_;  // induction: the block length of each row
  std::vector<IndexArray> recall_targets_;   // recall: each batch's targets (-100 but at the queries)
  std::vector<EncodedPair> pairs_;           // translate
  std::vector<std::vector<std::size_t>> pair_batches_;
  std::vector<std::string> sources_;
  std::vector<std::vector<std::string>> references_;
};

struct PruneStep {
  std::size_t pruned = 0;  // heads masked so far
  double fraction = 0;     // pruned / all heads
  double loss = 0, metric = 0;
  std::vector<std::string> removed;  // "site#head" removed at this step
};
// From the full model to all heads pruned: each step masks ceil(step_fraction x remaining)
// heads, the least important by the normalised importance recomputed at the current
// mask (by_importance), or the next ones of a random order drawn from seed. Importance is
// estimated on importance_task's batches when given (another draw of the same model's
// sequences: HeadLabTask draw > 0), else on task's; each step is scored on task. The
// model's masks are cleared at the end.
std::vector<PruneStep> prune_heads(HeadLabTask& task, bool by_importance, double step_fraction, std::uint64_t seed,
                                   HeadLabTask* importance_task = nullptr);

// Each head alone zeroed (its mask 0, every other head kept): the task's score per head, in site
// then head order. Michel et al.'s "ablate one head" table; the worst drop says how much the model
// leans on any one head. The model's masks are cleared at the end.
struct SingleHeadScore {
  std::size_t site = 0, head = 0;
  HeadLabTask::Score score;
};
std::vector<SingleHeadScore> zero_each_head(HeadLabTask& task);

}  // namespace headlab
