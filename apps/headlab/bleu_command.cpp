// bleu_command.cpp: `headlab bleu --ref R --hyp H [--tokenize]`, corpus BLEU-4 and chrF of two text files.
//
// Each file holds one sentence per line, line i of H translating line i of R. By default a line is
// already tokenized (tokens separated by whitespace); --tokenize applies headlab::tokenize to each
// line first (lower-casing, punctuation split off). Prints
//   BLEU = 48.18  (1-4 gram precisions 86.7/65.0/42.9/26.7, BP 0.957, hyp 45 / ref 47 tokens)
//   chrF = 73.94  (character 1-6 grams, beta 3, as NLTK corpus_chrf)
// with BLEU, the precisions and chrF x100 (headlab/data/bleu.hpp, headlab/data/chrf.hpp). A file that
// cannot be read, files of different line counts, a line that is not UTF-8 (chrF counts characters)
// or one holding a NUL byte (a UTF-16 file): a message naming FILE:LINE and exit status 1.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "headlab/data/bleu.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/data/chrf.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/data/text.hpp"

namespace headlab::cli {

namespace {

using Corpus = std::vector<std::vector<std::string>>;

// The lines of a regular text file (a FIFO or device is refused before reading; a byte-order mark
// and each line's trailing \r are dropped; a final line without '\n' counts). At most 256 MiB, and
// 1 MiB a line (a sentence): a larger file or line is refused before it is split or tokenized, and
// so is a NUL byte (read_text_file).
std::vector<std::string> read_lines(const std::string& path, const char* flag) {
  const std::string text = read_text_file(path, flag, kMaxTextFileBytes);
  check_line_lengths(text, path, flag, kMaxTextLineBytes);
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

// One token list per line: whitespace split, or the full tokenizer. Every line must be UTF-8.
Corpus to_corpus(const std::vector<std::string>& lines, const std::string& path, bool use_tokenizer) {
  Corpus corpus;
  corpus.reserve(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!use_tokenizer && !is_valid_utf8(lines[i])) {  // tokenize checks this itself, naming the byte
      throw ValueError(path + ":" + std::to_string(i + 1) + ": not valid UTF-8 (chrF counts characters)");
    }
    try {
      corpus.push_back(use_tokenizer ? tokenize(lines[i]) : split_whitespace(lines[i]));
    } catch (const ValueError& e) {
      throw ValueError(path + ":" + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return corpus;
}

std::string percent(double fraction, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, 100.0 * fraction);
  return buf;
}

}  // namespace

int run_bleu(const BleuOptions& options) {
  try {
    const std::vector<std::string> ref_lines = read_lines(options.ref_path, "--ref");
    const std::vector<std::string> hyp_lines = read_lines(options.hyp_path, "--hyp");
    if (ref_lines.size() != hyp_lines.size()) {
      std::cerr << "headlab bleu: the reference file '" << options.ref_path << "' has " << ref_lines.size()
                << " lines but the hypothesis file '" << options.hyp_path << "' has " << hyp_lines.size()
                << " (one sentence per line, in the same order)\n";
      return 1;
    }
    if (ref_lines.empty()) {
      std::cerr << "headlab bleu: '" << options.ref_path << "' and '" << options.hyp_path << "' are empty\n";
      return 1;
    }
    const Corpus references = to_corpus(ref_lines, options.ref_path, options.tokenize);
    const Corpus hypotheses = to_corpus(hyp_lines, options.hyp_path, options.tokenize);
    const BleuScore s = corpus_bleu(references, hypotheses);
    const ChrfScore chrf = corpus_chrf(references, hypotheses);
    char bp[32];
    std::snprintf(bp, sizeof bp, "%.3f", s.brevity_penalty);
    std::cout << "BLEU = " << percent(s.bleu, 2) << "  (1-4 gram precisions " << percent(s.precisions[0], 1) << "/"
              << percent(s.precisions[1], 1) << "/" << percent(s.precisions[2], 1) << "/"
              << percent(s.precisions[3], 1) << ", BP " << bp << ", hyp " << s.hypothesis_length << " / ref "
              << s.reference_length << " tokens)\n";
    std::cout << "chrF = " << percent(chrf.chrf, 2) << "  (character 1-6 grams, beta 3, as NLTK corpus_chrf)\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << "headlab bleu: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace headlab::cli
