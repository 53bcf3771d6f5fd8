// headlab/train/translate_task.hpp: translation from a two-column TSV parallel corpus.
//
// Reads --train, --valid and optionally --test, builds word vocabularies from the training side
// (headlab/data/text.hpp), batches by a token budget (headlab/data/batching.hpp), reports validation
// loss and greedy BLEU as it trains, keeps the best weights by --select (valid_loss, the default, or
// bleu) in best.safetensors, and ends with test BLEU of those weights, greedy and beam.
//
// One step:  batch = batches[order_e[s mod n]]   (epoch e = s / n, order_e a seeded shuffle)
//            logits = model(source, target[:, :-1], padding masks)      (B, T-1, V_tgt)
//            loss = cross_entropy(logits, target[:, 1:], ignore <pad>, smoothing)
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "headlab/data/batching.hpp"
#include "headlab/data/bleu.hpp"
#include "headlab/data/chrf.hpp"
#include "headlab/data/text.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/decoding.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

struct TrainResult;

TrainResult train_translation(const TrainOptions& options, std::ostream& log);

// A pair as model ids: source + </s>, and <s> + target + </s>.
EncodedPair encode_pair(const Vocabulary& src_vocab, const Vocabulary& tgt_vocab, const ParallelPair& pair);
// "" when `words` may fit `max_len` ids with `specials` added (</s>: 1; <s> and </s>: 2), else why
// not: "at least 1250002 ids with </s> (by the length of its words alone); the model allows at most
// 64". Decided from Vocabulary::min_tokens, before anything is encoded: a 10 MB word is refused at once.
std::string cannot_fit(const Vocabulary& vocab, const std::vector<std::string>& words, std::size_t specials,
                       std::size_t max_len);
// Evaluation pairs as model ids (encode_pair), each checked to fit the model: ValueError
// "translate: FILE:LINE: the pair is longer than --max-len N (source S, target T ids)" otherwise.
// `file` is the name the message gives (the trainer's --valid, eval's --data).
std::vector<EncodedPair> encode_evaluation_pairs(const Vocabulary& src_vocab, const Vocabulary& tgt_vocab,
                                                 const std::vector<ParallelPair>& pairs, std::size_t max_len,
                                                 const std::string& file);
// The validation loss: mean token negative log-likelihood over `pairs`, without label smoothing
// (whatever the run trained with), in eval mode, without a graph:
//   loss = sum over batches of NLL_batch * tokens_batch / sum of tokens,
// tokens = the targets after <s> (words and </s>), batched by token_budget_batches(pairs, max_tokens).
double translation_loss(Transformer<float>& model, const std::vector<EncodedPair>& pairs, std::size_t max_tokens);

// Corpus BLEU and chrF (x1, headlab/data/bleu.hpp, chrf.hpp) of the model's translations of the
// first `count` pairs (0 = all) against their tokenized targets, both on words (subword pieces
// glued back); the hypotheses in pair order.
struct TranslationBleu {
  BleuScore score;
  ChrfScore chrf;
  std::vector<std::vector<std::string>> hypotheses;
};
TranslationBleu translation_bleu(Transformer<float>& model, const Vocabulary& src_vocab, const Vocabulary& tgt_vocab,
                                 const std::vector<ParallelPair>& pairs, std::size_t count,
                                 const DecodeOptions& options);

// Tokenizes, encodes (+ </s>), decodes (greedy, or beam when options.beam > 1)
// in length-sorted chunks of `chunk` sentences, and returns each output's tokens
// in input order; a sentence without a token gives no token. Throws ValueError
// naming the sentence when one is longer than the model allows.
std::vector<std::vector<std::string>> translate_sentences(Transformer<float>& model, const Vocabulary& src_vocab,
                                                          const Vocabulary& tgt_vocab,
                                                          const std::vector<std::string>& sentences,
                                                          const DecodeOptions& options, std::size_t chunk = 64);

}  // namespace headlab
