// Characters as tokens (headlab/data/char_vocabulary.hpp).
#include <doctest/doctest.h>

#include "headlab/core/errors.hpp"
#include "headlab/data/char_vocabulary.hpp"

namespace test_char_vocabulary {

using namespace headlab;

TEST_CASE("char vocabulary: one id per code point, in code-point order after the four specials") {
  const std::string text = "abca\nÄ€ b";  // Ä and € are 2 and 3 bytes of UTF-8
  const CharVocabulary v = CharVocabulary::build(text);
  CHECK(v.size() == 4 + 7);  // \n, ' ', a, b, c, Ä, €
  const std::vector<std::int64_t> ids = v.encode(text);
  CHECK(ids.size() == 9);  // code points, not bytes (12)
  CHECK(ids[0] == ids[3]);  // 'a' twice
  CHECK(ids[4] == 4);       // '\n' is the smallest code point
  CHECK(v.decode(ids) == text);
  CHECK(v.decode_one(ids[5]) == "Ä");
  CHECK(v.encode("az") == std::vector<std::int64_t>{ids[0], CharVocabulary::unk});
  CHECK(v.count_unknown("azzé") == 3);
  CHECK(v.decode({CharVocabulary::bos, ids[0], CharVocabulary::unk, CharVocabulary::eos}) == "a<unk></s>");
  CHECK_THROWS_AS(v.decode_one(11), IndexError);
  CHECK_THROWS_AS(v.decode_one(-1), IndexError);
}

TEST_CASE("char vocabulary: to_text and from_text round-trip, and a bad entry is named") {
  const CharVocabulary v = CharVocabulary::build("héllo wörld\n\t€𝄞");
  CHECK(v.to_text().rfind("9 a 20", 0) == 0);  // tab, newline, space in hexadecimal
  const CharVocabulary back = CharVocabulary::from_text(v.to_text());
  CHECK(back.to_text() == v.to_text());
  CHECK(back.encode("wörld 𝄞") == v.encode("wörld 𝄞"));
  CHECK_THROWS_WITH_AS(CharVocabulary::from_text("61 62 61"), doctest::Contains("entry 3 '61': not above"), FormatError);
  CHECK_THROWS_WITH_AS(CharVocabulary::from_text("61 zz"), doctest::Contains("entry 2 'zz': not a hexadecimal"), FormatError);
  CHECK_THROWS_WITH_AS(CharVocabulary::from_text("d800"), doctest::Contains("not a character"), FormatError);
  CHECK_THROWS_WITH_AS(CharVocabulary::from_text("0"), doctest::Contains("not a character"), FormatError);
  CHECK_THROWS_WITH_AS(CharVocabulary::from_text("110000"), doctest::Contains("not a character"), FormatError);
  CHECK_THROWS_WITH_AS(CharVocabulary::from_text(""), doctest::Contains("no characters"), FormatError);
}

TEST_CASE("char vocabulary: invalid UTF-8 and NUL are refused, naming the byte") {
  CHECK_THROWS_WITH_AS(CharVocabulary::build("ab\xff"), "not valid UTF-8 at byte 2", ValueError);
  CHECK_THROWS_WITH_AS(CharVocabulary::build("a\xc3"), "not valid UTF-8 at byte 1", ValueError);       // cut short
  CHECK_THROWS_WITH_AS(CharVocabulary::build("\xc0\xaf"), "not valid UTF-8 at byte 0", ValueError);    // overlong '/'
  CHECK_THROWS_WITH_AS(CharVocabulary::build("\xed\xa0\x80"), "not valid UTF-8 at byte 0", ValueError);  // a surrogate
  CHECK_THROWS_WITH_AS(CharVocabulary::build(std::string("a\0b", 3)), "the text holds a NUL character", ValueError);
  const CharVocabulary v = CharVocabulary::build("ab");
  CHECK_THROWS_AS(v.encode("a\x80"), ValueError);
  for (char32_t c : {char32_t(0x41), char32_t(0xE9), char32_t(0x20AC), char32_t(0x1D11E)})
    CHECK(utf8_code_points(utf8_encode(c)) == std::vector<char32_t>{c});
}
}  // namespace test_char_vocabulary
