// token_codec.cpp: text <-> token ids of a loaded checkpoint (headlab/train/token_codec.hpp).
#include "headlab/train/token_codec.hpp"

namespace headlab {

TokenCodec token_codec(const LoadedModel& model) {
  TokenCodec codec;  // ids only: "1 5 7"
  codec.decode = [](std::int64_t id) { return std::to_string(id); };
  // A checkpoint with a text vocabulary sets encode, decode and separator here, from what
  // load_trained_model read back; for a character-level model, for example:
  //   if (model.options.task == Task::lm) {
  //     codec.encode = [v = model.text_vocab](const std::string& text) { return v.encode(text); };
  //     codec.decode = [v = model.text_vocab](std::int64_t id) { return v.text(id); };
  //     codec.separator = "";
  //   }
  (void)model;
  return codec;
}

}  // namespace headlab
