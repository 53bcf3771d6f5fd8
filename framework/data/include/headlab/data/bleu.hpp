// headlab/data/bleu.hpp: corpus BLEU-4 (Papineni et al. 2002), as NLTK 3.8's corpus_bleu computes it
// with its defaults (uniform weights, no smoothing), on tokenized text with one reference per
// sentence.
//
// For n = 1..4, over the corpus:
//   matches_n = sum over sentences of  sum over n-grams g of the hypothesis  min(count_hyp(g), count_ref(g))
//   totals_n  = sum over sentences of  max(1, number of n-grams in the hypothesis)
//   p_n       = matches_n / totals_n                 (clipped or "modified" n-gram precision)
//   c = total hypothesis length, r = total reference length
//   BP        = 1 if c > r, 0 if c == 0, else exp(1 - r / c)
//   BLEU      = BP * exp( (1/4) * sum_n log p_n ),  and 0 when some p_n is 0
//
// Conventions taken from NLTK 3.8 (nltk/translate/bleu_score.py):
//   - max(1, .) in totals_n: a hypothesis with fewer than n tokens still adds 1 to the denominator
//     of p_n (NLTK's modified_precision guards a division by zero this way). sacrebleu adds 0 there;
//     the two agree whenever every hypothesis has at least 4 tokens.
//   - r is the reference length itself (NLTK picks the reference closest in length to the
//     hypothesis, shorter on a tie; with one reference that is the reference).
//   - BLEU is 0 when some p_n is 0. NLTK returns exactly 0 when p_1 = 0; when only a higher p_n is 0
//     it replaces p_n by the smallest normal double (2.2e-308) and returns a number below 1.3e-77
//     instead of 0. Here that is exactly 0 (a difference of less than 1e-76).
//   - NLTK sums the logs with math.fsum (exactly rounded); here it is a plain sum of four terms,
//     which may differ in the last bit or two.
//   - An empty corpus (no sentences) throws ValueError; NLTK raises ZeroDivisionError.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace headlab {

struct BleuScore {
  double bleu = 0;                        // in [0, 1]; print x100
  std::array<double, 4> precisions{};     // p_1..p_4 = matches / totals
  std::array<std::size_t, 4> matches{};   // clipped n-gram matches, summed over the corpus
  std::array<std::size_t, 4> totals{};    // hypothesis n-grams (at least 1 per sentence), summed
  double brevity_penalty = 0;             // BP
  std::size_t hypothesis_length = 0;      // c
  std::size_t reference_length = 0;       // r
};

// references[i] is the reference of hypotheses[i]. Throws ValueError when the two lists differ in
// length (naming both sizes) or are empty.
BleuScore corpus_bleu(const std::vector<std::vector<std::string>>& references,
                      const std::vector<std::vector<std::string>>& hypotheses);

}  // namespace headlab
