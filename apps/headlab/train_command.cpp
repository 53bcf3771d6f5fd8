// train_command.cpp: `headlab train`.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <iostream>

#include "commands.hpp"
#include "token_ids.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/run_dir.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab::cli {

namespace {
void on_stop_signal(int) { request_stop(); }  // async-signal-safe: sets a flag the loop checks
}  // namespace

int run_train(const TrainOptions& options, const std::string& config_file) {
  if (options.run_dir.empty() && !config_file.empty()) {
    const std::filesystem::path dir = std::filesystem::path(config_file).parent_path();
    for (const std::string& marker : train_run_dir_spec(false, false).markers) {
      std::error_code ec;
      if (!std::filesystem::exists((dir.empty() ? "." : dir) / marker, ec)) continue;
      const std::string shown = dir.empty() ? "." : dir.string().substr(0, 200);
      std::cerr << "headlab train: --config " << config_file.substr(0, 200) << " belongs to the run in " << shown
                << " (it holds " << marker << ") and no --run-dir is given: give --run-dir " << shown
                << " --resume to continue it, or --run-dir OTHER for a new run\n";
      return 2;
    }
  }
  // Ctrl-C (SIGINT) or SIGTERM: finish the current step, save the checkpoint, exit 130.
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  TrainResult r;
  try {
    r = train(options, std::cout);
  } catch (const ValueError& e) {
    // The run directory holds a run or another process holds it (RunDirRefused), or --resume was
    // given other options than the checkpoint's: a usage error. A bad file is a FormatError (exit 1).
    std::cerr << "headlab train: " << e.what() << "\n";
    return 2;
  }
  if (r.interrupted) {
    std::cout << "interrupted after step " << r.steps_done;
    if (!options.run_dir.empty())
      std::cout << "; checkpoint saved in " << options.run_dir << " (continue with the same options and --resume)";
    std::cout << "\n";
    return 130;  // the shell's convention for "ended by SIGINT"
  }
  if (r.diverged) {  // --stop-on-divergence: a result, exit 0 (a sweep counts the run as finished)
    std::cout << "diverged at step " << r.diverged_step << " (a loss or weight that is not finite) after "
              << r.steps_done << " finite steps; summary.json records diverged 1";
    if (!options.run_dir.empty()) std::cout << " in " << options.run_dir;
    std::cout << "\n";
    return 0;
  }
  if (options.task == Task::translate) {
    std::cout << "trained " << r.steps_done << " steps in " << std::fixed << std::setprecision(1) << r.train_seconds
              << " s (" << r.seconds << " s with evaluation); best step " << r.best_step << " by --select "
              << options.select << ": validation BLEU " << std::setprecision(2) << r.valid_bleu << ", loss "
              << std::setprecision(4) << r.valid_loss;
    if (!options.test_file.empty())
      std::cout << "; test BLEU greedy " << std::setprecision(2) << r.test_bleu_greedy << ", beam " << options.beam
                << " " << r.test_bleu_beam << "; test chrF beam " << options.beam << " " << r.test_chrf_beam;
    std::cout << "\n";
    if (!options.run_dir.empty()) std::cout << "run directory: " << options.run_dir << "\n";
    return 0;
  }
  if (options.task == Task::lm) {
    std::cout << "trained " << r.steps_done << " steps in " << std::fixed << std::setprecision(1) << r.train_seconds
              << " s; last validation " << std::setprecision(4) << r.valid_loss
              << (options.tokenizer == "char" ? " nats/char, " : " nats/word, ") << std::setprecision(3)
              << r.valid_bits_per_char << " bits/char; best.safetensors: step " << r.best_step << "\n";
    if (!options.run_dir.empty()) std::cout << "run directory: " << options.run_dir << "\n";
    return 0;
  }
  if (options.task == Task::recall) {
    std::cout << "trained " << r.steps_done << " steps in " << std::fixed << std::setprecision(1) << r.seconds
              << " s; held-out answer loss " << std::setprecision(3) << r.valid_loss << ", answers right "
              << r.answer_accuracy << ", values right " << r.slot_accuracy << "\n";
    if (!options.run_dir.empty()) std::cout << "run directory: " << options.run_dir << "\n";
    return 0;
  }
  if (options.task == Task::induction) {
    std::cout << "trained " << r.steps_done << " steps in " << std::fixed << std::setprecision(1) << r.seconds
              << " s; held-out loss " << std::setprecision(3) << r.valid_loss << ": first half " << r.first_half_loss
              << ", repeated half " << r.repeated_loss << " (accuracy " << r.repeated_accuracy << ")\n";
    if (!options.run_dir.empty()) std::cout << "run directory: " << options.run_dir << "\n";
    return 0;
  }
  std::cout << "trained " << r.steps_done << " steps in " << std::fixed << std::setprecision(1) << r.seconds
            << " s; final loss " << std::setprecision(5) << (r.losses.empty() ? 0.0 : r.losses.back())
            << "; held-out exact match " << std::setprecision(3) << r.exact_match << " on "
            << options.eval_sequences << " sequences\n";
  if (!options.run_dir.empty()) std::cout << "run directory: " << options.run_dir << "\n";
  return 0;
}

namespace {
std::string checkpoint_in(const std::string& run_dir) {
  return (std::filesystem::path(run_dir) / "checkpoint.safetensors").string();
}
// decode works on copy-task models; anything else is a usage error (exit 2).
bool is_copy_model(const LoadedModel& m, const std::string& command, const std::string& run_dir) {
  if (m.options.task == Task::copy) return true;
  std::cerr << "headlab " << command << ": " << checkpoint_in(run_dir) << " is a '" << task_name(m.options.task)
            << "' checkpoint; " << command << " is for the copy task (see headlab heads, prune, translate)\n";
  return false;
}
}  // namespace

int run_decode(const std::string& run_dir, const std::string& input) {
  const LoadedModel m = load_trained_model(checkpoint_in(run_dir));
  if (!is_copy_model(m, "decode", run_dir)) return 2;
  std::vector<std::int64_t> ids;
  try {
    ids = parse_token_ids(input, m.options.vocab, "--input");
  } catch (const ValueError& e) {
    std::cerr << "headlab decode: " << e.what() << "\n";
    return 2;
  }
  if (ids.empty() || ids.size() > m.options.length) {
    std::cerr << "headlab decode: give 1 to " << m.options.length << " token ids (the model's length)\n";
    return 2;
  }
  // The copy task's sequences start with <s> = 1 and hold symbols 1 .. vocab-1, never <pad> = 0:
  // anything else is a sequence the model never saw (before: a missing 1 was silently put back).
  if (ids[0] != 1) {
    std::cerr << "headlab decode: a copy sequence starts with the start symbol 1, as the training data does "
                 "(for example --input '1 4 2 9'); got " << ids[0] << " first\n";
    return 2;
  }
  for (std::size_t t = 1; t < ids.size(); ++t)
    if (ids[t] == 0) {
      std::cerr << "headlab decode: id 0 is <pad>, which copy sequences never hold (position " << t
                << "); symbols are 1 to " << m.options.vocab - 1 << "\n";
      return 2;
    }
  IndexArray src = IndexArray::from_shape({1, ids.size()});
  std::copy(ids.begin(), ids.end(), src.data());
  const IndexArray out = greedy_decode(*m.model, src, ids.size(), 1);
  for (std::size_t t = 0; t < ids.size(); ++t) std::cout << (t ? " " : "") << out(0, t);
  std::cout << "\n";
  return 0;
}

int run_translate(const TranslateOptions& options) {
  const LoadedModel m = load_trained_model(options.checkpoint);
  if (m.options.task != Task::translate) {
    std::cerr << "headlab translate: " << options.checkpoint << " is a '" << task_name(m.options.task)
              << "' model, not a translation model\n";
    return 2;
  }
  std::vector<std::string> lines;
  std::string line;
  bool too_long = false;
  while (read_line_bounded(std::cin, line, kMaxTextLineBytes + 1, too_long)) {  // (+1: a '\r' may end it)
    if (too_long) {
      std::cerr << "headlab translate: stdin line " << lines.size() + 1 << " is longer than "
                << (kMaxTextLineBytes >> 20) << " MiB, more than headlab reads as one sentence\n";
      return 1;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (lines.empty() && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // a byte-order mark: not a word
    if (!is_valid_utf8(line) || line.find('\0') != std::string::npos) {
      std::cerr << "headlab translate: stdin line " << lines.size() + 1
                << (is_valid_utf8(line) ? " holds a NUL byte: not text (UTF-16? send UTF-8)\n" : " is not valid UTF-8\n");
      return 1;
    }
    lines.push_back(line);
  }
  // A line too long for the model whatever its pieces: refused before any word is encoded.
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (const std::string why = cannot_fit(m.src_vocab, tokenize(lines[i]), 1, m.model->config().max_len);
        !why.empty()) {
      std::cerr << "headlab translate: stdin line " << i + 1 << " has " << why << "\n";
      return 1;
    }
  // Words the model never saw: said out loud (they become <unk>), or refused with --strict.
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> unknown;
    for (const std::string& token : tokenize(lines[i]))
      if (!m.src_vocab.covers(token) && token != "<unk>") unknown.push_back(token);
    if (unknown.empty()) continue;
    std::string shown;
    for (std::size_t k = 0; k < std::min<std::size_t>(unknown.size(), 8); ++k)
      shown += (k ? ", " : "") + quote_clipped(unknown[k], 40);
    if (unknown.size() > 8) shown += ", ... (" + std::to_string(unknown.size()) + " in all)";
    if (options.strict) {
      std::cerr << "headlab translate: stdin line " << i + 1 << ": not in the model's source vocabulary: " << shown
                << " (--strict; without it they are read as <unk>)\n";
      return 1;
    }
    std::cerr << "headlab translate: stdin line " << i + 1 << ": unknown, read as <unk>: " << shown << "\n";
  }
  DecodeOptions d;
  d.beam = options.beam;
  d.length_penalty = options.length_penalty;
  d.extra_tokens = options.extra_tokens;
  const auto outputs = translate_sentences(*m.model, m.src_vocab, m.tgt_vocab, lines, d);
  for (const auto& tokens : outputs) {
    for (std::size_t i = 0; i < tokens.size(); ++i) std::cout << (i ? " " : "") << tokens[i];
    std::cout << "\n";
  }
  return 0;
}

}  // namespace headlab::cli
