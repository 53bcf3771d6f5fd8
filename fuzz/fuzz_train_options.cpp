// fuzz_train_options: the run-metadata text, "key = value" lines as TrainOptions::to_text writes
// them into every checkpoint (metadata "options").
//
// The input feeds TrainOptions::from_text, then validate(). Checked on the way:
//   - what from_text accepted, to_text writes and from_text reads back to the same options
//     (a checkpoint written from these options could be loaded again).
// Only headlab::Error (the documented ValueError) is swallowed; anything else is a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/train/trainer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  headlab::TrainOptions options;
  try {
    options = headlab::TrainOptions::from_text(text);
  } catch (const headlab::Error&) {
    return 0;  // refused, naming the line: fine
  }

  // The round trip through text, as a checkpoint stores the options and reads them back.
  const std::string saved = options.to_text();
  try {
    if (headlab::TrainOptions::from_text(saved).to_text() != saved) {
      std::fprintf(stderr, "fuzz_train_options: to_text / from_text changed the options:\n%s", saved.c_str());
      std::abort();
    }
  } catch (const headlab::Error& e) {
    std::fprintf(stderr, "fuzz_train_options: from_text refuses what to_text wrote: %s\n%s", e.what(), saved.c_str());
    std::abort();
  }

  try {
    options.validate();
  } catch (const headlab::Error&) {
    // An invalid combination, named by its flag: fine.
  }
  return 0;
}
