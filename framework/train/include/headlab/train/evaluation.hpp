// headlab/train/evaluation.hpp: a trained checkpoint scored again (`headlab eval`), one function per
// task, each with the measures the trainer's own evaluation uses, so that the same weights on the same
// data give the same numbers as the run's metrics.jsonl / summary.json:
//   copy        held-out sequences (the run's own, held_out_sequences): exact match, token accuracy
//   induction   held-out sequences (held_out_induction_sequences): the InductionScore losses
//   translate   a TSV file of pairs: validation loss (translation_loss) and corpus BLEU
//               (translation_bleu), plus what the file is made of against the model's vocabularies
// (A task added later gets a function of its own here and a branch in the CLI's eval.)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "headlab/data/bleu.hpp"
#include "headlab/data/chrf.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/train/decoding.hpp"
#include "headlab/train/induction_task.hpp"

namespace headlab {

// Scoring with another attention window than the model was trained with (StreamingLLM's experiment):
// every self-attention module of a decoder-only model (induction, lm, recall) sees its last `window`
// positions and the first `sinks` (window 0: the whole causal prefix, sinks must then be 0); a KV cache
// used afterwards keeps sinks + window entries. m.options.window and .sinks are set to match, so what is
// printed or saved from m says what was scored. ValueError naming --window / --sinks for an
// encoder-decoder checkpoint (copy, translate) or sinks without a window; m is unchanged then.
void set_attention_window(LoadedModel& m, std::size_t window, std::size_t sinks);

// Copy task: greedy decoding of `sequences` held-out sequences (B, length), scored on positions 1..L-1
// (position 0 is the start symbol, given).
struct CopyEvaluation {
  std::size_t sequences = 0;
  double exact_match = 0;     // fraction of sequences decoded without an error
  double token_accuracy = 0;  // fraction of decoded positions equal to the target
};
CopyEvaluation evaluate_copy(const LoadedModel& m, std::size_t sequences);

// Induction task: induction_eval on `sequences` held-out sequences.
InductionScore evaluate_induction(const LoadedModel& m, std::size_t sequences);

// Translation: every pair of a parallel corpus (read_parallel_tsv).
struct TranslationEvaluation {
  std::size_t sentences = 0;
  std::size_t source_tokens = 0, target_tokens = 0;    // words after tokenize(), no <s> or </s>
  std::size_t source_unknown = 0, target_unknown = 0;  // of those, the ones the vocabularies read as <unk>
                                                       // (a literal "<unk>" in the file counts)
  // The trainer's valid_loss: mean NLL per target token (words and </s>), no label smoothing, batched by
  // the checkpoint's --max-tokens; loss_tokens of them (target_tokens + sentences).
  double loss = 0;
  std::size_t loss_tokens = 0;
  ChrfScore chrf;  // of the same translations
  BleuScore bleu;  // of the decoded sources (greedy, or beam when decode.beam > 1) against the targets
};
// `file` names the pairs' file in messages: a pair longer than the model's max_len is a ValueError
// "translate: FILE:LINE: ..." (encode_evaluation_pairs), before anything is decoded.
TranslationEvaluation evaluate_translation(const LoadedModel& m, const std::vector<ParallelPair>& pairs,
                                           const std::string& file, const DecodeOptions& decode);

}  // namespace headlab
