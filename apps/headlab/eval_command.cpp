// eval_command.cpp: `headlab eval`: a checkpoint scored again, one function per task. The numbers come
// from headlab/train/evaluation.hpp (the trainer's own measures); this file checks which flags the
// checkpoint's task reads, and prints human lines or one JSON object.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>

#include <limits>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/train/lm_task.hpp"
#include "headlab/train/recall_task.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/evaluation.hpp"
#include "headlab/train/memory_estimate.hpp"

namespace headlab::cli {

namespace {

using ojson = nlohmann::ordered_json;

// A flag given that `task` does not read: refused naming both (exit 2), before anything is scored.
bool refuse_flag(bool given, const char* flag, const std::string& path, Task task, const char* why) {
  if (!given) return false;
  std::cerr << "headlab eval: " << flag << " is not read for " << path << ", a '" << task_name(task)
            << "' checkpoint: " << why << "\n";
  return true;
}

// copy, induction and recall: --data, --beam and --length-penalty are the translation task's.
bool refuse_translation_flags(const LoadedModel& m, const std::string& path, const EvalOptions& o) {
  const Task task = m.options.task;
  return refuse_flag(o.data_given, "--data", path, task,
                     "copy, induction and recall checkpoints are scored on held-out sequences drawn as their training "
                     "data is (--sequences N), not on a file") ||
         refuse_flag(o.beam_given, "--beam", path, task, "it is for translation checkpoints") ||
         refuse_flag(o.length_penalty_given, "--length-penalty", path, task, "it is for translation checkpoints");
}

// Prints one eval's result: the human lines, or (--json) one object, checkpoint, task and step first.
int report(const EvalOptions& o, const std::string& path, const LoadedModel& m, const ojson& fields,
           const std::string& human) {
  if (!o.json) {
    std::cout << human;
    return 0;
  }
  ojson j = {{"checkpoint", path}, {"task", task_name(m.options.task)}, {"step", m.step}};
  j.update(fields);
  if (m.lm) {  // the attention scored: the trained one, or --window / --sinks
    j["window"] = m.options.window;
    j["sinks"] = m.options.sinks;
  }
  std::cout << j.dump() << "\n";
  return 0;
}

// copy: the run's held-out sequences (--data would need sequences the model was never built for).
int eval_copy(const LoadedModel& m, const std::string& path, const EvalOptions& o) {
  if (refuse_translation_flags(m, path, o)) return 2;
  const CopyEvaluation e = evaluate_copy(m, o.sequences);
  std::ostringstream human;
  human << "checkpoint " << path << " (step " << m.step << "), " << e.sequences << " held-out sequences: exact match "
        << std::fixed << std::setprecision(3) << e.exact_match << ", token accuracy " << e.token_accuracy << "\n";
  return report(o, path, m,
                {{"sequences", e.sequences}, {"exact_match", e.exact_match}, {"token_accuracy", e.token_accuracy}},
                human.str());
}

// induction: the run's held-out sequences, scored as its evaluation does (InductionScore).
int eval_induction(const LoadedModel& m, const std::string& path, const EvalOptions& o) {
  if (refuse_translation_flags(m, path, o)) return 2;
  const InductionScore s = evaluate_induction(m, o.sequences);
  std::ostringstream human;
  human << "checkpoint " << path << " (induction, step " << m.step << "), " << o.sequences
        << " held-out sequences: loss " << std::fixed << std::setprecision(3) << s.loss << ", first half "
        << s.first_half_loss << ", repeated half " << s.repeated_loss << " (accuracy " << s.repeated_accuracy << ")\n";
  return report(o, path, m,
                {{"sequences", o.sequences},
                 {"loss", s.loss},
                 {"first_half_loss", s.first_half_loss},
                 {"repeated_loss", s.repeated_loss},
                 {"repeated_accuracy", s.repeated_accuracy}},
                human.str());
}

// recall: the run's held-out sequences, scored as its evaluation does (RecallScore).
int eval_recall(const LoadedModel& m, const std::string& path, const EvalOptions& o) {
  if (refuse_translation_flags(m, path, o)) return 2;
  const RecallScore s = recall_eval(*m.lm, recall_layout(m.options), held_out_recall_sequences(m.options, o.sequences));
  std::ostringstream human;
  human << "checkpoint " << path << " (recall, step " << m.step << "), " << o.sequences
        << " held-out sequences: answer loss " << std::fixed << std::setprecision(3) << s.loss << ", answers right "
        << s.answer_accuracy << ", values right " << s.slot_accuracy << "\n";
  return report(o, path, m,
                {{"sequences", o.sequences},
                 {"loss", s.loss},
                 {"answer_accuracy", s.answer_accuracy},
                 {"slot_accuracy", s.slot_accuracy}},
                human.str());
}

// lm: nats per token and bits per character over the text of --data, in consecutive windows of
// the model's context (lm_score, as the trainer scores its validation text).
int eval_lm(const LoadedModel& m, const std::string& path, const EvalOptions& o) {
  if (!o.data_given) {
    std::cerr << "headlab eval: " << path << " is an 'lm' checkpoint: give --data FILE (a UTF-8 text)\n";
    return 2;
  }
  if (refuse_flag(o.sequences_given, "--sequences", path, m.options.task, "a language model is scored on all of --data") ||
      refuse_flag(o.beam_given, "--beam", path, m.options.task, "it is for translation") ||
      refuse_flag(o.length_penalty_given, "--length-penalty", path, m.options.task, "it is for translation"))
    return 2;
  const std::string text = read_text_file(o.data, "eval --data", kNoSizeLimit);  // a byte-order mark dropped, as train does
  std::vector<std::int64_t> ids;
  try {
    ids = m.lm_vocab.encode(text);
  } catch (const ValueError& e) {
    throw FormatError("eval --data: " + o.data + ": " + e.what());
  }
  if (ids.size() < m.options.length + 1)
    throw FormatError("eval --data: " + o.data + ": " + std::to_string(ids.size()) +
                      " tokens, fewer than one window of the model's context + 1 = " +
                      std::to_string(m.options.length + 1));
  const std::size_t unknown = std::size_t(std::count(ids.begin(), ids.end(), LmVocabulary::unk));
  const std::string tokenizer = lm_tokenizer_name(m.lm_vocab.tokenizer());
  const LmScore s = lm_score(*m.lm, ids, m.options.length, std::numeric_limits<std::size_t>::max(), m.options.batch,
                             m.lm_vocab.characters_per_token(text), m.options.bos_windows);
  std::ostringstream human;
  human << "checkpoint " << path << " (lm, step " << m.step << ", " << tokenizer << " tokens), " << o.data << ": "
        << ids.size() << " tokens (" << unknown << " unknown, read as <unk>), " << s.tokens << " scored: " << std::fixed
        << std::setprecision(4) << s.loss << (tokenizer == "char" ? " nats/char, " : " nats/word, ")
        << std::setprecision(3) << s.bits_per_char << " bits/char\n";
  return report(o, path, m,
                {{"tokenizer", tokenizer},
                 {"tokens", ids.size()},
                 {"unknown_tokens", unknown},
                 {"scored_tokens", s.tokens},
                 {"loss", s.loss},
                 {"bits_per_char", s.bits_per_char}},
                human.str());
}

double rate(std::size_t part, std::size_t whole) { return whole ? double(part) / double(whole) : 0.0; }

// translate: token NLL and corpus BLEU over the pairs of --data.
int eval_translate(const LoadedModel& m, const std::string& path, const EvalOptions& o) {
  if (!o.data_given) {
    std::cerr << "headlab eval: " << path << " is a 'translate' checkpoint: give --data FILE.tsv (source<TAB>target "
              << "per line), for example the run's validation file " << m.options.valid_file << "\n";
    return 2;
  }
  if (refuse_flag(o.sequences_given, "--sequences", path, m.options.task,
                  "a translation checkpoint is scored on every pair of --data") ||
      refuse_flag(o.length_penalty_given && o.beam == 1, "--length-penalty", path, m.options.task,
                  "it is for beam search (--beam 2 or more); greedy decoding does not read it"))
    return 2;
  DecodeOptions decode;
  decode.beam = o.beam;
  decode.length_penalty = o.length_penalty_given ? o.length_penalty : m.options.length_penalty;
  const std::vector<ParallelPair> pairs = read_parallel_tsv(o.data);
  const TranslationEvaluation e = evaluate_translation(m, pairs, o.data, decode);
  const BleuScore& b = e.bleu;
  std::ostringstream human;
  human << std::fixed << "checkpoint " << path << " (translate, step " << m.step << ") on " << o.data << ": "
        << e.sentences << " sentences, " << e.source_tokens << " source / " << e.target_tokens
        << " target tokens; unknown to the vocabularies: " << std::setprecision(2)
        << 100.0 * rate(e.source_unknown, e.source_tokens) << "% source, "
        << 100.0 * rate(e.target_unknown, e.target_tokens) << "% target\n";
  human << "loss " << std::setprecision(4) << e.loss << " (mean NLL per target token, </s> included, no label "
        << "smoothing; " << e.loss_tokens << " tokens)\n";
  human << "BLEU " << std::setprecision(2) << 100.0 * b.bleu << " ("
        << (o.beam > 1 ? "beam " + std::to_string(o.beam) : std::string("greedy")) << "; precisions "
        << 100.0 * b.precisions[0] << "/" << 100.0 * b.precisions[1] << "/" << 100.0 * b.precisions[2] << "/"
        << 100.0 * b.precisions[3] << ", BP " << std::setprecision(3) << b.brevity_penalty << ", hypothesis "
        << b.hypothesis_length << " / reference " << b.reference_length << " tokens)\n";
  human << "chrF " << std::setprecision(2) << 100.0 * e.chrf.chrf << " (character 1-6 grams, beta 3, as NLTK "
        << "corpus_chrf; on the same words)\n";
  return report(o, path, m,
                {{"data", o.data},
                 {"sentences", e.sentences},
                 {"source_tokens", e.source_tokens},
                 {"target_tokens", e.target_tokens},
                 {"source_unknown", e.source_unknown},
                 {"target_unknown", e.target_unknown},
                 {"source_unknown_rate", rate(e.source_unknown, e.source_tokens)},
                 {"target_unknown_rate", rate(e.target_unknown, e.target_tokens)},
                 {"loss", e.loss},
                 {"loss_tokens", e.loss_tokens},
                 {"decoding", o.beam > 1 ? "beam" : "greedy"},
                 {"beam", o.beam},
                 {"length_penalty", o.beam > 1 ? ojson(decode.length_penalty) : ojson(nullptr)},
                 {"bleu", 100.0 * b.bleu},  // x100, as the trainer's valid_bleu
                 {"chrf", 100.0 * e.chrf.chrf},
                 {"precisions", b.precisions},
                 {"brevity_penalty", b.brevity_penalty},
                 {"hypothesis_length", b.hypothesis_length},
                 {"reference_length", b.reference_length}},
                human.str());
}

}  // namespace

int run_eval(const EvalOptions& o) {
  if (o.run_dir.empty() == o.checkpoint.empty()) {  // both given is refused by the parser already
    std::cerr << "headlab eval: give --run-dir DIR (its checkpoint.safetensors) or --checkpoint FILE\n";
    return 2;
  }
  const std::string path =
      o.checkpoint.empty() ? (std::filesystem::path(o.run_dir) / "checkpoint.safetensors").string() : o.checkpoint;
  LoadedModel m = load_trained_model(path);
  std::string window;
  try {
    window = apply_window_override(m, o.window);
  } catch (const ValueError& e) {
    std::cerr << "headlab eval: " << path << ": " << e.what() << "\n";
    return 2;
  }
  if (!window.empty() && !o.json) std::cout << window << "\n";
  if (m.options.task == Task::copy || m.options.task == Task::induction || m.options.task == Task::recall) {
    // Their --sequences are scored in one batch: its buffers are checked against the available
    // memory before any sequence is drawn, as train checks its --eval-sequences.
    TrainOptions scored = m.options;
    scored.eval_sequences = o.sequences;
    try {
      check_memory(estimate_inference_memory(scored, 0, 0, 0), available_memory(),
                   "--sequences " + std::to_string(o.sequences) + " of " + path, "give fewer --sequences");
    } catch (const OutOfMemory& e) {
      std::cerr << "headlab eval: " << e.what() << "\n";
      return 2;  // more held-out sequences than there is memory for: a bad value, as in train
    }
  }
  switch (m.options.task) {  // a task added later gets its own eval_<task> here
    case Task::copy:
      return eval_copy(m, path, o);
    case Task::induction:
      return eval_induction(m, path, o);
    case Task::translate:
      return eval_translate(m, path, o);
    case Task::lm:
      return eval_lm(m, path, o);
    case Task::recall:
      return eval_recall(m, path, o);
  }
  std::cerr << "headlab eval: " << path << ": no evaluation for the '" << task_name(m.options.task) << "' task\n";
  return 2;
}

}  // namespace headlab::cli
