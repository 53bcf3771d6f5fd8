// headlab/train/lm_task.hpp: a language model on a text file (nanoGPT's shakespeare_char, minGPT's
// char demo), trained on a decoder-only model; its tokens are characters (the default) or words.
//
// The text becomes one stream of token ids (headlab/data/lm_vocabulary.hpp, built from the
// training text by --tokenizer char|word). Without --valid, its last --valid-fraction of
// characters is held out.
// One step:  B windows of T + 1 ids at uniform random starts of the training stream (data_rng)
//            with --bos-windows, window[:, 0] = <s> (a fixed first input, the target ids unchanged)
//            logits = model(window[:, :-1])              (B, T, V), causal
//            loss = cross_entropy(logits, window[:, 1:])  mean over the B T next characters
// Validation: the held-out stream cut into consecutive windows of T + 1 ids (each window's first
// id is the last of the one before), at most --eval-sequences of them; the mean negative
// log-likelihood per token in nats, and in bits per character: bits/char = nats/token / ln 2 /
// (characters per token of the validation text; 1 for characters).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "headlab/data/lm_vocabulary.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

struct TrainResult;

// The run's text: its vocabulary and the two id streams.
struct LmData {
  LmVocabulary vocab;
  std::vector<std::int64_t> train, valid;
  std::size_t valid_unknown = 0;        // held-out tokens the vocabulary lacks (read as <unk>)
  double valid_chars_per_token = 1.0;   // characters of the validation text per token
};
// Reads --text (and --valid): IOError for a file that cannot be read; FormatError naming the file
// for invalid UTF-8 or a text too short for one window on either side. A resumed run passes the
// vocabulary saved in its checkpoint (`saved`): the text must then encode to no token outside it.
LmData load_lm_data(const TrainOptions& o, const LmVocabulary* saved = nullptr);

struct LmScore {
  double loss = 0;           // nats per token
  double bits_per_char = 0;  // loss / ln 2 / chars_per_token
  std::size_t tokens = 0;    // tokens scored
};
// The validation score of `ids` (eval mode, no graph), windows of `context` + 1 ids as above, at
// most `max_windows`, `batch` windows per forward. bos_first (a model trained with --bos-windows):
// each window's first input is <s> instead of its first id, as in training.
LmScore lm_score(DecoderOnlyLM<float>& model, const std::vector<std::int64_t>& ids, std::size_t context,
                 std::size_t max_windows, std::size_t batch, double chars_per_token = 1.0, bool bos_first = false);

// The first-token attention sink (Xiao et al. 2023, StreamingLLM) of a decoder-only model on the
// windows lm_score reads (their first `context` ids as inputs, at most `max_windows`):
//   sink_mass = mean over windows b, layers l, heads h and queries i = 1 .. L-1 of A_lh[b, i, 0]
// (query 0 sees only position 0 and is left out). A model that attends uniformly gives
// mean_i 1 / (i + 1); one that parks its attention on the first position gives about 1. Eval
// mode, no graph; the layers' taps are read and switched off again. At the end of an lm run it
// goes into summary.json as "sink_mass" (`headlab heads` reports the same score per head, on its
// repeated-token probe). ValueError as lm_score.
double lm_sink_mass(DecoderOnlyLM<float>& model, const std::vector<std::int64_t>& ids, std::size_t context,
                    std::size_t max_windows, std::size_t batch, bool bos_first = false);

TrainResult train_lm(const TrainOptions& options, std::ostream& log);

}  // namespace headlab
