// tokenize_command.cpp: `headlab tokenize`, a sentence's tokens as a translation model reads them.
//
//   headlab tokenize --checkpoint RUN/best.safetensors [--side source|target] [--ids] "Ich bin müde."
//   headlab tokenize --merges RUN/bpe.source.txt --file sentences.txt
// Each sentence (the arguments, or each line of --file) becomes one line: its tokens separated by
// single spaces (subword pieces end in "@@" when the word goes on), or with --ids their ids in the
// checkpoint's vocabulary. A line that is not UTF-8: a message naming it, exit status 1; flags that
// do not go together (neither or both of --checkpoint and --merges, ...): exit status 2.
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/data/bpe.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/train/translate_task.hpp"

namespace headlab::cli {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

template <typename T>
std::string joined(const std::vector<T>& items) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) s += ' ';
    if constexpr (std::is_same_v<T, std::string>) s += items[i];
    else s += std::to_string(items[i]);
  }
  return s;
}

}  // namespace

int run_tokenize(const TokenizeOptions& o) {
  // Flags that do not go together: a usage error (exit 2), before any file is read.
  const char* usage = nullptr;
  if (o.checkpoint.empty() == o.merges.empty())
    usage = "give --checkpoint (a translation model) or --merges (a bpe.*.txt file), one of them";
  else if (o.ids && o.checkpoint.empty())
    usage = "--ids needs --checkpoint (the ids are its vocabulary's)";
  else if (o.side != "source" && o.side != "target")
    usage = "--side must be source or target";
  else if (!o.file.empty() && !o.sentences.empty())
    usage = "give sentences or --file, not both";
  else if (o.file.empty() && o.sentences.empty())
    usage = "nothing to tokenize: give the sentences as arguments or --file FILE (one a line)";
  if (usage) {
    std::cerr << "headlab tokenize: " << usage << "\n";
    return 2;
  }
  try {
    std::vector<std::string> sentences = o.sentences;
    if (!o.file.empty()) {
      const std::string text = read_text_file(o.file, "--file", kMaxTextFileBytes);
      check_line_lengths(text, o.file, "--file", kMaxTextLineBytes);
      sentences = lines_of(text);
    }
    Vocabulary vocab;
    BytePairEncoding merges;
    std::size_t max_len = 0;  // with --checkpoint: what the model takes, sentences longer are refused
    if (!o.checkpoint.empty()) {
      const LoadedModel m = load_trained_model(o.checkpoint);
      if (m.options.task != Task::translate)
        throw ValueError("--checkpoint " + o.checkpoint + " is a " + task_name(m.options.task) +
                         " model; tokenize reads translation models");
      vocab = o.side == "source" ? m.src_vocab : m.tgt_vocab;
      max_len = m.options.max_len;
    } else {
      const std::string text = read_text_file(o.merges, "--merges", kMaxMergesFileBytes);
      check_line_lengths(text, o.merges, "--merges", kMaxMergesLineBytes);
      try {
        merges = BytePairEncoding::from_text(text);
      } catch (const FormatError& e) {  // "BytePairEncoding::from_text: line 1: ...": the file, not the parser
        std::string what = e.what();
        if (what.rfind("BytePairEncoding::from_text: ", 0) == 0) what.erase(0, 29);
        throw FormatError("--merges " + quote_clipped(o.merges) + ": " + what);
      }
    }
    for (std::size_t i = 0; i < sentences.size(); ++i) {
      std::vector<std::string> words;
      try {
        words = tokenize(sentences[i]);
      } catch (const ValueError& e) {
        throw ValueError((o.file.empty() ? "sentence " : o.file + ":") + std::to_string(i + 1) + ": " + e.what());
      }
      // A sentence the model cannot take, whatever its pieces: refused before a long word is encoded.
      if (max_len > 0)
        if (const std::string why = cannot_fit(vocab, words, o.side == "source" ? 1 : 2, max_len); !why.empty())
          throw ValueError((o.file.empty() ? "sentence " : o.file + ":") + std::to_string(i + 1) + " has " + why);
      if (o.ids) std::cout << joined(vocab.encode(words)) << "\n";
      else std::cout << joined(o.checkpoint.empty() ? merges.encode(words) : vocab.pieces(words)) << "\n";
    }
    return 0;
  } catch (const Error& e) {
    std::cerr << "headlab tokenize: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace headlab::cli
