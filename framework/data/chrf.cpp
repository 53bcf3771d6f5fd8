// chrf.cpp: corpus chrF (see headlab/data/chrf.hpp for the formula and NLTK's conventions).
#include "headlab/data/chrf.hpp"

#include <algorithm>
#include <map>
#include <string_view>

#include "headlab/core/errors.hpp"
#include "headlab/data/char_vocabulary.hpp"  // utf8_code_points

namespace headlab {

namespace {

constexpr double kEpsilon = 1e-16;  // NLTK's value for P, R and F where its formula divides by 0

// The code points Python 3.11's regex \s matches in a str (the set NLTK's re.sub(r"\s+", "") removes).
bool is_python_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// How often each n-gram (n consecutive code points) occurs in `chars`; empty when n > chars.size().
std::map<std::u32string_view, std::size_t> count_char_ngrams(const std::u32string& chars, std::size_t n) {
  std::map<std::u32string_view, std::size_t> counts;
  const std::u32string_view view(chars);
  for (std::size_t start = 0; start + n <= view.size(); ++start) ++counts[view.substr(start, n)];
  return counts;
}

std::size_t ngram_total(const std::map<std::u32string_view, std::size_t>& counts) {
  std::size_t total = 0;
  for (const auto& entry : counts) total += entry.second;
  return total;
}

// F of one sentence at one order, exactly as NLTK's chrf_precision_recall_fscore_support.
double sentence_fscore(const std::u32string& reference, const std::u32string& hypothesis, std::size_t n) {
  const auto ref_counts = count_char_ngrams(reference, n);
  const auto hyp_counts = count_char_ngrams(hypothesis, n);
  std::size_t tp = 0;  // true positives: clipped matches
  for (const auto& [ngram, count] : hyp_counts) {
    const auto it = ref_counts.find(ngram);
    if (it != ref_counts.end()) tp += std::min(count, it->second);
  }
  const std::size_t tpfp = ngram_total(hyp_counts);  // true + false positives: hypothesis n-grams
  const std::size_t tpfn = ngram_total(ref_counts);  // true positives + false negatives: reference n-grams
  // NLTK catches ZeroDivisionError from any of its three divisions and returns epsilon.
  if (tpfp == 0 || tpfn == 0 || tp == 0) return kEpsilon;
  const double precision = static_cast<double>(tp) / static_cast<double>(tpfp);
  const double recall = static_cast<double>(tp) / static_cast<double>(tpfn);
  const double factor = ChrfScore::beta * ChrfScore::beta;  // b^2
  // F = (1 + b^2) P R / (b^2 P + R), evaluated in NLTK's order.
  return (1.0 + factor) * (precision * recall) / (factor * precision + recall);
}

}  // namespace

std::u32string chrf_characters(const std::vector<std::string>& tokens) {
  std::string joined;  // " ".join(tokens)
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) joined += ' ';
    joined += tokens[i];
  }
  std::u32string chars;
  for (char32_t c : utf8_code_points(joined)) {  // ValueError on invalid UTF-8
    if (!is_python_whitespace(c)) chars.push_back(c);
  }
  return chars;
}

namespace {

// chrf_characters, with a ValueError that names the sentence: "corpus_chrf: hypothesis 3: not valid
// UTF-8 at byte 5" (the byte offset is into the tokens joined with single spaces).
std::u32string sentence_characters(const std::vector<std::string>& tokens, const char* side, std::size_t index) {
  try {
    return chrf_characters(tokens);
  } catch (const ValueError& e) {
    throw ValueError(std::string("corpus_chrf: ") + side + " " + std::to_string(index + 1) + ": " + e.what());
  }
}

}  // namespace

ChrfScore corpus_chrf(const std::vector<std::vector<std::string>>& references,
                      const std::vector<std::vector<std::string>>& hypotheses) {
  if (references.size() != hypotheses.size()) {
    throw ValueError("corpus_chrf: " + std::to_string(references.size()) + " references but " +
                     std::to_string(hypotheses.size()) + " hypotheses");
  }
  if (hypotheses.empty()) throw ValueError("corpus_chrf: no sentences");

  ChrfScore score;
  score.sentences = hypotheses.size();
  std::array<double, ChrfScore::orders> totals{};  // totals[n-1] = sum over sentences of F(s, n)
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    const std::u32string reference = sentence_characters(references[i], "reference", i);
    const std::u32string hypothesis = sentence_characters(hypotheses[i], "hypothesis", i);
    score.reference_characters += reference.size();
    score.hypothesis_characters += hypothesis.size();
    for (std::size_t n = 1; n <= ChrfScore::orders; ++n) totals[n - 1] += sentence_fscore(reference, hypothesis, n);
  }

  // chrF = (sum_n sum_s F(s, n)) / 6 / S: the sum over orders first, then the two divisions, as NLTK.
  const double sentences = static_cast<double>(score.sentences);
  double sum = 0.0;
  for (std::size_t n = 0; n < ChrfScore::orders; ++n) {
    sum += totals[n];
    score.fscores[n] = totals[n] / sentences;
  }
  score.chrf = sum / static_cast<double>(ChrfScore::orders) / sentences;
  return score;
}

}  // namespace headlab
