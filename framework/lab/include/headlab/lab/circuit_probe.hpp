// headlab/lab/circuit_probe.hpp: clean and corrupted inputs of a designed task, built by rule so
// that the right answer of each is known, and the logit difference that activation patching and
// attribution read (docs/circuits.md).
//
// Decoder-only tasks; every row is read at one position p, the last input position:
//   induction  clean      <s> r_1 .. r_T r_1 .. r_{T-1}   (block T: the whole sequence repeats; r_{T-1}
//                         nowhere else in the first half, r_T included, so one key matches)
//              corrupted  the first half redrawn at random except r_{T-1} at position T-1, the earlier
//                         copy of the token at p (so the redrawn token x after it is the corrupted
//                         answer; x != r_T, and r_{T-1} occurs nowhere else in the first half)
//              answers    clean r_T, corrupted x
//   recall     clean      <s> (k_1 v_1) .. (k_n v_n) q_1 .. q_n      (the run's own layout)
//              corrupted  the value of one key named by q_n (slot s of its r keys) changed at random
//              answers    the answer tokens of q_n before and after the change
// Encoder-decoder (copy, translate): the source is corrupted, the decoder's inputs are the same in both.
//   copy       source     <s> x_1 .. x_{n-1} (the run's length n); decoder input <s> x_1 .. x_{n-2},
//                         read at its last position p = n - 2, where the model writes x_{n-1}
//              corrupted  x_{n-1} changed at random in the source
//              answers    x_{n-1} and the token put in its place
//   translate  a pair of a TSV with gold alignments (--data; the run's validation file by default),
//              in file order; the last target word j with one gold link (to a source word i of one
//              piece) and the source word i' of one piece nearest i with one link, to a target word
//              j' of another spelling (words only: punctuation, linked "." to ".", is never chosen); decoder input <s> and the target pieces before j, read at its
//              last position (one per row: rows have their own lengths, padded)
//              corrupted  source word i replaced by i' (a swap of the two would keep both words in
//                         the source, and a model that finds words by content reads j still)
//              answers    the first piece of j and of j'
//              (a pair without two such words is skipped)
// Logit difference of a run at row b: LD_b = logit[p, clean answer] - logit[p, corrupted answer].
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headlab/train/checkpoint.hpp"

namespace headlab {

struct CircuitProbe {
  IndexArray clean, corrupted;                      // (B, L) inputs (encoder-decoder: the decoder's)
  IndexArray clean_source, corrupted_source;        // (B, S) the encoder's inputs; empty for decoder-only
  std::optional<MaskArray> source_padding;          // (B, S) true = padding (translate)
  std::size_t position = 0;                         // p, read in every row ...
  std::vector<std::size_t> row_positions;           // ... unless each row has its own (translate)
  std::size_t position_of(std::size_t row) const { return row_positions.empty() ? position : row_positions.at(row); }
  std::vector<std::int64_t> clean_answer, corrupted_answer;  // (B)
  std::string rule;                                 // one line: how the corruption was made
};

struct CircuitProbeOptions {
  std::size_t count = 64;     // rows
  std::uint64_t seed = 1;     // the probe's own generator (translate: rows in file order, unused)
  std::size_t slot = 0;       // recall: which of the query's r keys gets a new value
  std::string data;           // translate: the TSV with gold alignments ("" = the run's --valid file)
};

// ValueError naming the task for a task without a rule (lm), a slot >= r, data for a task that reads
// none. Translate needs the model's vocabularies: the LoadedModel overload (ValueError here).
CircuitProbe make_circuit_probe(const TrainOptions& options, const CircuitProbeOptions& probe = {});
// Every task with a rule; translate reads `probe.data` (IOError / FormatError naming the file,
// ValueError when no pair has two swappable words).
CircuitProbe make_circuit_probe(const LoadedModel& model, const CircuitProbeOptions& probe = {});

// ---- Running a probe on a model (decoder-only or encoder-decoder), in eval mode, without a graph ----
// The logits (B, L, V) of the clean or the corrupted rows, under `hooks` (nullptr: none).
Array<float> probe_logits(LoadedModel& model, const CircuitProbe& probe, bool clean, HookPoints<float>* hooks = nullptr);
// The attention modules whose heads the tools read, as hook prefixes: "blocks.{l}.attn" (decoder-only);
// "encoder.{l}.attn", "decoder.{l}.attn", "decoder.{l}.cross_attn" (encoder-decoder).
std::vector<std::string> attention_modules(const LoadedModel& model);
// The residual points patched per position: each layer's hook_resid_pre (the encoder's layers first),
// then the last (decoder) layer's hook_resid_post, what the unembedding reads.
std::vector<std::string> stream_points(const LoadedModel& model);
// The point the final norm reads: "blocks.{L-1}.hook_resid_post" or "decoder.{L-1}.hook_resid_post".
std::string final_stream_point(const LoadedModel& model);

// Per row: logits (B, L, V) -> LD_b as above; and their mean.
std::vector<double> logit_differences(const Array<float>& logits, const CircuitProbe& probe);
double mean_logit_difference(const Array<float>& logits, const CircuitProbe& probe);

}  // namespace headlab
