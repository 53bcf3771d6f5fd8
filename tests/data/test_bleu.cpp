// bleu: corpus BLEU-4 against NLTK 3.8 (tests/fixtures/bleu/cases.json, written by
// tests/fixtures/make_bleu_fixtures.py) and against a few values worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "headlab/data/bleu.hpp"
#include "headlab/core/errors.hpp"

namespace test_bleu {

#ifndef HEADLAB_FIXTURE_DIR
#error "HEADLAB_FIXTURE_DIR must be defined (tests/CMakeLists.txt)"
#endif

using namespace headlab;
using json = nlohmann::json;

namespace {

using Corpus = std::vector<std::vector<std::string>>;

const std::string kFixturePath = std::string(HEADLAB_FIXTURE_DIR) + "/bleu/cases.json";
constexpr double kTolerance = 1e-12;

json load_cases() {
  std::ifstream in(kFixturePath);
  REQUIRE_MESSAGE(in.good(), "cannot open ", kFixturePath, " (run /usr/bin/python3 tests/fixtures/make_bleu_fixtures.py)");
  return json::parse(in);
}

Corpus split_words(const std::vector<std::string>& lines) {
  Corpus corpus;
  for (const std::string& line : lines) {
    std::vector<std::string> words;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && line[i] == ' ') ++i;
      const std::size_t start = i;
      while (i < line.size() && line[i] != ' ') ++i;
      if (i > start) words.push_back(line.substr(start, i - start));
    }
    corpus.push_back(words);
  }
  return corpus;
}

}  // namespace

TEST_CASE("bleu: matches NLTK corpus_bleu on every fixture case") {
  const json doc = load_cases();
  REQUIRE(doc.at("cases").size() >= 10);
  for (const json& c : doc.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    CAPTURE(name);
    const BleuScore s = corpus_bleu(c.at("references").get<Corpus>(), c.at("hypotheses").get<Corpus>());
    CHECK(std::fabs(s.bleu - c.at("bleu").get<double>()) <= kTolerance);
    CHECK(std::fabs(s.brevity_penalty - c.at("brevity_penalty").get<double>()) <= kTolerance);
    CHECK(s.hypothesis_length == c.at("hypothesis_length").get<std::size_t>());
    CHECK(s.reference_length == c.at("reference_length").get<std::size_t>());
    for (std::size_t n = 0; n < 4; ++n) {
      CAPTURE(n + 1);
      CHECK(s.matches[n] == c.at("matches")[n].get<std::size_t>());
      CHECK(s.totals[n] == c.at("totals")[n].get<std::size_t>());
      CHECK(std::fabs(s.precisions[n] - c.at("precisions")[n].get<double>()) <= kTolerance);
    }
  }
}

TEST_CASE("bleu: one sentence worked out by hand") {
  // ref "the cat sat on the mat", hyp "the cat sat on a mat"
  //   1-grams: the cat sat on a mat            -> 5 of 6 match (a does not)
  //   2-grams: the-cat cat-sat sat-on on-a a-mat -> 3 of 5
  //   3-grams: the-cat-sat cat-sat-on sat-on-a on-a-mat -> 2 of 4
  //   4-grams: the-cat-sat-on cat-sat-on-a sat-on-a-mat -> 1 of 3
  //   c = r = 6 -> BP = exp(1 - 6/6) = 1;  BLEU = (5/6 * 3/5 * 2/4 * 1/3)^(1/4) = (1/12)^(1/4)
  const BleuScore s = corpus_bleu(split_words({"the cat sat on the mat"}), split_words({"the cat sat on a mat"}));
  CHECK(s.matches == std::array<std::size_t, 4>{5, 3, 2, 1});
  CHECK(s.totals == std::array<std::size_t, 4>{6, 5, 4, 3});
  CHECK(s.brevity_penalty == 1.0);
  CHECK(s.bleu == doctest::Approx(std::pow(1.0 / 12.0, 0.25)).epsilon(1e-14));
}

TEST_CASE("bleu: clipping, brevity penalty and zero precisions by hand") {
  // "the" x7 against a reference holding "the" twice: 2 of 7 unigrams count; no bigram matches -> 0.
  BleuScore s = corpus_bleu(split_words({"the cat is on the mat"}), split_words({"the the the the the the the"}));
  CHECK(s.matches[0] == 2);
  CHECK(s.totals[0] == 7);
  CHECK(s.precisions[0] == doctest::Approx(2.0 / 7.0));
  CHECK(s.bleu == 0.0);

  // The reference is the hypothesis plus 3 words: every precision is 1, BP = exp(1 - 9/6).
  s = corpus_bleu(split_words({"a b c d e f x y z"}), split_words({"a b c d e f"}));
  CHECK(s.precisions == std::array<double, 4>{1.0, 1.0, 1.0, 1.0});
  CHECK(s.brevity_penalty == doctest::Approx(std::exp(-0.5)));
  CHECK(s.bleu == doctest::Approx(std::exp(-0.5)));

  // An empty hypothesis: c = 0 -> BP 0, BLEU 0; each n still counts 1 in the denominator (NLTK's max(1, .)).
  s = corpus_bleu(split_words({"a b c"}), split_words({""}));
  CHECK(s.hypothesis_length == 0);
  CHECK(s.brevity_penalty == 0.0);
  CHECK(s.totals == std::array<std::size_t, 4>{1, 1, 1, 1});
  CHECK(s.bleu == 0.0);

  // One word: p_1 = 1/1 but 2..4-grams cannot exist: 0/1 each, so BLEU is 0.
  s = corpus_bleu(split_words({"yes"}), split_words({"yes"}));
  CHECK(s.matches == std::array<std::size_t, 4>{1, 0, 0, 0});
  CHECK(s.bleu == 0.0);
}

TEST_CASE("bleu: a perfect corpus scores exactly 1") {
  const Corpus c = split_words({"the cat sat on the mat", "a dog ran to the big red house", "one two three four"});
  const BleuScore s = corpus_bleu(c, c);
  CHECK(s.bleu == 1.0);
  CHECK(s.hypothesis_length == 18);
  CHECK(s.reference_length == 18);
}

TEST_CASE("bleu: corpus_bleu refuses lists of different lengths and an empty corpus") {
  const Corpus two = split_words({"a b", "c d"});
  const Corpus three = split_words({"a b", "c d", "e f"});
  CHECK_THROWS_WITH_AS(corpus_bleu(two, three), doctest::Contains("2 references but 3 hypotheses"), ValueError);
  CHECK_THROWS_WITH_AS(corpus_bleu({}, {}), doctest::Contains("no sentences"), ValueError);
}
}  // namespace test_bleu
