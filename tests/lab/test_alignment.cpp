// Alignment error rate and hard alignments from cross-attention (headlab/lab/alignment.hpp),
// on hand-computed cases.
#include <doctest/doctest.h>

#include <cmath>

#include "headlab/core/errors.hpp"
#include "headlab/lab/alignment.hpp"

namespace test_alignment {

using namespace headlab;

TEST_CASE("alignment: AER, precision and recall of a hand-computed case (Och & Ney 2003, sure links only)") {
  // gold S = {0-0, 1-2, 2-1}, predicted A = {0-0, 1-1, 2-1}: |A ∩ S| = 2, AER = 1 - 4 / 6.
  const AlignmentCounts c = score_alignment({{0, 0}, {1, 1}, {2, 1}}, {{0, 0}, {1, 2}, {2, 1}});
  CHECK(c.predicted == 3);
  CHECK(c.gold == 3);
  CHECK(c.matched == 2);
  CHECK(c.aer() == doctest::Approx(1.0 / 3.0));
  CHECK(c.precision() == doctest::Approx(2.0 / 3.0));
  CHECK(c.recall() == doctest::Approx(2.0 / 3.0));
  // Sizes differ: A = {0-0, 1-1}, S as above: 1 - 2 x 1 / 5 = 0.6, precision 1/2, recall 1/3.
  const AlignmentCounts d = score_alignment({{0, 0}, {1, 1}}, {{0, 0}, {1, 2}, {2, 1}});
  CHECK(d.aer() == doctest::Approx(0.6));
  CHECK(d.precision() == doctest::Approx(0.5));
  CHECK(d.recall() == doctest::Approx(1.0 / 3.0));
  // A perfect alignment has AER 0; a link given twice counts once.
  CHECK(score_alignment({{0, 0}, {0, 0}, {1, 1}}, {{1, 1}, {0, 0}}).aer() == doctest::Approx(0.0));
  // Summed over sentences, not averaged: (2 + 1) matched of (3 + 2) predicted and (3 + 3) gold.
  AlignmentCounts corpus = c;
  corpus += d;
  CHECK(corpus.aer() == doctest::Approx(1.0 - 2.0 * 3.0 / 11.0));
  CHECK(std::isnan(AlignmentCounts{}.aer()));
}

TEST_CASE("alignment: pieces ending in @@ belong to the next piece's word") {
  CHECK(word_of_pieces({"ge@@", "hen", "sie"}) == std::vector<std::size_t>{0, 0, 1});
  CHECK(word_of_pieces({"a", "b@@", "c@@", "d", "e"}) == std::vector<std::size_t>{0, 1, 1, 1, 2});
  CHECK(word_of_pieces({}).empty());
  CHECK(query_step_from_name("read") == QueryStep::read);
  CHECK_THROWS_AS(query_step_from_name("next"), ValueError);
}

TEST_CASE("alignment: hard alignment merges pieces, skips </s> and reads the chosen decoder row") {
  // Source pieces "ha@@ us </s>" + "rot": words {0, 0, 1} and the </s> column 3 is not a word...
  // keep it simple: source pieces q0 q1 q2 = "ha@@", "us", "rot", then </s> at column 3.
  // Target pieces p0 p1 = "red@@", "dish" (one word) and p2 = "house": target words {0, 0, 1}.
  // The decoder reads <s> p0 p1 p2: rows 0..3.
  const std::vector<std::size_t> src = {0, 0, 1}, tgt = {0, 0, 1};
  Array<float> w = xt::zeros<float>({std::size_t(4), std::size_t(4)});
  // predict rows: row 0 (-> p0), row 1 (-> p1) for word 0; row 2 (-> p2) for word 1.
  w(0, 2) = 0.6f; w(0, 0) = 0.4f;             // p0 looks at "rot"
  w(1, 0) = 0.3f; w(1, 1) = 0.3f; w(1, 2) = 0.4f;  // p1: pieces of "haus" sum 0.6 > 0.4
  w(2, 3) = 0.7f; w(2, 0) = 0.2f; w(2, 1) = 0.1f;  // p2: </s> is heaviest but never a word
  w(3, 2) = 1.0f;                              // read row of p2
  // word 0: "rot" 0.6 + 0.4 = 1.0 against "haus" 0.4 + 0.6 = 1.0 -> a tie keeps the first (haus);
  // make it decisive:
  w(1, 2) = 0.5f; w(1, 1) = 0.2f;             // "rot" 1.1 > "haus" 0.9
  CHECK(hard_alignment(w, src, tgt, QueryStep::predict) == WordLinks{{1, 0}, {0, 1}});
  // read rows: word 0 is rows 1, 2 -> "haus" 0.3 + 0.2 + 0.2 + 0.1 = 0.8 > "rot" 0.5; word 1 is row 3 -> "rot".
  CHECK(hard_alignment(w, src, tgt, QueryStep::read) == WordLinks{{0, 0}, {1, 1}});
  // Gold cells: link 1-0 (rot -> "red dish") covers the predict rows of p0 and p1 at column 2.
  using Cells = std::vector<std::pair<std::size_t, std::size_t>>;
  CHECK(gold_cells({{1, 0}}, src, tgt, QueryStep::predict) == Cells{{0, 2}, {1, 2}});
  CHECK(gold_cells({{0, 1}}, src, tgt, QueryStep::read) == Cells{{3, 0}, {3, 1}});
  // Too few rows for the target pieces: a ShapeError naming the function.
  const Array<float> small = xt::zeros<float>({std::size_t(3), std::size_t(4)});
  CHECK_THROWS_WITH_AS(hard_alignment(small, src, tgt, QueryStep::predict),
                       doctest::Contains("hard_alignment"), ShapeError);
}
}  // namespace test_alignment
