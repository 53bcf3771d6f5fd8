// evaluation.cpp: a trained checkpoint scored again, one function per task (headlab/train/evaluation.hpp).
#include "headlab/train/evaluation.hpp"

#include "headlab/core/errors.hpp"
#include "headlab/train/copy_task.hpp"
#include "headlab/train/translate_task.hpp"

namespace headlab {

void set_attention_window(LoadedModel& m, std::size_t window, std::size_t sinks) {
  if (!m.lm)
    throw ValueError("--window/--sinks: a '" + task_name(m.options.task) +
                     "' checkpoint is an encoder-decoder; evaluation-time windows are for the decoder-only tasks "
                     "(induction, lm, recall)");
  if (sinks > 0 && window == 0) throw ValueError("--sinks " + std::to_string(sinks) + " needs --window W > 0");
  for (std::size_t l = 0; l < m.lm->layers(); ++l) m.lm->layer(l).self_attn.set_window(window, sinks);
  m.options.window = window;
  m.options.sinks = sinks;
}

CopyEvaluation evaluate_copy(const LoadedModel& m, std::size_t sequences) {
  const IndexArray data = held_out_sequences(m.options, sequences);  // (B, L)
  const IndexArray decoded = greedy_decode(*m.model, data, m.options.length, 1);
  std::size_t exact = 0, tokens = 0, right = 0;
  for (std::size_t b = 0; b < data.shape()[0]; ++b) {
    bool same = true;
    for (std::size_t t = 1; t < data.shape()[1]; ++t) {
      ++tokens;
      right += decoded(b, t) == data(b, t);
      same = same && decoded(b, t) == data(b, t);
    }
    exact += same;
  }
  CopyEvaluation e;
  e.sequences = data.shape()[0];
  e.exact_match = double(exact) / double(e.sequences);
  e.token_accuracy = tokens ? double(right) / double(tokens) : 0.0;
  return e;
}

InductionScore evaluate_induction(const LoadedModel& m, std::size_t sequences) {
  return induction_eval(*m.lm, held_out_induction_sequences(m.options, sequences));
}

namespace {
// Words of `text` and how many of them `vocab` reads as <unk>, added to the counts.
void count_words(const std::string& text, const Vocabulary& vocab, std::size_t& words, std::size_t& unknown) {
  for (std::int64_t id : vocab.encode(tokenize(text))) {
    ++words;
    unknown += id == Vocabulary::unk;
  }
}
}  // namespace

TranslationEvaluation evaluate_translation(const LoadedModel& m, const std::vector<ParallelPair>& pairs,
                                           const std::string& file, const DecodeOptions& decode) {
  const std::vector<EncodedPair> encoded =
      encode_evaluation_pairs(m.src_vocab, m.tgt_vocab, pairs, m.options.max_len, file);
  TranslationEvaluation e;
  e.sentences = pairs.size();
  for (const auto& p : pairs) {
    count_words(p.source, m.src_vocab, e.source_tokens, e.source_unknown);
    count_words(p.target, m.tgt_vocab, e.target_tokens, e.target_unknown);
  }
  e.loss = translation_loss(*m.model, encoded, m.options.max_tokens);
  for (const auto& pair : encoded) e.loss_tokens += pair.target.size() - 1;  // after <s>
  const TranslationBleu scored = translation_bleu(*m.model, m.src_vocab, m.tgt_vocab, pairs, 0, decode);
  e.bleu = scored.score;
  e.chrf = scored.chrf;
  return e;
}

}  // namespace headlab
