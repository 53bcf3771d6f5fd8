// text: the tokenizer rule, UTF-8 validation, the parallel TSV reader and the vocabulary.
// Every expected value below is worked out by hand from the rule in headlab/data/text.hpp.
// The TSV tests write small files under the system temp dir and remove them afterwards.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/data/text.hpp"
#include "test_support.hpp"

namespace test_text {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::TempDir;

namespace {

using Tokens = std::vector<std::string>;

// The message of the FormatError that read_parallel_tsv throws, or "" when it throws nothing.
std::string tsv_error(const std::string& path) {
  try {
    read_parallel_tsv(path);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

std::string from_text_error(const std::string& text) {
  try {
    Vocabulary::from_text(text);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "";
}

const std::string kSpecialsText = "<pad>\n<s>\n</s>\n<unk>\n";

}  // namespace

// ---------------------------------------------------------------------------
// tokenize
// ---------------------------------------------------------------------------

TEST_CASE("text: tokenize the example of the rule") {
  CHECK(tokenize("Don't go, well-known 'X'!") == Tokens{"don't", "go", ",", "well-known", "'", "x", "'", "!"});
}

TEST_CASE("text: tokenize lower-cases ASCII and Latin-1 capitals only") {
  CHECK(tokenize("ÄPFEL Über") == Tokens{"äpfel", "über"});
  CHECK(tokenize("Straße") == Tokens{"straße"});               // ß (U+00DF) has no capital in the range
  CHECK(tokenize("ÀÞ") == Tokens{"àþ"});                       // both ends of U+00C0..U+00DE
  CHECK(tokenize("2×3") == Tokens{"2×3"});                     // U+00D7 is excluded; non-ASCII is a word character
  CHECK(tokenize("ŒΩẞ") == Tokens{"ŒΩẞ"});                     // outside Latin-1: unchanged
  CHECK(tokenize("àéÿ") == Tokens{"àéÿ"});                     // already lower case
  CHECK(tokenize("ABCXYZ abcxyz 09") == Tokens{"abcxyz", "abcxyz", "09"});
}

TEST_CASE("text: tokenize keeps an apostrophe or hyphen only between word characters") {
  CHECK(tokenize("'hello'") == Tokens{"'", "hello", "'"});
  CHECK(tokenize("dogs' 'tis") == Tokens{"dogs", "'", "'", "tis"});
  CHECK(tokenize("-x x-") == Tokens{"-", "x", "x", "-"});
  CHECK(tokenize("a--b") == Tokens{"a", "-", "-", "b"});
  CHECK(tokenize("a'-b") == Tokens{"a", "'", "-", "b"});
  CHECK(tokenize("rock'n'roll") == Tokens{"rock'n'roll"});
  CHECK(tokenize("3-4 e-mail") == Tokens{"3-4", "e-mail"});
  CHECK(tokenize("l'été") == Tokens{"l'été"});                 // non-ASCII neighbours are word characters
  CHECK(tokenize("a ' b") == Tokens{"a", "'", "b"});           // whitespace is not a word character
}

TEST_CASE("text: tokenize splits every other ASCII character off") {
  CHECK(tokenize("3.5") == Tokens{"3", ".", "5"});
  CHECK(tokenize("1,000") == Tokens{"1", ",", "000"});
  CHECK(tokenize("(a)...") == Tokens{"(", "a", ")", ".", ".", "."});
  CHECK(tokenize("x_y") == Tokens{"x", "_", "y"});
  CHECK(tokenize("«hi»") == Tokens{"«hi»"});                   // « and » are non-ASCII: word characters
}

TEST_CASE("text: tokenize splits on the six whitespace characters only") {
  CHECK(tokenize("a   b\t\tc\nd\r\ne\vf\fg") == Tokens{"a", "b", "c", "d", "e", "f", "g"});
  CHECK(tokenize("  lead and trail  ") == Tokens{"lead", "and", "trail"});
  CHECK(tokenize("a\xC2\xA0" "b") == Tokens{"a\xC2\xA0" "b"});  // U+00A0 (no-break space) is not whitespace
  CHECK(tokenize("").empty());
  CHECK(tokenize(" \t\n\r\v\f").empty());
}

TEST_CASE("text: tokenize refuses invalid UTF-8") {
  CHECK_THROWS_WITH_AS(tokenize("ab\xFF"), doctest::Contains("byte offset 2"), ValueError);
  CHECK_THROWS_AS(tokenize("\xC3"), ValueError);
}

TEST_CASE("text: split_whitespace") {
  CHECK(split_whitespace("  a b\tc ") == Tokens{"a", "b", "c"});
  CHECK(split_whitespace("Don't,") == Tokens{"Don't,"});  // no lower-casing, no punctuation split
  CHECK(split_whitespace("").empty());
}

// ---------------------------------------------------------------------------
// is_valid_utf8
// ---------------------------------------------------------------------------

TEST_CASE("text: is_valid_utf8 accepts well-formed text") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ASCII\n"));
  CHECK(is_valid_utf8("\xC3\xA4"));               // ä U+00E4
  CHECK(is_valid_utf8("\xC2\x80"));               // U+0080, the smallest 2-byte
  CHECK(is_valid_utf8("\xE2\x82\xAC"));           // € U+20AC
  CHECK(is_valid_utf8("\xE0\xA0\x80"));           // U+0800, the smallest 3-byte
  CHECK(is_valid_utf8("\xED\x9F\xBF"));           // U+D7FF, just below the surrogates
  CHECK(is_valid_utf8("\xEE\x80\x80"));           // U+E000, just above them
  CHECK(is_valid_utf8("\xF0\x9F\x98\x80"));       // U+1F600
  CHECK(is_valid_utf8("\xF4\x8F\xBF\xBF"));       // U+10FFFF, the largest code point
}

TEST_CASE("text: is_valid_utf8 refuses overlong, truncated, surrogate and out-of-range sequences") {
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));         // '/' in 2 bytes (overlong)
  CHECK_FALSE(is_valid_utf8("\xC1\xBF"));         // U+007F in 2 bytes (overlong)
  CHECK_FALSE(is_valid_utf8("\xE0\x80\xAF"));     // '/' in 3 bytes
  CHECK_FALSE(is_valid_utf8("\xE0\x9F\xBF"));     // U+07FF in 3 bytes
  CHECK_FALSE(is_valid_utf8("\xF0\x80\x80\xAF")); // '/' in 4 bytes
  CHECK_FALSE(is_valid_utf8("\xF0\x8F\xBF\xBF")); // U+FFFF in 4 bytes
  CHECK_FALSE(is_valid_utf8("\xC3"));             // truncated 2-byte
  CHECK_FALSE(is_valid_utf8("\xE2\x82"));         // truncated 3-byte
  CHECK_FALSE(is_valid_utf8("\xF0\x9F\x98"));     // truncated 4-byte
  CHECK_FALSE(is_valid_utf8("\xC3" "A"));         // lead byte followed by ASCII
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));     // U+D800, a surrogate
  CHECK_FALSE(is_valid_utf8("\xED\xBF\xBF"));     // U+DFFF, a surrogate
  CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80")); // U+110000, above the range
  CHECK_FALSE(is_valid_utf8("\xF5\x80\x80\x80")); // lead byte F5 never occurs
  CHECK_FALSE(is_valid_utf8("a\x80" "b"));        // stray continuation byte
  CHECK_FALSE(is_valid_utf8("\xFE\xFF"));
}

// ---------------------------------------------------------------------------
// read_parallel_tsv
// ---------------------------------------------------------------------------

TEST_CASE("tsv: read_parallel_tsv reads pairs, trims sides, accepts CRLF and no final newline") {
  TempDir dir;
  const std::string path = dir.write("good.tsv", "Hallo Welt\tHello world\r\n  Zwei  \t two \nÄpfel\tapples");
  const std::vector<ParallelPair> pairs = read_parallel_tsv(path);
  REQUIRE(pairs.size() == 3);
  CHECK(pairs[0].source == "Hallo Welt");
  CHECK(pairs[0].target == "Hello world");  // the \r of CRLF is gone
  CHECK(pairs[0].line == 1);
  CHECK(pairs[1].source == "Zwei");
  CHECK(pairs[1].target == "two");
  CHECK(pairs[1].line == 2);
  CHECK(pairs[2].source == "Äpfel");         // not lower-cased: the reader does not tokenize
  CHECK(pairs[2].target == "apples");
  CHECK(pairs[2].line == 3);
}

TEST_CASE("tsv: read_parallel_tsv skips a UTF-8 byte-order mark") {
  TempDir dir;
  const auto pairs = read_parallel_tsv(dir.write("bom.tsv", "\xEF\xBB\xBFja\tyes\n"));
  REQUIRE(pairs.size() == 1);
  CHECK(pairs[0].source == "ja");
}

TEST_CASE("tsv: a third column is read as a Pharaoh alignment over the tokens") {
  TempDir dir;
  const std::string path = dir.write("aligned.tsv", "Der Hund schläft.\tThe dog sleeps.\t0-0 1-1 2-2 3-3\nja\tyes\n");
  const std::vector<ParallelPair> pairs = read_parallel_tsv(path);
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0].target == "The dog sleeps.");
  const std::vector<std::pair<std::size_t, std::size_t>> links = {{0, 0}, {1, 1}, {2, 2}, {3, 3}};
  CHECK(pairs[0].alignment == links);
  CHECK(pairs[1].alignment.empty());
}

// The grammar corpus through headlab's own reader: every link is in range of headlab's tokens (the
// reader refuses any that is not), and only the German comma and the English do/does go unlinked.
TEST_CASE("tsv: every split of the grammar corpus reads with its alignments in range") {
  const std::string dir = std::string(HEADLAB_FIXTURE_DIR) + "/../../datasets/grammar-de-en/";
  for (const char* split : {"train", "valid", "test", "gen_long", "gen_combo"}) {
    CAPTURE(split);
    const std::vector<ParallelPair> pairs = read_parallel_tsv(dir + split + ".tsv");
    CHECK(pairs.size() >= 300);
    std::size_t unlinked = 0;
    for (const ParallelPair& p : pairs) {
      const auto source = tokenize(p.source), target = tokenize(p.target);
      std::vector<bool> s(source.size()), t(target.size());
      for (const auto& [i, j] : p.alignment) s[i] = t[j] = true;
      for (std::size_t i = 0; i < s.size(); ++i) unlinked += !s[i] && source[i] != ",";
      for (std::size_t j = 0; j < t.size(); ++j) unlinked += !t[j] && target[j] != "do" && target[j] != "does";
    }
    CHECK(unlinked == 0);
  }
}

TEST_CASE("tsv: read_parallel_tsv names the file and line of a bad line") {
  TempDir dir;
  const std::string no_tab = dir.write("no_tab.tsv", "a\tb\nc\td\nno tab here\ne\tf\n");
  std::string msg = tsv_error(no_tab);
  CHECK(msg.find("read_parallel_tsv: ") == 0);
  CHECK(msg.find(no_tab + ":3:") != std::string::npos);
  CHECK(msg.find("no tab") != std::string::npos);

  const std::string three_tabs = dir.write("three_tabs.tsv", "a\tb\nc\td\t0-0\te\n");
  msg = tsv_error(three_tabs);
  CHECK(msg.find(three_tabs + ":2:") != std::string::npos);
  CHECK(msg.find("3 tabs") != std::string::npos);

  // A third column is a gold alignment: i-j pairs within the sides' tokens.
  const std::string bad_link = dir.write("bad_link.tsv", "a b\tc\t0-0 1-x\n");
  CHECK(tsv_error(bad_link).find(bad_link + ":1: alignment link '1-x' is not i-j") != std::string::npos);
  const std::string out_of_range = dir.write("out_of_range.tsv", "der hund .\tthe dog .\t0-0 1-1 3-2\n");
  CHECK(tsv_error(out_of_range).find("alignment link 3-2 is out of range (3 source and 3 target tokens)") !=
        std::string::npos);

  const std::string empty_target = dir.write("empty_target.tsv", "a\t   \r\n");
  msg = tsv_error(empty_target);
  CHECK(msg.find(empty_target + ":1:") != std::string::npos);
  CHECK(msg.find("empty target") != std::string::npos);

  const std::string empty_source = dir.write("empty_source.tsv", "a\tb\n\tb\n");
  msg = tsv_error(empty_source);
  CHECK(msg.find(empty_source + ":2:") != std::string::npos);
  CHECK(msg.find("empty source") != std::string::npos);

  const std::string blank = dir.write("blank.tsv", "a\tb\n\nc\td\n");
  msg = tsv_error(blank);
  CHECK(msg.find(blank + ":2:") != std::string::npos);
  CHECK(msg.find("blank line") != std::string::npos);

  const std::string trailing_blank = dir.write("trailing_blank.tsv", "a\tb\n\n");  // one newline too many
  CHECK(tsv_error(trailing_blank).find(trailing_blank + ":2:") != std::string::npos);

  const std::string bad_utf8 = dir.write("bad_utf8.tsv", "a\tb\nc\td\xE2\x82\n");
  msg = tsv_error(bad_utf8);
  CHECK(msg.find(bad_utf8 + ":2:") != std::string::npos);
  CHECK(msg.find("invalid UTF-8 at byte 4") != std::string::npos);  // c, TAB, d, then E2
}

TEST_CASE("tsv: read_parallel_tsv refuses an empty file") {
  TempDir dir;
  const std::string empty = dir.write("empty.tsv", "");
  const std::string msg = tsv_error(empty);
  CHECK(msg.find(empty) != std::string::npos);
  CHECK(msg.find("no sentence pairs") != std::string::npos);
  CHECK(tsv_error(dir.write("bom_only.tsv", "\xEF\xBB\xBF")).find("no sentence pairs") != std::string::npos);
}

TEST_CASE("tsv: read_parallel_tsv throws IOError, not FormatError, for a file it cannot read") {
  TempDir dir;
  const std::string missing = (dir.path / "missing.tsv").string();
  CHECK_THROWS_WITH_AS(read_parallel_tsv(missing), doctest::Contains("missing.tsv"), IOError);
  bool format_error = false;
  try {
    read_parallel_tsv(missing);
  } catch (const FormatError&) {
    format_error = true;  // a FormatError is an IOError too: make sure it is the plain kind
  } catch (const IOError&) {
  }
  CHECK_FALSE(format_error);
  CHECK_THROWS_AS(read_parallel_tsv(dir.path.string()), IOError);  // a directory
}

// ---------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------

TEST_CASE("vocab: the default vocabulary holds the four specials") {
  Vocabulary v;
  REQUIRE(v.size() == 4);
  CHECK(v.token(Vocabulary::pad) == "<pad>");
  CHECK(v.token(Vocabulary::bos) == "<s>");
  CHECK(v.token(Vocabulary::eos) == "</s>");
  CHECK(v.token(Vocabulary::unk) == "<unk>");
  CHECK(v.id("<pad>") == 0);
  CHECK(v.id("</s>") == 2);
  CHECK(v.id("anything") == Vocabulary::unk);
}

TEST_CASE("vocab: build orders by count descending, then token in byte order") {
  // counts: a 3, c 2, b 1, d 1  ->  a, c, then b before d
  const Vocabulary v = Vocabulary::build({{"b", "a", "c", "a"}, {"c", "a", "d"}}, 1);
  REQUIRE(v.size() == 8);
  CHECK(v.token(4) == "a");
  CHECK(v.token(5) == "c");
  CHECK(v.token(6) == "b");
  CHECK(v.token(7) == "d");
  CHECK(v.id("d") == 7);

  // all once: byte order puts 'Z' (0x5A) before 'a' (0x61) and 'é' (0xC3 0xA9) after 'z' (0x7A)
  const Vocabulary w = Vocabulary::build({{"z", "é", "Z", "a"}}, 1);
  REQUIRE(w.size() == 8);
  CHECK(w.token(4) == "Z");
  CHECK(w.token(5) == "a");
  CHECK(w.token(6) == "z");
  CHECK(w.token(7) == "é");
}

TEST_CASE("vocab: build with min_freq and max_size") {
  const std::vector<std::vector<std::string>> corpus = {{"b", "a", "c", "a"}, {"c", "a", "d"}};
  const Vocabulary two = Vocabulary::build(corpus, 2);  // a 3, c 2
  REQUIRE(two.size() == 6);
  CHECK(two.token(4) == "a");
  CHECK(two.token(5) == "c");
  CHECK(two.id("b") == Vocabulary::unk);
  CHECK(Vocabulary::build(corpus, 4).size() == 4);  // nothing occurs 4 times
  CHECK(Vocabulary::build(corpus, 0).size() == 8);  // min_freq 0 keeps every token, like 1

  const Vocabulary capped = Vocabulary::build(corpus, 1, 5);  // 4 specials + the most frequent
  REQUIRE(capped.size() == 5);
  CHECK(capped.token(4) == "a");
  CHECK(Vocabulary::build(corpus, 1, 4).size() == 4);
  CHECK(Vocabulary::build(corpus, 1, 100).size() == 8);
  CHECK_THROWS_WITH_AS(Vocabulary::build(corpus, 1, 3), doctest::Contains("max_size 3"), ValueError);
}

TEST_CASE("vocab: build does not repeat a special and refuses tokens to_text could not save") {
  const Vocabulary v = Vocabulary::build({{"<unk>", "<unk>", "x", "</s>"}}, 1);
  REQUIRE(v.size() == 5);
  CHECK(v.token(4) == "x");
  CHECK(v.id("<unk>") == Vocabulary::unk);
  CHECK_THROWS_AS(Vocabulary::build({{"ok", ""}}, 1), ValueError);
  CHECK_THROWS_AS(Vocabulary::build({{"a b"}}, 1), ValueError);
  CHECK_THROWS_AS(Vocabulary::build({{"a\tb"}}, 1), ValueError);
  CHECK_THROWS_AS(Vocabulary::build({{"\xFF"}}, 1), ValueError);
}

TEST_CASE("vocab: encode and decode") {
  const Vocabulary v = Vocabulary::build({{"b", "a", "c", "a"}, {"c", "a", "d"}}, 1);  // a 4, c 5, b 6, d 7
  CHECK(v.encode({"a", "zzz", "c", "d"}) == std::vector<std::int64_t>{4, 3, 5, 7});
  CHECK(v.encode({}).empty());
  CHECK(v.decode({1, 4, 5, 2, 6}) == Tokens{"a", "c"});                    // <s> skipped, stop at </s>
  CHECK(v.decode({1, 4, 0, 5, 0, 0}) == Tokens{"a", "c"});                 // <pad> skipped
  CHECK(v.decode({4, 2, 6}, false) == Tokens{"a", "</s>", "b"});           // </s> kept without stop_at_eos
  CHECK(v.decode({3, 7}) == Tokens{"<unk>", "d"});
  CHECK(v.decode({2, 4}).empty());
  const Tokens sentence = {"d", "a", "b", "c", "a"};
  CHECK(v.decode(v.encode(sentence)) == sentence);
  CHECK_THROWS_WITH_AS(v.decode({4, 8}), doctest::Contains("id 8"), IndexError);
  CHECK_THROWS_AS(v.decode({4, -1}), IndexError);
  CHECK_THROWS_AS(v.decode({4, 2, 99}), IndexError);  // checked after </s> too
}

TEST_CASE("vocab: token() out of range throws IndexError naming the id and the size") {
  Vocabulary v;
  CHECK_THROWS_WITH_AS(v.token(4), doctest::Contains("id 4 out of range for a vocabulary of size 4"), IndexError);
  CHECK_THROWS_WITH_AS(v.token(-1), doctest::Contains("id -1"), IndexError);
}

TEST_CASE("vocab: to_text and from_text round trip") {
  const Vocabulary v = Vocabulary::build({{"b", "a", "c", "a"}, {"c", "a", "d", "é"}}, 1);
  CHECK(v.to_text() == kSpecialsText + "a\nc\nb\nd\né\n");
  const Vocabulary back = Vocabulary::from_text(v.to_text());
  REQUIRE(back.size() == v.size());
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(v.size()); ++i) CHECK(back.token(i) == v.token(i));
  CHECK(back.id("é") == 8);
  CHECK(Vocabulary::from_text(kSpecialsText + "x").size() == 5);  // no final newline
  CHECK(Vocabulary::from_text(Vocabulary().to_text()).size() == 4);
}

TEST_CASE("vocab: from_text refuses corrupt texts, naming the line") {
  struct Bad {
    std::string text, expected;
  };
  const std::vector<Bad> cases = {
      {"", "vocabulary line 1: missing the special token <pad>"},
      {"<pad>\n<s>\n", "vocabulary line 3: missing the special token </s>"},
      {"<s>\n<pad>\n</s>\n<unk>\n", "vocabulary line 1: expected the special token <pad>, got '<s>'"},
      {"<pad>\n<s>\n</s>\nunk\n", "vocabulary line 4: expected the special token <unk>"},
      {kSpecialsText + "a\nb\na\n", "vocabulary line 7: duplicate token 'a' (first on line 5)"},
      {kSpecialsText + "a\n<s>\n", "vocabulary line 6: special token <s> out of place"},
      {kSpecialsText + "a\n\nb\n", "vocabulary line 6: empty token"},
      {kSpecialsText + "a\n\n", "vocabulary line 6: empty token"},
      {kSpecialsText + "a b\n", "vocabulary line 5: whitespace inside the token"},
      {"<pad>\r\n<s>\r\n</s>\r\n<unk>\r\n", "vocabulary line 1: whitespace inside the token"},
      {kSpecialsText + "ok\n\xC3\x28\n", "vocabulary line 6: invalid UTF-8"},
  };
  for (const Bad& bad : cases) {
    CAPTURE(bad.text);
    const std::string msg = from_text_error(bad.text);
    CHECK(msg.find("Vocabulary::from_text: ") == 0);
    CHECK_MESSAGE(msg.find(bad.expected) != std::string::npos, msg);
  }
}
}  // namespace test_text
