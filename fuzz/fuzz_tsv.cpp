// fuzz_tsv: a parallel corpus, `source<TAB>target` per line (the --train/--valid/--test files).
//
// The input feeds parse_parallel_tsv (the parser behind read_parallel_tsv) and, as a whole,
// tokenize (which refuses invalid UTF-8 with a ValueError). When the corpus is accepted, the
// rest of what the translation trainer does with it must not fail either:
//   - every side tokenizes (the reader already checked UTF-8),
//   - Vocabulary::build accepts the tokens and its to_text reads back with from_text.
// Only headlab::Error (FormatError, ValueError) is swallowed where the docs promise it;
// anything else is a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "headlab/core/errors.hpp"
#include "headlab/data/text.hpp"

namespace {
[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "fuzz_tsv: %s\n", why.c_str());
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // The tokenizer on the raw bytes: tokens or a ValueError for invalid UTF-8.
  try {
    headlab::tokenize(text);
  } catch (const headlab::ValueError&) {
  }

  std::vector<headlab::ParallelPair> pairs;
  try {
    pairs = headlab::parse_parallel_tsv(text, "fuzz.tsv");
  } catch (const headlab::FormatError&) {
    return 0;  // refused, naming the line: fine
  }

  // What the translation trainer does next: tokenize both sides, build a vocabulary.
  std::vector<std::vector<std::string>> sentences;
  try {
    for (const auto& pair : pairs) {
      sentences.push_back(headlab::tokenize(pair.source));
      sentences.push_back(headlab::tokenize(pair.target));
    }
  } catch (const headlab::Error& e) {
    fail(std::string("an accepted pair does not tokenize: ") + e.what());
  }
  try {
    const headlab::Vocabulary vocab = headlab::Vocabulary::build(sentences, 1);
    if (headlab::Vocabulary::from_text(vocab.to_text()).size() != vocab.size()) fail("vocabulary round trip lost tokens");
  } catch (const headlab::Error& e) {
    fail(std::string("the tokens of an accepted corpus make no vocabulary: ") + e.what());
  }
  return 0;
}
