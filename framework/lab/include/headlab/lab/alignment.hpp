// headlab/lab/alignment.hpp: word alignments read off cross-attention, scored against gold links.
//
// A link (i, j) says source word i translates to target word j (the Pharaoh format of fast_align
// and awesome-align, "i-j", 0-based over the words of tokenize()). For a set A of predicted links
// and a set S of gold ("sure") links (Och & Ney 2003, with no "possible" links, P = S):
//   precision = |A ∩ S| / |A|      recall = |A ∩ S| / |S|
//   AER       = 1 - 2 |A ∩ S| / (|A| + |S|)
// Over a corpus the three counts are summed over its sentences first (what alignment papers report).
//
// Hard alignment from one head (or the mean of a layer's heads): cross-attention weights
// A (L, S), the decoder reading <s> p_0 .. p_{n-1} (target pieces) and attending over the source
// pieces q_0 .. q_{m-1} and </s>. Target word j is aligned to the single source word
//   i* = argmax_i  mean over the pieces k of word j of  sum over the pieces c of word i of  A[r(k), c]
// where the row r(k) is k (the step that predicts piece k: QueryStep::predict) or k + 1 (the step
// that reads it: QueryStep::read). The </s> column is never a source word, so every target word gets
// one link; a target word whose gold links are several source words ("kommt ... an" -> "arrives")
// is recalled at most once.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "headlab/core/tensor.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/checkpoint.hpp"

namespace headlab {

using WordLinks = std::vector<std::pair<std::size_t, std::size_t>>;  // (source word, target word)

// Summed counts of links: predicted |A|, gold |S| and matched |A ∩ S| (duplicates counted once).
struct AlignmentCounts {
  std::size_t predicted = 0, gold = 0, matched = 0;
  double precision() const;  // NaN when nothing was predicted
  double recall() const;     // NaN when there are no gold links
  double aer() const;        // NaN when both are empty
  AlignmentCounts& operator+=(const AlignmentCounts& other);
};
AlignmentCounts score_alignment(const WordLinks& predicted, const WordLinks& gold);

// The word of each piece of a side: a piece ending in "@@" continues into the next piece.
// {"ge@@", "hen", "sie"} -> {0, 0, 1}; whole words -> {0, 1, 2, ...}.
std::vector<std::size_t> word_of_pieces(const std::vector<std::string>& pieces);

enum class QueryStep { predict, read };
QueryStep query_step_from_name(const std::string& name);  // "predict" | "read"; ValueError otherwise
const char* query_step_name(QueryStep step);

// One link per target word from weights (L, S) as above. source_words: the word of each source
// piece (m entries; the columns from m on, </s> and padding, are skipped); target_words: the word of
// each target piece (n entries; L >= n + 1 rows needed). ShapeError when the weights are too small.
WordLinks hard_alignment(const Array<float>& weights, const std::vector<std::size_t>& source_words,
                         const std::vector<std::size_t>& target_words, QueryStep step);

// Cells (row, column) of the weights (L, S) that hold a gold link: every (r(k), c) with target
// piece k in word j and source piece c in word i, for each gold link (i, j). For the explorer.
std::vector<std::pair<std::size_t, std::size_t>> gold_cells(const WordLinks& gold,
                                                            const std::vector<std::size_t>& source_words,
                                                            const std::vector<std::size_t>& target_words,
                                                            QueryStep step);

// The scores of every cross-attention head of a translation model over `pairs` (each must carry
// a gold alignment): one row per (layer, head), then one per layer for the mean over its heads
// (head = -1). Pairs are encoded as encode_evaluation_pairs does (ValueError naming file:line
// for one the model cannot take).
// The checks align_heads makes before any forward pass, alone (cheap: for a command to run before it
// creates its output): a translation model (ValueError), a gold alignment on every pair (FormatError
// naming file:line), every pair short enough for the model (ValueError naming file:line).
void check_alignment_inputs(const LoadedModel& model, const std::vector<ParallelPair>& pairs, const std::string& file);

struct HeadAlignment {
  std::string site;  // "decoder.layers.0.multihead_attn"
  std::size_t layer = 0;
  long head = 0;     // -1: the mean of the layer's heads
  AlignmentCounts counts;
};
std::vector<HeadAlignment> align_heads(LoadedModel& model, const std::vector<ParallelPair>& pairs, QueryStep step,
                                       const std::string& file);
// The single head (head >= 0) with the lowest AER; nullptr when there is none.
const HeadAlignment* best_head(const std::vector<HeadAlignment>& rows);

}  // namespace headlab
