// alignment.cpp: hard alignments from cross-attention and their error rate (headlab/lab/alignment.hpp).
#include "headlab/lab/alignment.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <xtensor/xview.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/train/translate_task.hpp"

namespace headlab {

// ---- Scores ---------------------------------------------------------------------------------
double AlignmentCounts::precision() const {
  return predicted ? double(matched) / double(predicted) : std::numeric_limits<double>::quiet_NaN();
}
double AlignmentCounts::recall() const {
  return gold ? double(matched) / double(gold) : std::numeric_limits<double>::quiet_NaN();
}
double AlignmentCounts::aer() const {  // 1 - 2 |A ∩ S| / (|A| + |S|)
  const std::size_t both = predicted + gold;
  return both ? 1.0 - 2.0 * double(matched) / double(both) : std::numeric_limits<double>::quiet_NaN();
}
AlignmentCounts& AlignmentCounts::operator+=(const AlignmentCounts& o) {
  predicted += o.predicted;
  gold += o.gold;
  matched += o.matched;
  return *this;
}

AlignmentCounts score_alignment(const WordLinks& predicted, const WordLinks& gold) {
  const std::set<std::pair<std::size_t, std::size_t>> a(predicted.begin(), predicted.end()), s(gold.begin(), gold.end());
  AlignmentCounts c;
  c.predicted = a.size();
  c.gold = s.size();
  for (const auto& link : a) c.matched += s.count(link);
  return c;
}

// ---- Pieces and steps ---------------------------------------------------------------------
std::vector<std::size_t> word_of_pieces(const std::vector<std::string>& pieces) {
  std::vector<std::size_t> words;
  std::size_t word = 0;
  for (const std::string& p : pieces) {
    words.push_back(word);
    const bool continues = p.size() >= 2 && p.compare(p.size() - 2, 2, "@@") == 0;
    if (!continues) ++word;
  }
  return words;
}

QueryStep query_step_from_name(const std::string& name) {
  if (name == "predict") return QueryStep::predict;
  if (name == "read") return QueryStep::read;
  throw ValueError(quote_clipped(name, 40) + " is not a query step (predict or read)");
}

const char* query_step_name(QueryStep step) { return step == QueryStep::predict ? "predict" : "read"; }

namespace {

std::size_t row_of_piece(std::size_t k, QueryStep step) { return step == QueryStep::predict ? k : k + 1; }

std::size_t count_words(const std::vector<std::size_t>& word_of) { return word_of.empty() ? 0 : word_of.back() + 1; }

void check_map(const Array<float>& w, std::size_t sources, std::size_t targets, const char* what) {
  if (w.dimension() != 2 || w.shape()[0] < targets + 1 || w.shape()[1] < sources) {
    throw ShapeError(std::string(what) + ": weights " + shape_str(Shape(w.shape().begin(), w.shape().end())) +
                     " should be (L >= " + std::to_string(targets + 1) + ", S >= " + std::to_string(sources) +
                     ") for " + std::to_string(targets) + " target and " + std::to_string(sources) + " source pieces");
  }
}

}  // namespace

WordLinks hard_alignment(const Array<float>& w, const std::vector<std::size_t>& source_words,
                         const std::vector<std::size_t>& target_words, QueryStep step) {
  check_map(w, source_words.size(), target_words.size(), "hard_alignment");
  const std::size_t I = count_words(source_words), J = count_words(target_words);
  // score[j][i] = sum over the pieces k of word j of sum over the pieces c of word i of A[r(k), c]
  // (the mean over k has the same argmax).
  std::vector<std::vector<double>> score(J, std::vector<double>(I, 0.0));
  for (std::size_t k = 0; k < target_words.size(); ++k) {
    const std::size_t r = row_of_piece(k, step);
    for (std::size_t c = 0; c < source_words.size(); ++c) score[target_words[k]][source_words[c]] += double(w(r, c));
  }
  WordLinks links;
  if (I == 0) return links;
  for (std::size_t j = 0; j < J; ++j) {
    const std::size_t best = std::size_t(std::max_element(score[j].begin(), score[j].end()) - score[j].begin());
    links.emplace_back(best, j);
  }
  return links;
}

std::vector<std::pair<std::size_t, std::size_t>> gold_cells(const WordLinks& gold,
                                                            const std::vector<std::size_t>& source_words,
                                                            const std::vector<std::size_t>& target_words,
                                                            QueryStep step) {
  std::set<std::pair<std::size_t, std::size_t>> cells;
  for (const auto& [i, j] : gold)
    for (std::size_t k = 0; k < target_words.size(); ++k) {
      if (target_words[k] != j) continue;
      for (std::size_t c = 0; c < source_words.size(); ++c)
        if (source_words[c] == i) cells.emplace(row_of_piece(k, step), c);
    }
  return {cells.begin(), cells.end()};
}

// ---- Every cross-attention head of a model ----------------------------------------------------
namespace {
// The checks of check_alignment_inputs before the encoding.
void check_model_and_gold(const LoadedModel& m, const std::vector<ParallelPair>& pairs, const std::string& file) {
  if (m.options.task != Task::translate || !m.model)
    throw ValueError("align: the checkpoint is a '" + task_name(m.options.task) +
                     "' model; alignments need a translation (encoder-decoder) model");
  for (const ParallelPair& p : pairs)
    if (p.alignment.empty())
      throw FormatError("align: " + file + ":" + std::to_string(p.line) +
                        ": no gold alignment (a third column of i-j links is needed)");
}
}  // namespace

void check_alignment_inputs(const LoadedModel& m, const std::vector<ParallelPair>& pairs, const std::string& file) {
  check_model_and_gold(m, pairs, file);
  (void)encode_evaluation_pairs(m.src_vocab, m.tgt_vocab, pairs, m.options.max_len, file);
}

const HeadAlignment* best_head(const std::vector<HeadAlignment>& rows) {
  const HeadAlignment* best = nullptr;
  for (const HeadAlignment& r : rows)
    if (r.head >= 0 && (!best || r.counts.aer() < best->counts.aer())) best = &r;
  return best;
}

std::vector<HeadAlignment> align_heads(LoadedModel& m, const std::vector<ParallelPair>& pairs, QueryStep step,
                                       const std::string& file) {
  check_model_and_gold(m, pairs, file);
  const std::vector<EncodedPair> encoded = encode_evaluation_pairs(m.src_vocab, m.tgt_vocab, pairs, m.options.max_len, file);
  const std::vector<AttentionSite> all = attention_sites(m);
  std::vector<std::size_t> cross;  // indices of the cross-attention sites in `all`
  for (std::size_t s = 0; s < all.size(); ++s)
    if (all[s].kind == "cross") cross.push_back(s);

  std::vector<HeadAlignment> rows;
  for (std::size_t s : cross) {
    for (std::size_t h = 0; h < all[s].heads(); ++h) rows.push_back({all[s].name, all[s].layer, long(h), {}});
    rows.push_back({all[s].name, all[s].layer, -1, {}});
  }
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const std::vector<std::size_t> source_words = word_of_pieces(m.src_vocab.pieces(tokenize(pairs[p].source)));
    const std::vector<std::size_t> target_words = word_of_pieces(m.tgt_vocab.pieces(tokenize(pairs[p].target)));
    const EncodedPair& e = encoded[p];
    IndexArray source = IndexArray::from_shape({1, e.source.size()});
    for (std::size_t i = 0; i < e.source.size(); ++i) source(0, i) = e.source[i];
    IndexArray target = IndexArray::from_shape({1, e.target.size() - 1});  // <s> p_0 .. p_{n-1}: the decoder's input
    for (std::size_t i = 0; i + 1 < e.target.size(); ++i) target(0, i) = e.target[i];
    const std::vector<Array<float>> maps = attention_maps(m, source, target);  // (h, L = n + 1, S = m + 1) per site
    std::size_t row = 0;
    for (std::size_t s : cross) {
      const Array<float>& map = maps[s];
      for (std::size_t h = 0; h < all[s].heads(); ++h) {
        const Array<float> head = xt::view(map, h);  // (L, S)
        rows[row++].counts += score_alignment(hard_alignment(head, source_words, target_words, step), pairs[p].alignment);
      }
      const Array<float> mean = xt::mean(map, {0});  // (L, S): the mean over the layer's heads
      rows[row++].counts += score_alignment(hard_alignment(mean, source_words, target_words, step), pairs[p].alignment);
    }
  }
  return rows;
}

}  // namespace headlab
