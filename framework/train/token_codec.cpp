// token_codec.cpp: text <-> token ids of a loaded checkpoint (headlab/train/token_codec.hpp).
#include "headlab/train/token_codec.hpp"

namespace headlab {

TokenCodec token_codec(const LoadedModel& model) {
  TokenCodec codec;  // ids only: "1 5 7"
  codec.decode = [](std::int64_t id) { return std::to_string(id); };
  if (model.options.task == Task::lm) {  // characters: the vocabulary of the training text
    codec.encode = [v = model.chars](const std::string& text) {
      const std::size_t unknown = v.count_unknown(text);
      if (unknown > 0)
        throw ValueError(std::to_string(unknown) + " character(s) of the prompt are not in the model's vocabulary "
                         "(the characters of its training text)");
      return v.encode(text);
    };
    codec.decode = [v = model.chars](std::int64_t id) { return v.decode_one(id); };
    codec.separator = "";
  }
  return codec;
}

}  // namespace headlab
