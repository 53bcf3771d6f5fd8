// headlab/train/checkpoint.hpp: a training run's checkpoint, saved and read back.
//
// A checkpoint is a safetensors file (headlab/data/safetensors.hpp): tensors "model.<name>" (and
// "optim.<name>" unless it keeps the weights only), metadata format, options
// (TrainOptions::to_text), step, the two generators' states, the loss history, and task extras
// (the vocabularies of a translation model). Saves are atomic: a temporary file, then a rename.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "headlab/core/random.hpp"
#include "headlab/data/lm_vocabulary.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/data/text.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/train/optimizer_choice.hpp"
#include "headlab/train/options.hpp"

namespace headlab {

// The counters a run resumes from.
struct TrainState {
  std::size_t step = 0;
  std::vector<double> losses;  // one per step, from step 1
  std::string arithmetic;      // of the steps so far: "" = this machine's alone (headlab/core/machine.hpp)
};
// st.arithmetic, or this machine's fingerprint for a run that never left it.
std::string run_arithmetic(const TrainState& st);

inline const char* kCheckpointFormat = "headlab-train-checkpoint-1";

// optimizer == nullptr keeps the weights only (best.safetensors).
void save_checkpoint(const std::string& path, const TrainOptions& o, const Module<float>& model,
                     const TrainingOptimizer* optimizer, const Generator& data_rng, const Generator& dropout_rng,
                     const TrainState& st, const std::map<std::string, std::string>& extra_metadata = {});
// Errors: what the file holds (its format, options, counts, vocabularies, tensor names and shapes,
// a NaN or infinity in a tensor) is checked before anything is built from it, and every problem is a
// FormatError (an IOError) naming the file, so that every command gives the same bad file exit
// status 1; a file that cannot be read is an IOError (a FIFO or directory is refused before it is
// opened); a model too big for the available memory is OutOfMemory, before any tensor is allocated.

// The file, its format checked (FormatError otherwise).
TensorFile load_checkpoint_file(const std::string& path);
// One metadata entry (FormatError naming the file and key when it is missing).
const std::string& checkpoint_meta(const TensorFile& file, const std::string& key);
// The "model." tensors as a state dict (names without the prefix), for Module::load_state_dict.
Module<float>::StateDict saved_model_state(const TensorFile& file);
// A vocabulary saved in the metadata under `key` ("src_vocab", "tgt_vocab"): FormatError when it
// does not parse (Vocabulary::from_text) or holds no token beyond the specials.
Vocabulary saved_vocabulary(const TensorFile& file, const std::string& key);
// A language model's tokens, saved in the metadata under "tokenizer" (char or word) and
// lm_vocabulary_key(tokenizer): "lm_chars" (CharVocabulary::to_text) or "lm_words" (a word per
// line). FormatError when missing or refused by LmVocabulary::from_text. A checkpoint without a
// "tokenizer" entry (made before words existed) is char.
std::string lm_vocabulary_key(LmTokenizer tokenizer);
LmVocabulary saved_lm_vocabulary(const TensorFile& file);
// Restores model, optimiser, generators and counters for a resume. The saved options must equal `o`
// in everything but the run length (steps, time budget, stop-at-perfect): else ValueError naming the
// options that differ. --schedule cosine and linear end at --steps, so their step count must match too. Validates everything (non-finite tensors included) before changing anything.
TrainState load_checkpoint(const std::string& path, const TrainOptions& o, Module<float>& model, TrainingOptimizer& optimizer,
                           Generator& data_rng, Generator& dropout_rng);

// A trained model read back from a run's checkpoint (strictly validated: options, memory estimate
// of the model they describe, finite weights), with the options it was trained with. The model is
// in eval mode.
struct LoadedModel {
  TrainOptions options;
  std::unique_ptr<Transformer<float>> model;  // copy and translate
  std::unique_ptr<DecoderOnlyLM<float>> lm;   // induction and lm
  std::size_t step = 0;
  Vocabulary src_vocab, tgt_vocab;  // translation models (the copy task has none)
  LmVocabulary lm_vocab;            // language models (task lm): characters or words
  std::string valid_sha256;         // translate: the SHA-256 of its --valid file ("" before 2026-12-07)
};
LoadedModel load_trained_model(const std::string& checkpoint_path);
// The same on a checkpoint already in memory (parse_safetensors_bytes; a fuzzing entry point).
// memory_limit: the bytes the model may need (memory_estimate.hpp); 0 = the available memory.
LoadedModel load_trained_model(const TensorFile& checkpoint, double memory_limit = 0);

// The pairs file a translate model is scored on: `data` when given, else its run's --valid file as
// given at training (a relative path is read from the current directory). FormatError, telling the
// user to give --data, when that file is not there or is not the file the model was trained with
// (its SHA-256 differs from the checkpoint's valid_sha256).
std::string run_evaluation_file(const LoadedModel& model, const std::string& data);

}  // namespace headlab
