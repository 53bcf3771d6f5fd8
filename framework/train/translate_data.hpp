// translate_data.hpp (internal): the translation task's data, read and encoded once before
// training (translate_data.cpp); translate_task.cpp trains on it.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "headlab/data/batching.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/options.hpp"

namespace headlab::detail {

struct TranslationData {
  Vocabulary src_vocab, tgt_vocab;
  std::vector<EncodedPair> train, valid;
  std::vector<ParallelPair> valid_text, test_text, showcase;
  std::string showcase_file;  // "" when there is none
  std::string valid_sha256;   // of the --valid file as read, saved in the checkpoint (run_evaluation_file)
  std::size_t skipped_long = 0;
};

// --train, --valid, --test and the showcase read; the vocabularies built from --train (--tokenizer
// word or bpe; on --resume checked equal to the checkpoint's, ValueError naming the first
// difference); the training pairs that fit --max-len encoded, the others counted; every evaluation,
// test and showcase pair checked to fit (ValueError naming file and line). Logs one summary line.
TranslationData load_translation_data(const TrainOptions& options, std::ostream& log);

// The checkpoint's metadata: the vocabularies' tokens (with subwords their merges) and the
// --valid file's SHA-256 ("valid_sha256").
std::map<std::string, std::string> translation_metadata(const TranslationData& d);

}  // namespace headlab::detail
