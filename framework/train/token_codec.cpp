// token_codec.cpp: text <-> token ids of a loaded checkpoint (headlab/train/token_codec.hpp).
#include "headlab/train/token_codec.hpp"

#include <algorithm>

namespace headlab {

TokenCodec token_codec(const LoadedModel& model) {
  TokenCodec codec;  // ids only: "1 5 7"
  codec.decode = [](std::int64_t id) { return std::to_string(id); };
  if (model.options.task == Task::lm) {  // the characters or words of the training text
    const std::string unit = model.lm_vocab.tokenizer() == LmTokenizer::words ? "word" : "character";
    codec.encode = [v = model.lm_vocab, unit](const std::string& text) {
      const std::vector<std::int64_t> ids = v.encode_prompt(text);
      const std::size_t unknown = std::size_t(std::count(ids.begin(), ids.end(), LmVocabulary::unk));
      if (unknown > 0)
        throw ValueError(std::to_string(unknown) + " " + unit + "(s) of the prompt are not in the model's vocabulary "
                         "(the " + unit + "s of its training text)");
      return ids;
    };
    codec.decode = [v = model.lm_vocab](std::int64_t id) { return v.decode_one(id); };
    codec.separator = "";  // a word decodes with its space before it
  }
  return codec;
}

}  // namespace headlab
