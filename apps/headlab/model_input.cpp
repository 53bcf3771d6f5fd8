// model_input.cpp: one input row a model reads (model_input.hpp).
#include "model_input.hpp"
#include "cli_values.hpp"
#include "token_ids.hpp"

#include <algorithm>

#include <xtensor/xview.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/translate_task.hpp"

namespace headlab::cli {

IndexArray one_row(const std::vector<std::int64_t>& ids) {
  IndexArray a = IndexArray::from_shape({1, ids.size()});
  for (std::size_t i = 0; i < ids.size(); ++i) a(0, i) = ids[i];
  return a;
}

ExplorerInput explorer_input(LoadedModel& m, const std::string& input, const Probe& probe) {
  const TrainOptions& o = m.options;
  if (input.empty()) {
    const IndexArray first = xt::view(probe.sequences, xt::range(0, 1), xt::all());
    return {first, first};
  }
  auto check_length = [](std::size_t n, std::size_t max_len, const char* what) {
    if (n == 0 || n > max_len)
      throw ValueError("--input: give 1 to " + std::to_string(max_len) + " " + what + " (the model's length), not " +
                       std::to_string(n));
  };
  if (o.task == Task::translate) {
    std::vector<std::int64_t> source = m.src_vocab.encode(tokenize(input));
    source.push_back(Vocabulary::eos);
    check_length(source.size(), o.max_len, "tokens with </s>");
    DecodeOptions d;
    d.beam = 1;
    const std::vector<std::string> words = translate_sentences(*m.model, m.src_vocab, m.tgt_vocab, {input}, d).at(0);
    std::vector<std::int64_t> target{Vocabulary::bos};
    for (std::int64_t id : m.tgt_vocab.encode(words)) target.push_back(id);
    if (target.size() > o.max_len) target.resize(o.max_len);
    return {one_row(source), one_row(target)};
  }
  if (o.task == Task::lm) {
    const bool words = m.lm_vocab.tokenizer() == LmTokenizer::words;
    const std::vector<std::int64_t> ids = m.lm_vocab.encode_prompt(input);
    if (std::count(ids.begin(), ids.end(), LmVocabulary::unk) > 0)
      throw ValueError("--input: " + quote_clipped(input, 40) + " holds " + (words ? "words" : "characters") +
                       " the model's vocabulary lacks");
    check_length(ids.size(), m.lm->config().max_len, words ? "words" : "characters");
    return {one_row(ids), one_row(ids)};
  }
  const std::size_t vocab = m.lm ? m.lm->config().tgt_vocab : o.vocab;
  const std::vector<std::int64_t> ids = parse_token_ids(input, vocab, "--input");
  check_length(ids.size(), o.task == Task::copy ? o.length : 2 * o.length + 1, "token ids");
  return {one_row(ids), one_row(ids)};
}

}  // namespace headlab::cli
