// chrf: corpus chrF against NLTK 3.8 (tests/fixtures/chrf/cases.json, written by
// tests/fixtures/make_chrf_fixtures.py) and against a few values worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "headlab/data/chrf.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/data/text.hpp"

namespace test_chrf {

#ifndef HEADLAB_FIXTURE_DIR
#error "HEADLAB_FIXTURE_DIR must be defined (tests/CMakeLists.txt)"
#endif

using namespace headlab;
using json = nlohmann::json;

namespace {

using Corpus = std::vector<std::vector<std::string>>;

const std::string kFixturePath = std::string(HEADLAB_FIXTURE_DIR) + "/chrf/cases.json";
constexpr double kRelativeTolerance = 1e-12;
constexpr double kEpsilon = 1e-16;  // NLTK's F where its formula divides by zero

json load_cases() {
  std::ifstream in(kFixturePath);
  REQUIRE_MESSAGE(in.good(), "cannot open ", kFixturePath, " (run /usr/bin/python3 tests/fixtures/make_chrf_fixtures.py)");
  return json::parse(in);
}

// |got - want| <= 1e-12 |want|: relative, so that NLTK's 1e-16 for "no match" is told from 0.
bool close(double got, double want) { return std::fabs(got - want) <= kRelativeTolerance * std::fabs(want); }

Corpus split_lines(const std::vector<std::string>& lines) {
  Corpus corpus;
  for (const std::string& line : lines) corpus.push_back(split_whitespace(line));
  return corpus;
}

}  // namespace

TEST_CASE("chrf: matches NLTK corpus_chrf on every fixture case") {
  const json doc = load_cases();
  REQUIRE(doc.at("cases").size() >= 20);
  for (const json& c : doc.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    CAPTURE(name);
    const ChrfScore s = corpus_chrf(c.at("references").get<Corpus>(), c.at("hypotheses").get<Corpus>());
    const double want = c.at("chrf").get<double>();
    CAPTURE(want);
    CAPTURE(s.chrf);
    CHECK(close(s.chrf, want));
    CHECK(s.sentences == c.at("sentences").get<std::size_t>());
    CHECK(s.hypothesis_characters == c.at("hypothesis_characters").get<std::size_t>());
    CHECK(s.reference_characters == c.at("reference_characters").get<std::size_t>());
    for (std::size_t n = 0; n < ChrfScore::orders; ++n) {
      CAPTURE(n + 1);
      CHECK(close(s.fscores[n], c.at("fscores")[n].get<double>()));
    }
  }
}

TEST_CASE("chrf: one sentence worked out by hand") {
  // ref "ab cd" -> "abcd", hyp "abce" (whitespace removed before counting):
  //   n=1: a b c e vs a b c d: tp 3, P = R = 3/4     -> F = P = 3/4 (P = R gives F = P for any beta)
  //   n=2: ab bc ce vs ab bc cd: tp 2, P = R = 2/3   -> F = 2/3
  //   n=3: abc bce vs abc bcd: tp 1, P = R = 1/2     -> F = 1/2
  //   n=4: abce vs abcd: tp 0                        -> NLTK's epsilon 1e-16
  //   n=5, 6: no n-grams on either side              -> 1e-16 each
  //   chrF = (3/4 + 2/3 + 1/2 + 3e-16) / 6
  const ChrfScore s = corpus_chrf(split_lines({"ab cd"}), split_lines({"abce"}));
  CHECK(s.fscores[0] == doctest::Approx(0.75).epsilon(1e-15));
  CHECK(s.fscores[1] == doctest::Approx(2.0 / 3.0).epsilon(1e-15));
  CHECK(s.fscores[2] == doctest::Approx(0.5).epsilon(1e-15));
  for (std::size_t n = 3; n < 6; ++n) CHECK(s.fscores[n] == kEpsilon);
  CHECK(s.chrf == doctest::Approx((0.75 + 2.0 / 3.0 + 0.5 + 3e-16) / 6.0).epsilon(1e-15));
  CHECK(s.hypothesis_characters == 4);
  CHECK(s.reference_characters == 4);
}

TEST_CASE("chrf: beta 3 weighs recall 9 times precision") {
  // ref "abcdefgh", hyp "abc": n=1: tp 3, P = 1, R = 3/8 -> F = 10 * (3/8) / (9 + 3/8) = 3.75 / 9.375 = 0.4.
  // With beta 2 it would be 5 * (3/8) / (4 + 3/8) = 0.4286; with beta 1, 0.5455.
  const ChrfScore s = corpus_chrf(split_lines({"abcdefgh"}), split_lines({"abc"}));
  CHECK(s.fscores[0] == doctest::Approx(0.4).epsilon(1e-15));
}

TEST_CASE("chrf: characters are code points, whitespace is removed, case is kept") {
  // "über ß é": 6 code points once the spaces go (9 bytes of UTF-8).
  CHECK(chrf_characters({"über", "ß", "é"}) == U"überßé");
  CHECK(chrf_characters({"a\xC2\xA0" "b", "c\tD"}) == U"abcD");      // U+00A0 and \t are \s in Python
  CHECK(chrf_characters({"x\xE2\x80\x8By"}) == U"x\u200By");          // U+200B is not
  CHECK(chrf_characters({}).empty());

  // "ü" against "ü": one character, so only order 1 exists: (1 + 5 epsilon) / 6. Counting bytes would
  // give two characters and (1 + 1 + 4 epsilon) / 6.
  const ChrfScore s = corpus_chrf(split_lines({"ü"}), split_lines({"ü"}));
  CHECK(s.hypothesis_characters == 1);
  CHECK(s.chrf == doctest::Approx((1.0 + 5e-16) / 6.0).epsilon(1e-15));
}

TEST_CASE("chrf: identical corpora score 1, disjoint ones NLTK's epsilon") {
  const Corpus c = split_lines({"the cat sat on the mat", "a dog ran to the big red house"});
  CHECK(corpus_chrf(c, c).chrf == 1.0);
  // No character in common: every order's F is 1e-16, and so is their mean (not 0).
  CHECK(corpus_chrf(split_lines({"aaa bbb"}), split_lines({"xyz"})).chrf == doctest::Approx(kEpsilon).epsilon(1e-12));
  CHECK(corpus_chrf(split_lines({"abc"}), split_lines({""})).chrf == doctest::Approx(kEpsilon).epsilon(1e-12));
}

TEST_CASE("chrf: corpus_chrf refuses lists of different lengths, an empty corpus and invalid UTF-8") {
  const Corpus two = split_lines({"a b", "c d"});
  const Corpus three = split_lines({"a b", "c d", "e f"});
  CHECK_THROWS_WITH_AS(corpus_chrf(two, three), doctest::Contains("2 references but 3 hypotheses"), ValueError);
  CHECK_THROWS_WITH_AS(corpus_chrf(three, two), doctest::Contains("3 references but 2 hypotheses"), ValueError);
  CHECK_THROWS_WITH_AS(corpus_chrf({}, {}), doctest::Contains("no sentences"), ValueError);
  const Corpus bad = {{"a"}, {"b\xFF"}};
  CHECK_THROWS_WITH_AS(corpus_chrf(two, bad), doctest::Contains("hypothesis 2: not valid UTF-8"), ValueError);
  CHECK_THROWS_WITH_AS(corpus_chrf(bad, two), doctest::Contains("reference 2: not valid UTF-8"), ValueError);
}
}  // namespace test_chrf
