// bpe: the merge loop against a brute-force learner, encoding against merges applied one by one,
// the paper's example by hand, round trips on the whole de-en corpus, and the merges' text form.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/core/random.hpp"
#include "headlab/data/bpe.hpp"
#include "headlab/data/text.hpp"

namespace test_bpe {

#ifndef HEADLAB_FIXTURE_DIR
#error "HEADLAB_FIXTURE_DIR must be defined (tests/CMakeLists.txt)"
#endif

using namespace headlab;

namespace {

using WordCounts = std::map<std::string, std::size_t>;

// The loop as the paper writes it: after every merge, count every pair of every word again.
std::vector<BpeMerge> brute_force_learn(const WordCounts& counts, BpeBudget budget) {
  std::vector<std::pair<std::vector<std::string>, std::size_t>> words;
  for (const auto& [w, c] : counts) words.push_back({initial_symbols(w), c});
  std::set<std::string> symbols;  // every character, inside and at the end of a word, and every merge
  for (const auto& [w, c] : words)
    for (const std::string& s : w) {
      const std::string bare = s.size() > 4 && s.substr(s.size() - 4) == "</w>" ? s.substr(0, s.size() - 4) : s;
      symbols.insert(bare);
      symbols.insert(bare + "</w>");
    }
  std::vector<BpeMerge> merges;
  for (;;) {
    std::map<std::pair<std::string, std::string>, std::size_t> pairs;
    for (const auto& [symbols_of_word, c] : words) {
      for (std::size_t i = 0; i + 1 < symbols_of_word.size(); ++i) pairs[{symbols_of_word[i], symbols_of_word[i + 1]}] += c;
    }
    if (pairs.empty()) break;
    if (budget.merges && merges.size() >= budget.merges) break;
    if (budget.vocab_size && 4 + symbols.size() >= budget.vocab_size) break;
    auto best = pairs.begin();  // highest count; the map's order breaks ties by the smaller pair
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second) best = it;
    if (best->second < 2) break;
    const BpeMerge merge{best->first.first, best->first.second};
    for (auto& w : words) apply_merge(w.first, merge);
    merges.push_back(merge);
    symbols.insert(merge.left + merge.right);
  }
  return merges;
}

// Encoding as "every merge in learned order, once, over the whole word". For learned merges this
// equals lowest-rank-first: a merge only makes pairs with its new symbol, whose merges come later.
std::vector<std::string> encode_in_order(const std::vector<BpeMerge>& merges, const std::string& word) {
  std::vector<std::string> symbols = initial_symbols(word);
  for (const BpeMerge& m : merges) apply_merge(symbols, m);
  return symbols_to_pieces(symbols);
}

// A random corpus over a small alphabet with non-ASCII letters, so that pairs repeat and tie.
WordCounts random_corpus(std::uint64_t seed) {
  const std::vector<std::string> letters = {"a", "b", "c", "d", "ü", "ß", "é"};
  Generator gen(seed);
  WordCounts counts;
  const std::size_t n_words = 5 + gen.below(40);
  for (std::size_t i = 0; i < n_words; ++i) {
    std::string word;
    const std::size_t length = 1 + gen.below(7);
    for (std::size_t k = 0; k < length; ++k) word += letters[gen.below(letters.size())];
    counts[word] += 1 + gen.below(9);
  }
  return counts;
}

std::vector<std::vector<std::string>> words_of_side(const std::vector<ParallelPair>& pairs, bool source) {
  std::vector<std::vector<std::string>> out;
  for (const auto& p : pairs) out.push_back(tokenize(source ? p.source : p.target));
  return out;
}

const std::string kCorpus = std::string(HEADLAB_FIXTURE_DIR) + "/../../datasets/de-en/";

}  // namespace

TEST_CASE("bpe: the paper's example, by hand") {
  // Sennrich et al. 2016, figure 1: low 5, lower 2, newest 6, widest 3.
  const WordCounts counts = {{"low", 5}, {"lower", 2}, {"newest", 6}, {"widest", 3}};
  const BytePairEncoding bpe = BytePairEncoding::learn(counts, {3, 0});
  // (e, s) and (s, t</w>) both occur 9 times: the tie goes to (e, s), then es + t</w>, then l + o (7).
  REQUIRE(bpe.merges().size() == 3);
  CHECK(bpe.merges()[0] == BpeMerge{"e", "s"});
  CHECK(bpe.merges()[1] == BpeMerge{"es", "t</w>"});
  CHECK(bpe.merges()[2] == BpeMerge{"l", "o"});
  // lowest: l o w e s t</w> -> l o w es t</w> -> l o w est</w> -> lo w est</w>
  CHECK(bpe.encode_word("lowest") == std::vector<std::string>{"lo@@", "w@@", "est"});
  CHECK(bpe.encode_word("z") == std::vector<std::string>{"z"});  // an unseen letter stays itself
  CHECK(BytePairEncoding::decode({"lo@@", "w@@", "est", "z"}) == std::vector<std::string>{"lowest", "z"});
}

TEST_CASE("bpe: the merge loop equals a brute-force learner, for merge and vocabulary budgets") {
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    CAPTURE(seed);
    const WordCounts counts = random_corpus(seed);
    for (const BpeBudget budget : {BpeBudget{1000, 0}, BpeBudget{5, 0}, BpeBudget{0, 12}, BpeBudget{0, 25}, BpeBudget{8, 15}}) {
      CAPTURE(budget.merges);
      CAPTURE(budget.vocab_size);
      const BytePairEncoding bpe = BytePairEncoding::learn(counts, budget);
      const std::vector<BpeMerge> expected = brute_force_learn(counts, budget);
      REQUIRE(bpe.merges().size() == expected.size());
      for (std::size_t r = 0; r < expected.size(); ++r) {
        CAPTURE(r);
        CHECK(bpe.merges()[r] == expected[r]);
      }
      for (const auto& word_and_count : counts) {  // not a structured binding: CAPTURE's lambda takes `word`
        const auto& word = word_and_count.first;
        CAPTURE(word);
        CHECK(bpe.encode_word(word) == encode_in_order(bpe.merges(), word));
        CHECK(BytePairEncoding::decode(bpe.encode_word(word)) == std::vector<std::string>{word});
      }
    }
  }
}

TEST_CASE("bpe: a vocabulary budget gives exactly that many tokens with the specials") {
  const WordCounts counts = random_corpus(7);
  const BytePairEncoding bpe = BytePairEncoding::learn(counts, {0, 20});
  std::vector<std::vector<std::string>> sentences;
  for (const auto& [word, count] : counts)
    for (std::size_t i = 0; i < count; ++i) sentences.push_back({word});
  std::vector<std::vector<std::string>> pieces = bpe.encode_all(sentences);
  pieces.push_back(alphabet_pieces(counts));
  pieces.push_back(bpe.merged_pieces());
  const Vocabulary vocab = Vocabulary::build(pieces, 1);
  CHECK(vocab.size() == 20);
}

TEST_CASE("bpe: round trips and no unknown piece on the whole de-en corpus") {
  const std::vector<ParallelPair> train = read_parallel_tsv(kCorpus + "train.tsv");
  for (const bool source : {true, false}) {
    CAPTURE(source);
    const auto train_words = words_of_side(train, source);
    WordCounts counts;
    for (const auto& sentence : train_words)
      for (const auto& w : sentence) ++counts[w];
    const BytePairEncoding bpe = BytePairEncoding::learn(counts, {0, 8000});
    std::vector<std::vector<std::string>> train_pieces = bpe.encode_all(train_words);
    train_pieces.push_back(alphabet_pieces(counts));
    train_pieces.push_back(bpe.merged_pieces());
    const Vocabulary vocab = Vocabulary::build(train_pieces, 1);
    CHECK(vocab.size() == 8000);
    for (const std::string split : {"train.tsv", "valid.tsv", "test.tsv"}) {
      CAPTURE(split);
      const auto sentences = words_of_side(read_parallel_tsv(kCorpus + split), source);
      std::size_t bad_round_trips = 0, unknown = 0;
      const auto encoded = bpe.encode_all(sentences);
      for (std::size_t i = 0; i < sentences.size(); ++i) {
        if (BytePairEncoding::decode(encoded[i]) != sentences[i]) ++bad_round_trips;
        for (const auto& piece : encoded[i]) unknown += vocab.id(piece) == Vocabulary::unk;
      }
      CHECK(bad_round_trips == 0);
      CHECK(unknown == 0);
    }
  }
}

// The fast encoder (a heap over a linked list) against the reference (rescan after each merge):
// every distinct word of every split of the whole de-en corpus, with its learned merges, and merges
// in shuffled orders (a merges file need not be in learning order: a merge may use a symbol that a
// later merge makes), on words of repeated letters where occurrences overlap.
// Also: min_pieces, the lower bound by which a line too long for a model is refused unencoded, is
// never above the pieces a word encodes into.
TEST_CASE("bpe: the fast encoder equals the reference on the corpus and on shuffled merges") {
  const std::vector<ParallelPair> train = read_parallel_tsv(kCorpus + "train.tsv");
  for (const bool source : {true, false}) {
    CAPTURE(source);
    WordCounts counts;
    for (const auto& sentence : words_of_side(train, source))
      for (const auto& w : sentence) ++counts[w];
    const BytePairEncoding bpe = BytePairEncoding::learn(counts, {0, 4000});
    std::set<std::string> words;
    for (const std::string split : {"train.tsv", "valid.tsv", "test.tsv"})
      for (const auto& sentence : words_of_side(read_parallel_tsv(kCorpus + split), source))
        words.insert(sentence.begin(), sentence.end());
    std::size_t differ = 0, bound_broken = 0;
    for (const std::string& w : words) {
      const std::vector<std::string> pieces = bpe.encode_word(w);
      differ += pieces != bpe.encode_word_reference(w);
      bound_broken += bpe.min_pieces(w.size()) > pieces.size();  // the bound a too-long line is refused by
    }
    CHECK(words.size() > 1000);
    CHECK(differ == 0);
    CHECK(bound_broken == 0);
  }
  Generator gen(7);
  const std::vector<std::string> letters = {"a", "b", "c"};
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BpeMerge> merges;
    for (int m = 0; m < 12; ++m) {
      std::string left = letters[gen.below(3)], right = letters[gen.below(3)];
      if (gen.below(2)) left += letters[gen.below(3)];
      if (gen.below(3) == 0) right += "</w>";
      merges.push_back({left, right});
    }
    std::vector<BpeMerge> distinct;
    for (const BpeMerge& m : merges)
      if (std::find(distinct.begin(), distinct.end(), m) == distinct.end()) distinct.push_back(m);
    const BytePairEncoding bpe(distinct);
    for (int k = 0; k < 20; ++k) {
      std::string word;
      for (std::uint64_t i = 0, n = 1 + gen.below(14); i < n; ++i) word += letters[gen.below(3)];
      CAPTURE(word);
      CHECK(bpe.encode_word(word) == bpe.encode_word_reference(word));
      CHECK(bpe.min_pieces(word.size()) <= bpe.encode_word(word).size());
    }
  }
}

TEST_CASE("bpe: merges as text round trip, and bad text is refused with its line") {
  const BytePairEncoding bpe = BytePairEncoding::learn(random_corpus(3), {30, 0});
  REQUIRE(!bpe.merges().empty());
  CHECK(BytePairEncoding::from_text(bpe.to_text()).merges() == bpe.merges());
  CHECK(BytePairEncoding::from_text("#headlab-bpe-merges 1").merges().empty());
  auto refused = [](const std::string& text, const std::string& why) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(BytePairEncoding::from_text(text), doctest::Contains(why.c_str()), FormatError);
  };
  refused("", "line 1: empty text");
  refused("a b\n", "line 1: expected the header");
  refused("#headlab-bpe-merges 1\na\n", "line 2: expected two symbols");
  refused("#headlab-bpe-merges 1\na b c\n", "line 2: expected two symbols");
  refused("#headlab-bpe-merges 1\na  b\n", "line 2: expected two symbols");
  refused("#headlab-bpe-merges 1\n a\n", "line 2: expected two symbols");
  refused("#headlab-bpe-merges 1\na\tb x\n", "line 2: expected two symbols");
  refused("#headlab-bpe-merges 1\na b\nc d\na b\n", "line 4: the merge 'a b' repeats");
  refused("#headlab-bpe-merges 1\na \xff\n", "line 2: invalid UTF-8");
}

TEST_CASE("bpe: words that cannot be encoded, and a budget of nothing, are refused") {
  const BytePairEncoding none;
  CHECK(none.encode_word("ab") == std::vector<std::string>{"a@@", "b"});
  CHECK_THROWS_WITH_AS(none.encode_word(""), doctest::Contains("empty word"), ValueError);
  CHECK_THROWS_WITH_AS(none.encode_word("a b"), doctest::Contains("whitespace"), ValueError);
  CHECK_THROWS_WITH_AS(none.encode_word("a\xc3"), doctest::Contains("not UTF-8"), ValueError);
  CHECK_THROWS_WITH_AS(BytePairEncoding::learn({{"ab", 2}}, {0, 0}), doctest::Contains("merges or a vocabulary size"),
                       ValueError);
}
}  // namespace test_bpe
