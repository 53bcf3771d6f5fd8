// headlab/train/token_codec.hpp: between text and the token ids of a trained decoder-only model.
//
// A checkpoint of the induction task holds no text: its tokens are bare ids, read and written as
// decimal numbers separated by spaces ("1 5 7"). A checkpoint that carries a text vocabulary (a
// language model trained on a text file) also turns text into ids and ids into text; token_codec()
// is the one place that knows which checkpoints do, and how.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "headlab/train/checkpoint.hpp"

namespace headlab {

struct TokenCodec {
  // Text -> ids; empty (has_text() false) when the checkpoint holds no text vocabulary. Throws
  // ValueError for text the vocabulary cannot encode.
  std::function<std::vector<std::int64_t>(const std::string& text)> encode;
  // One id -> its text: the id in decimal without a text vocabulary.
  std::function<std::string(std::int64_t id)> decode;
  std::string separator = " ";  // written between two decoded tokens ("" for characters)

  bool has_text() const { return static_cast<bool>(encode); }
};

// The codec of a loaded checkpoint (it copies what it needs: the LoadedModel may go away).
TokenCodec token_codec(const LoadedModel& model);

}  // namespace headlab
