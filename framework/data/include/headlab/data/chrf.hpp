// headlab/data/chrf.hpp: corpus chrF (Popović 2015, character n-gram F-score), as NLTK 3.8's
// corpus_chrf computes it with its defaults (min_len=1, max_len=6, beta=3.0, ignore_whitespace=True),
// on tokenized text with one reference per sentence.
//
// Each sentence first becomes a string of characters (code points, as a Python str is):
//   chars = " ".join(tokens) with every whitespace character removed
// so "the cat" and "thecat" are the same string, and only the characters inside the tokens count.
// Then, for each sentence s and each order n = 1..6, over the character n-grams of the two strings
// (every run of n consecutive code points; a string of L characters has max(0, L - n + 1) of them):
//   tp   = sum over n-grams g  min(count_hyp(g), count_ref(g))     (matches, clipped as in BLEU)
//   P    = tp / (n-grams in the hypothesis)                          precision
//   R    = tp / (n-grams in the reference)                           recall
//   F    = (1 + b^2) P R / (b^2 P + R),  b = 3                      recall weighs b^2 = 9 times precision
// and the corpus score is the plain mean of F over sentences and orders:
//   chrF = ( sum_n sum_s F(s, n) ) / 6 / S        S = number of sentences
//
// Conventions taken from NLTK 3.8 (nltk/translate/chrf_score.py):
//   - The averaging is per sentence (a macro average): every sentence weighs the same whatever its
//     length, and each order's F is computed from that sentence's counts alone. sacrebleu's chrF
//     instead sums tp and the n-gram counts over the corpus first and takes one F per order, and
//     gives other numbers (NLTK's docstring calls its own result "the sentence level CHRF score").
//   - Whitespace: the tokens are joined with single spaces and then every character Python's
//     regex \s matches is removed: \t \n \v \f \r, U+001C..U+001F, space, U+0085, U+00A0, U+1680,
//     U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (Python 3.11's set). A no-break space
//     inside a token is therefore dropped too. Characters are never lower-cased or normalized.
//   - The epsilon 1e-16: whenever NLTK's F formula would divide by zero it returns
//     P = R = F = 1e-16 instead. That happens when the hypothesis has no n-grams of order n (it is
//     shorter than n characters, e.g. empty), when the reference has none, and when there is no
//     match at all (tp = 0, so b^2 P + R = 0). So an order with no match adds 1e-16, not 0: two
//     disjoint corpora score 1e-16 (printed as 0.00), not 0, and so does a pair of empty
//     lines.
//   - Consequence for short sentences: a sentence of L < 6 characters has no n-grams for n > L, and
//     those orders add ~0 even when the hypothesis equals the reference: "ab" against "ab" scores
//     (1 + 1 + 4e-16) / 6 = 0.333..., not 1. Only sentences of at least 6 characters can score 1.
//   - The arithmetic is NLTK's, step by step: the same divisions, F in the same order of operations,
//     compiled without fused multiply-add (framework/CMakeLists.txt), and plain left-to-right sums in
//     NLTK's order (over sentences for each order, then over orders). On the committed fixtures the
//     result is the same double as NLTK's; the tests allow 1e-12 relative.
//   - An empty corpus (no sentences) throws ValueError; NLTK raises ZeroDivisionError. Lists of
//     different lengths throw ValueError; NLTK fails an assert.
//   - Text must be UTF-8 (ValueError naming the sentence otherwise): NLTK counts code points, not
//     bytes, so "ü" is one character here, not two.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace headlab {

struct ChrfScore {
  static constexpr std::size_t orders = 6;  // character n-grams of n = 1..6
  static constexpr double beta = 3.0;        // recall is weighted beta^2 = 9 times precision

  double chrf = 0;                          // in [0, 1]; print x100
  std::array<double, orders> fscores{};     // F of order n = 1..6, averaged over the sentences
  std::size_t sentences = 0;                // S
  std::size_t hypothesis_characters = 0;    // code points scored (whitespace removed), summed
  std::size_t reference_characters = 0;
};

// The characters chrF scores for one sentence: its tokens joined with spaces, decoded from UTF-8,
// with every whitespace code point (the set above) removed. Throws ValueError for invalid UTF-8.
// {"über", "ß"} -> U"überß" (5 code points; the UTF-8 text is 7 bytes).
std::u32string chrf_characters(const std::vector<std::string>& tokens);

// references[i] is the reference of hypotheses[i]. Throws ValueError when the two lists differ in
// length (naming both sizes), are empty, or a sentence is not UTF-8 (naming it, 1-based).
ChrfScore corpus_chrf(const std::vector<std::vector<std::string>>& references,
                      const std::vector<std::vector<std::string>>& hypotheses);

}  // namespace headlab
