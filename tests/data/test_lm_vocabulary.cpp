// A language model's tokens: characters or words (headlab/data/lm_vocabulary.hpp).
#include <doctest/doctest.h>

#include "headlab/core/errors.hpp"
#include "headlab/data/lm_vocabulary.hpp"

namespace test_lm_vocabulary {

using namespace headlab;

TEST_CASE("lm vocabulary: words are the translation tokenizer's, a line ends in </s>, rare words are <unk>") {
  const std::string text = "In the beginning, God.\nAnd the earth\n\nthe end";
  const LmVocabulary v = LmVocabulary::build(LmTokenizer::words, text, 2);
  CHECK(v.tokenizer() == LmTokenizer::words);
  CHECK(v.size() == 4 + 1);  // only "the" is seen twice or more
  const std::vector<std::int64_t> ids = v.encode(text);
  // in the beginning , god . </s> | and the earth </s> | </s> | the end </s>
  REQUIRE(ids.size() == 7 + 4 + 1 + 3);
  const std::int64_t the = ids[1];
  CHECK(the == 4);
  CHECK(ids[6] == LmVocabulary::eos);
  CHECK(ids[11] == LmVocabulary::eos);  // the empty line keeps its line break
  CHECK(ids[12] == the);
  CHECK(v.count_unknown(text) == 8);  // in beginning , god . and earth end
  CHECK(v.decode({the, LmVocabulary::unk, LmVocabulary::eos, the}) == " the <unk>\n the");
  CHECK_THROWS_AS(v.decode_one(5), IndexError);
  // 45 code points of the text over 15 tokens
  CHECK(v.characters_per_token(text) == doctest::Approx(45.0 / 15.0));
  const LmVocabulary all = LmVocabulary::build(LmTokenizer::words, text, 1);
  CHECK(all.count_unknown(text) == 0);
  CHECK(all.decode(all.encode("In the beginning, God.")) == " in the beginning , god .\n");  // lower-cased
}

TEST_CASE("lm vocabulary: characters are CharVocabulary's, one token per character") {
  const LmVocabulary v = LmVocabulary::build(LmTokenizer::characters, "abc\nab");
  CHECK(v.size() == 4 + 4);
  CHECK(v.decode(v.encode("cab\n")) == "cab\n");
  CHECK(v.characters_per_token("anything") == 1.0);
  CHECK(v.count_unknown("abz") == 1);
}

TEST_CASE("lm vocabulary: to_text and from_text round-trip for both, and bad input is named") {
  for (LmTokenizer t : {LmTokenizer::characters, LmTokenizer::words}) {
    CAPTURE(lm_tokenizer_name(t));
    const LmVocabulary v = LmVocabulary::build(t, "a b c a\nb", 1);
    const LmVocabulary back = LmVocabulary::from_text(t, v.to_text());
    CHECK(back.to_text() == v.to_text());
    CHECK(back.encode("c a b\n") == v.encode("c a b\n"));
    CHECK_THROWS_WITH_AS(LmVocabulary::build(t, "ok \xff"), doctest::Contains("byte 3"), ValueError);
  }
  CHECK(parse_lm_tokenizer("word") == LmTokenizer::words);
  CHECK_THROWS_WITH_AS(parse_lm_tokenizer("bpe"), doctest::Contains("'bpe' is not char or word"), ValueError);
  CHECK_THROWS_AS(LmVocabulary::from_text(LmTokenizer::words, "<pad>\n<s>\n"), FormatError);
}
}  // namespace test_lm_vocabulary
