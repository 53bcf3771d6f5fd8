// fuzz_safetensors: the bytes of a safetensors file, i.e. a checkpoint read from disk.
//
// What the input feeds, in order:
//   1. parse_safetensors_bytes (the parser behind load_safetensors). It promises never to
//      throw: any exception escaping it is a bug.
//   2. When the bytes parse: serialize_safetensors of the result must parse again to the same
//      tensors and metadata (what we read, we can write back).
//   3. The checkpoint layer on top, as `headlab eval`, `decode` and `translate` use it:
//      load_trained_model on the in-memory file (format, the "options" text through
//      TrainOptions::from_text and validate, the step, the two vocabularies of a translation
//      model, then the Transformer and its strict load_state_dict).
// Only headlab::Error (the library's documented exceptions) is swallowed; anything else
// (std::invalid_argument, std::bad_alloc, a sanitizer report) reaches libFuzzer as a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/train/trainer.hpp"

namespace {

// Stops the run with a message: libFuzzer saves the input that got here.
[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", why.c_str());
  std::abort();
}

bool same_contents(const headlab::TensorFile& a, const headlab::TensorFile& b) {
  if (a.metadata != b.metadata || a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const headlab::TensorEntry& x = a.entries()[i];
    const headlab::TensorEntry& y = b.entries()[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.bytes != y.bytes) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);

  // 1. The parser.
  headlab::TensorFile file;
  std::string error;
  if (!headlab::parse_safetensors_bytes(bytes, file, error)) return 0;  // rejected with a reason: fine

  // 2. Write it back and read it again.
  std::string written;
  try {
    written = headlab::serialize_safetensors(file);
  } catch (const headlab::Error& e) {
    fail(std::string("a parsed file cannot be written back: ") + e.what());
  }
  headlab::TensorFile again;
  if (!headlab::parse_safetensors_bytes(written, again, error)) fail("a written file does not parse: " + error);
  if (!same_contents(file, again)) fail("writing and reading back changed the contents");

  // 3. The checkpoint layer.
  file.source = "fuzz-input.safetensors";
  try {
    headlab::load_trained_model(file);
  } catch (const headlab::Error&) {
    // A documented refusal (not a checkpoint, bad options, shapes that do not match, ...).
  }
  return 0;
}
