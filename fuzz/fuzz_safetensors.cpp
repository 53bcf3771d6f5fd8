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
//      model, the memory estimate of the model they describe (here against 256 MB), finite
//      weights, then the Transformer and its strict load_state_dict).
//   4. When the checkpoint loads: one greedy decoding step of the model on a two-token input,
//      as `headlab decode` / `translate` / `heads` would run it (encoder, KV caches, generator;
//      the decoder-only model of the induction task through its caches). A model that loads
//      must be usable: that is what finds a 0-layer model reading the first of no caches.
// Only headlab::Error (the library's documented exceptions) is swallowed; anything else
// (std::invalid_argument, std::bad_alloc, a sanitizer report) reaches libFuzzer as a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <algorithm>

#include "headlab/core/errors.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/checkpoint.hpp"
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

// The first step of decoding, as the commands run it: encoder-decoder models (copy, translate)
// through greedy_decode (encoder, one decoder step with its KV caches, generator); the decoder-only
// model (induction) through its caches, one token.
void decode_one_step(headlab::LoadedModel& m) {
  if (m.model) {
    const std::size_t vocab = m.model->config().src_vocab;
    headlab::IndexArray src = headlab::IndexArray::from_shape({1, 2});
    src(0, 0) = 1;
    src(0, 1) = static_cast<std::int64_t>(std::min<std::size_t>(3, vocab - 1));
    (void)headlab::greedy_decode(*m.model, src, 2, 1);
  } else if (m.lm) {
    headlab::NoGradGuard no_grad;
    std::vector<headlab::KVCache<float>> caches(m.lm->layers());
    headlab::IndexArray ids = headlab::IndexArray::from_shape({1, 1});
    ids(0, 0) = static_cast<std::int64_t>(std::min<std::size_t>(1, m.lm->config().tgt_vocab - 1));
    (void)m.lm->forward(ids, nullptr, &caches);
  } else {
    fail("load_trained_model returned no model");
  }
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
  headlab::LoadedModel model;
  try {
    model = headlab::load_trained_model(file, 256.0 * (1 << 20));
  } catch (const headlab::Error&) {
    return 0;  // a documented refusal (not a checkpoint, bad options, shapes that do not match, ...)
  }

  // 4. One greedy decoding step: <s> then token 3 (or the last id of a smaller vocabulary).
  try {
    decode_one_step(model);
  } catch (const headlab::Error& e) {
    fail(std::string("a checkpoint that loads cannot decode one step: ") + e.what());
  }
  return 0;
}
