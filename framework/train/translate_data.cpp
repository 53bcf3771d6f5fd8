// translate_data.cpp: the translation task's data (translate_data.hpp): the TSV files, the
// vocabularies (words or subwords; on --resume the checkpoint's, checked equal), the pairs as ids.
//
// A pair as ids:  source = ids(source words) + </s>;   target = <s> + ids(target words) + </s>
// Training pairs longer than --max-len ids are skipped (and counted); an evaluation, test or
// showcase pair that cannot fit is refused, naming its file and line.
#include "translate_data.hpp"

#include <algorithm>
#include <filesystem>
#include <ostream>

#include "headlab/core/errors.hpp"
#include "headlab/core/sha256.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/train/memory_estimate.hpp"
#include "headlab/train/translate_task.hpp"
#include "training_loop.hpp"

namespace headlab {

namespace {

bool fits(const EncodedPair& e, std::size_t max_len) { return e.source.size() <= max_len && e.target.size() <= max_len; }

// "" when the two vocabularies are equal, else where they first differ: "id 5 is 'haus' there,
// 'hause' here" or "3000 tokens there, 2999 here".
std::string first_difference(const Vocabulary& saved, const Vocabulary& built) {
  auto quoted = [](const std::string& t) { return "'" + (t.size() > 200 ? t.substr(0, 200) + "..." : t) + "'"; };
  const std::size_t n = std::min(saved.size(), built.size());
  for (std::size_t id = 0; id < n; ++id) {
    const std::string& a = saved.token(std::int64_t(id));
    const std::string& b = built.token(std::int64_t(id));
    if (a != b) return "id " + std::to_string(id) + " is " + quoted(a) + " there, " + quoted(b) + " here";
  }
  if (saved.size() != built.size())
    return std::to_string(saved.size()) + " tokens there, " + std::to_string(built.size()) + " here";
  return "";
}

// On --resume the ids must mean what they meant when the checkpoint was written: the vocabularies
// built from --train now are compared with the ones saved in the checkpoint. A corpus that was
// edited since (ids that would silently swap meaning) is refused, naming the first differing token.
void use_saved_vocabularies(const TrainOptions& o, detail::TranslationData& d) {
  const std::string path = detail::run_file(o, "checkpoint.safetensors");
  const TensorFile file = load_checkpoint_file(path);
  const Vocabulary saved_src = saved_vocabulary(file, "src_vocab"), saved_tgt = saved_vocabulary(file, "tgt_vocab");
  auto check = [&](const char* side, const Vocabulary& saved, const Vocabulary& built) {
    std::string difference = first_difference(saved, built);
    if (difference.empty() && !(saved.subwords().merges() == built.subwords().merges())) difference = "the merges differ";
    if (!difference.empty())
      throw ValueError("translate --resume: the " + std::string(side) + " vocabulary built from --train " + o.train_file +
                       " differs from the one saved in " + path + " (" + difference +
                       "): the corpus changed since the checkpoint was written");
  };
  check("source", saved_src, d.src_vocab);
  check("target", saved_tgt, d.tgt_vocab);
  // Equal tokens in the same order (and equal merges): the built ones are kept, with the ids of the
  // training words they already hold.
}

// --showcase: "" or "none" = off; "auto" = showcase.txt in --train's folder or the one above it,
// if there is one; else the file given.
std::string showcase_path(const TrainOptions& o) {
  if (o.showcase_file.empty() || o.showcase_file == "none") return "";
  if (o.showcase_file != "auto") return o.showcase_file;
  const std::filesystem::path folder = std::filesystem::path(o.train_file).parent_path();
  for (const std::filesystem::path& candidate : {folder / "showcase.txt", folder.parent_path() / "showcase.txt"}) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
  }
  return "";
}

// --tokenizer word: a vocabulary of words per side. bpe: merges learned from the training words,
// per side or (--joint-bpe) from both sides into one vocabulary.
void build_vocabularies(const TrainOptions& o, const std::vector<std::vector<std::string>>& src_sentences,
                        const std::vector<std::vector<std::string>>& tgt_sentences, detail::TranslationData& d) {
  if (o.tokenizer != "bpe") {
    d.src_vocab = Vocabulary::build(src_sentences, o.min_freq);
    d.tgt_vocab = Vocabulary::build(tgt_sentences, o.min_freq);
    return;
  }
  const BpeBudget budget{o.merges, o.merges != 0 ? 0 : o.vocab_size, o.min_freq};
  auto subwords_of = [&](const std::vector<std::vector<std::string>>& sentences) {
    return Vocabulary::build_subwords(sentences, BytePairEncoding::learn(count_words(sentences), budget));
  };
  if (o.joint_bpe) {
    std::vector<std::vector<std::string>> both = src_sentences;
    both.insert(both.end(), tgt_sentences.begin(), tgt_sentences.end());
    d.src_vocab = d.tgt_vocab = subwords_of(both);
  } else {
    d.src_vocab = subwords_of(src_sentences);
    d.tgt_vocab = subwords_of(tgt_sentences);
  }
}

}  // namespace

namespace detail {

TranslationData load_translation_data(const TrainOptions& o, std::ostream& log) {
  TranslationData d;
  const std::vector<ParallelPair> train_text = read_parallel_tsv(o.train_file);
  d.valid_text = read_parallel_tsv(o.valid_file);
  d.valid_sha256 = sha256_file_hex(o.valid_file);
  if (!o.test_file.empty()) d.test_text = read_parallel_tsv(o.test_file);
  d.showcase_file = showcase_path(o);
  if (!d.showcase_file.empty()) d.showcase = read_parallel_tsv(d.showcase_file);
  std::vector<std::vector<std::string>> src_sentences, tgt_sentences;  // words
  for (const auto& p : train_text) {
    src_sentences.push_back(tokenize(p.source));
    tgt_sentences.push_back(tokenize(p.target));
  }
  build_vocabularies(o, src_sentences, tgt_sentences, d);
  if (o.resume && !o.run_dir.empty()) use_saved_vocabularies(o, d);
  check_training_memory(o, d.src_vocab.size(), d.tgt_vocab.size());  // before the model is built
  for (const auto& p : train_text) {
    EncodedPair e = encode_pair(d.src_vocab, d.tgt_vocab, p);
    if (fits(e, o.max_len)) d.train.push_back(std::move(e));
    else ++d.skipped_long;
  }
  if (d.train.empty())
    throw ValueError("translate: no training pair of " + o.train_file + " fits --max-len " + std::to_string(o.max_len));
  d.valid = encode_evaluation_pairs(d.src_vocab, d.tgt_vocab, d.valid_text, o.max_len, o.valid_file);
  // The test and showcase sentences are decoded only after training: check now that the model can take them.
  for (const auto* split : {&d.test_text, &d.showcase})
    for (const auto& p : *split) {
      const EncodedPair e = encode_pair(d.src_vocab, d.tgt_vocab, p);
      if (e.source.size() > o.max_len)
        throw ValueError("translate: " + (split == &d.test_text ? o.test_file : d.showcase_file) + ":" +
                         std::to_string(p.line) + ": the source sentence has " + std::to_string(e.source.size()) +
                         " ids with </s>, longer than --max-len " + std::to_string(o.max_len) +
                         " (the model cannot translate it)");
    }
  log << "data: " << d.train.size() << " training pairs (" << d.skipped_long << " longer than " << o.max_len
      << " ids skipped), " << d.valid.size() << " validation, " << d.test_text.size() << " test; vocabularies "
      << d.src_vocab.size() << " source / " << d.tgt_vocab.size() << " target ";
  if (o.tokenizer == "bpe")
    log << "(subwords: " << d.src_vocab.subwords().merges().size() << " / " << d.tgt_vocab.subwords().merges().size()
        << " merges" << (o.joint_bpe ? ", joint" : "") << ")\n";
  else
    log << "(words, min frequency " << o.min_freq << ")\n";
  return d;
}

std::map<std::string, std::string> translation_metadata(const TranslationData& d) {
  std::map<std::string, std::string> extras{
      {"src_vocab", d.src_vocab.to_text()}, {"tgt_vocab", d.tgt_vocab.to_text()}, {"valid_sha256", d.valid_sha256}};
  if (d.src_vocab.has_subwords()) extras["src_merges"] = d.src_vocab.subwords().to_text();
  if (d.tgt_vocab.has_subwords()) extras["tgt_merges"] = d.tgt_vocab.subwords().to_text();
  return extras;
}

}  // namespace detail

EncodedPair encode_pair(const Vocabulary& sv, const Vocabulary& tv, const ParallelPair& p) {
  EncodedPair e;
  e.source = sv.encode(tokenize(p.source));
  e.source.push_back(Vocabulary::eos);
  e.target.push_back(Vocabulary::bos);
  for (std::int64_t id : tv.encode(tokenize(p.target))) e.target.push_back(id);
  e.target.push_back(Vocabulary::eos);
  return e;
}

std::string cannot_fit(const Vocabulary& vocab, const std::vector<std::string>& words, std::size_t specials,
                       std::size_t max_len) {
  const std::size_t least = vocab.min_tokens(words) + specials;
  if (least <= max_len) return "";
  return "at least " + std::to_string(least) + " ids with " + (specials == 1 ? "</s>" : "<s> and </s>") +
         " (by the length of its words alone); the model allows at most " + std::to_string(max_len);
}

std::vector<EncodedPair> encode_evaluation_pairs(const Vocabulary& sv, const Vocabulary& tv,
                                                 const std::vector<ParallelPair>& pairs, std::size_t max_len,
                                                 const std::string& file) {
  std::vector<EncodedPair> out;
  for (const auto& p : pairs) {
    for (const auto& [side, why] : {std::pair{"source", cannot_fit(sv, tokenize(p.source), 1, max_len)},
                                    std::pair{"target", cannot_fit(tv, tokenize(p.target), 2, max_len)}})
      if (!why.empty())
        throw ValueError("translate: " + file + ":" + std::to_string(p.line) + ": the pair is longer than --max-len " +
                         std::to_string(max_len) + " (" + side + ": " + why + ")");
    EncodedPair e = encode_pair(sv, tv, p);
    if (!fits(e, max_len))
      throw ValueError("translate: " + file + ":" + std::to_string(p.line) + ": the pair is longer than --max-len " +
                       std::to_string(max_len) + " (source " + std::to_string(e.source.size()) + ", target " +
                       std::to_string(e.target.size()) + " ids)");
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace headlab
