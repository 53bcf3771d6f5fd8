// fuzz_vocabulary: a vocabulary file, one token per line (Vocabulary::to_text's format, stored
// as "src_vocab" / "tgt_vocab" in translation checkpoints).
//
// The input feeds Vocabulary::from_text. When it is accepted, checked on the way:
//   - to_text gives the input back (with a final '\n' added when it had none);
//   - every id maps to a token and back to the same id.
// Only headlab::Error (the documented FormatError) is swallowed; anything else is a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/data/text.hpp"

namespace {
[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "fuzz_vocabulary: %s\n", why);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  headlab::Vocabulary vocab;
  try {
    vocab = headlab::Vocabulary::from_text(text);
  } catch (const headlab::Error&) {
    return 0;  // refused, naming the line: fine
  }

  const std::string written = vocab.to_text();
  if (written != text && written != text + "\n") fail("to_text does not give the accepted text back");
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    const auto id = static_cast<std::int64_t>(i);
    if (vocab.id(vocab.token(id)) != id) fail("token(id) does not map back to id");
  }
  return 0;
}
