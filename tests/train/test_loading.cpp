// Loading checks: what a checkpoint, a corpus or the options say is checked before it is used
// (docs/training.md, "Conventions of every command": exit statuses and the memory check). The memory estimate itself is in
// test_memory_estimate.cpp; files that are not regular files in tests/data/test_input_file.cpp.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/train/memory_estimate.hpp"
#include "headlab/train/trainer.hpp"
#include "test_support.hpp"
#include "tiny_train_run.hpp"

namespace test_loading {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::TempDir;

namespace {

// A 1-step copy run of a tiny model (d_model 4, one head, one layer, vocabulary 4) in `dir`.
TrainOptions tiny_copy_run(const TempDir& dir) { return headlab::testing::smallest_copy_run_trained(dir.path); }

// Every float of every tensor whose name starts with `prefix` set to `value`.
TensorFile with_floats(TensorFile file, const std::string& prefix, float value) {
  TensorFile out;
  out.metadata = file.metadata;
  out.source = file.source;
  for (TensorEntry e : file.entries()) {
    if (e.name.rfind(prefix, 0) == 0 && e.dtype == DType::F32)
      for (std::size_t i = 0; i < e.numel(); ++i) std::memcpy(e.bytes.data() + 4 * i, &value, 4);
    out.add_entry(std::move(e));
  }
  return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  REQUIRE(text.find(from) != std::string::npos);
  return text.replace(text.find(from), from.size(), to);
}

}  // namespace

TEST_CASE("loading: a checkpoint with NaN or infinite weights is refused naming the tensor") {
  // Before: an all-NaN checkpoint loaded, and eval printed "exact match 0.000" with exit 0.
  TempDir dir("nan_weights");
  const TrainOptions o = tiny_copy_run(dir);
  const std::string path = dir.file("checkpoint.safetensors");
  const TensorFile good = load_safetensors(path);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, inf}) {
    CAPTURE(bad);
    save_safetensors(path, with_floats(good, "model.", bad));
    CHECK_THROWS_WITH_AS(load_trained_model(path), doctest::Contains("non-finite value"), FormatError);
    CHECK_THROWS_WITH_AS(load_trained_model(path), doctest::Contains("tensor 'model."), FormatError);
    // The same check on resume (load_checkpoint), before the model is touched.
    TrainOptions again = o;
    again.resume = true;
    again.steps = 2;
    std::ostringstream log;
    CHECK_THROWS_WITH_AS(train(again, log), doctest::Contains("non-finite"), FormatError);
  }
  // One NaN in Adam's state is refused too (a resume would spread it into every weight).
  save_safetensors(path, with_floats(good, "optim.", nan));
  TrainOptions again = o;
  again.resume = true;
  again.steps = 2;
  std::ostringstream log;
  CHECK_THROWS_WITH_AS(train(again, log), doctest::Contains("tensor 'optim."), FormatError);
}

TEST_CASE("loading: what a checkpoint's contents say is a FormatError (exit 1 from every command)") {
  // Before: options, counts and shapes that did not parse were ValueErrors, which `heads` and
  // `prune` report as usage errors (exit 2) while `eval` said 1.
  TempDir dir("format_errors");
  tiny_copy_run(dir);
  const TensorFile good = load_safetensors(dir.file("checkpoint.safetensors"));
  const std::string options = good.metadata.at("options");
  const std::pair<std::string, std::string> cases[] = {
      {"layers = 1\n", "layers = many\n"},            // not a count
      {"heads = 1\n", "heads = 3\n"},                 // does not divide d_model (validate)
      {"d_model = 4\n", "d_model = 8\n"},             // shapes differ from the tensors
  };
  for (const auto& from_and_to : cases) {  // not a structured binding: CAPTURE's lambda takes `to`
    const auto& from = from_and_to.first;
    const auto& to = from_and_to.second;
    CAPTURE(to);
    TensorFile corrupt = good;
    corrupt.metadata["options"] = replaced(options, from, to);
    CHECK_THROWS_AS(load_trained_model(corrupt), FormatError);
  }
  TensorFile corrupt = good;
  corrupt.metadata["step"] = "seven";
  CHECK_THROWS_WITH_AS(load_trained_model(corrupt), doctest::Contains("'step'"), FormatError);
  // A key twice: refused, as config.ini refuses it (the last value was taken: heads 1 of a 2-head model).
  corrupt = good;
  corrupt.metadata["options"] = options + "heads = 1\n";
  CHECK_THROWS_WITH_AS(load_trained_model(corrupt), doctest::Contains("'heads' is given again (first on options line"),
                       FormatError);
}

TEST_CASE("loading: a saved vocabulary that is empty or holds a token twice is refused") {
  TensorFile file;
  file.source = "vocab.safetensors";
  file.metadata["src_vocab"] = "<pad>\n<s>\n</s>\n<unk>\n";  // the specials only: no word at all
  file.metadata["tgt_vocab"] = "<pad>\n<s>\n</s>\n<unk>\nhaus\nbaum\nhaus\n";
  file.metadata["empty"] = "";
  CHECK_THROWS_WITH_AS(saved_vocabulary(file, "src_vocab"), doctest::Contains("no token beyond the 4 specials"),
                       FormatError);
  CHECK_THROWS_WITH_AS(saved_vocabulary(file, "tgt_vocab"),  // the file and the key, not the parser's name
                       doctest::Contains("checkpoint vocab.safetensors: metadata 'tgt_vocab': vocabulary line 7: "
                                         "duplicate token 'haus'"),
                       FormatError);
  CHECK_THROWS_AS(saved_vocabulary(file, "empty"), FormatError);
  CHECK_THROWS_AS(Vocabulary::from_text(""), FormatError);
  file.metadata["tgt_vocab"] = "<pad>\n<s>\n</s>\n<unk>\nhaus\n";
  CHECK(saved_vocabulary(file, "tgt_vocab").size() == 5);
  file.metadata["tokenizer"] = "word";  // a language model's words
  file.metadata["lm_words"] = "<pad>\n<s>\n</s>\n<unk>\nhaus\nhaus\n";
  CHECK_THROWS_WITH_AS(saved_lm_vocabulary(file),
                       doctest::Contains("checkpoint vocab.safetensors: metadata 'lm_words': vocabulary line 6: "
                                         "duplicate token 'haus'"),
                       FormatError);
}

TEST_CASE("loading: a checkpoint whose options need more memory than there is is refused before allocating") {
  // Before: a checkpoint saying `length 5000` allocated for half a minute and ended in std::bad_alloc.
  TempDir dir("huge_options");
  tiny_copy_run(dir);
  TensorFile file = load_safetensors(dir.file("checkpoint.safetensors"));
  std::string options = replaced(file.metadata.at("options"), "length = 3\n", "length = 5000\n");
  file.metadata["options"] = replaced(options, "eval_sequences = 2\n", "eval_sequences = 1000\n");
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(load_trained_model(file, 8.0 * (1ull << 30)), doctest::Contains("needs about"), OutOfMemory);
  CHECK_THROWS_WITH_AS(load_trained_model(file, 8.0 * (1ull << 30)), doctest::Contains("evaluation buffers"), OutOfMemory);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 5.0);
}

namespace {
TrainOptions small_translate(const TempDir& dir, const std::string& train_text, const std::string& test_text) {
  TrainOptions o = TrainOptions::defaults_for(Task::translate);
  o.train_file = dir.write("train.tsv", train_text);
  o.valid_file = dir.write("valid.tsv", "a b\tx y\nb a\ty x\n");
  if (!test_text.empty()) o.test_file = dir.write("test.tsv", test_text);
  o.d_model = 8;
  o.heads = 2;
  o.ff_dim = 8;
  o.layers = 1;
  o.max_tokens = 64;
  o.max_len = 16;
  o.steps = 1;
  o.eval_every = 1;
  o.progress = "none";
  o.run_dir = (dir.path / "run").string();
  return o;
}
}  // namespace

TEST_CASE("translate: --resume refuses a corpus whose vocabulary differs from the saved one, naming the token") {
  // Before: the vocabularies were rebuilt from --train and never compared; with an edited corpus
  // ids 5 and 6 swapped meaning and the run went on (exit 0).
  TempDir dir("resume_vocab");
  const std::string corpus = "a b c\tx y z\na b\tx y\nb c\ty z\na c\tx z\n";
  TrainOptions o = small_translate(dir, corpus, "");
  std::ostringstream log;
  train(o, log);
  o.resume = true;
  o.steps = 2;
  // The same corpus resumes.
  CHECK_NOTHROW(train(o, log));
  // "a" renamed to "d" on the source side: the ids of the source vocabulary change meaning.
  dir.write("train.tsv", "d b c\tx y z\nd b\tx y\nb c\ty z\nd c\tx z\n");
  o.steps = 3;
  CHECK_THROWS_WITH_AS(train(o, log), doctest::Contains("source vocabulary built from --train"), ValueError);
  CHECK_THROWS_WITH_AS(train(o, log), doctest::Contains("'a' there, 'b' here"), ValueError);
}

TEST_CASE("translate: the run's --valid file is the default pairs only while it is the file it trained with") {
  // Before: prune, patch and attribute read the run's --valid path as given at training; another
  // file there (edited, or a relative path from another directory) was scored without a word.
  TempDir dir("valid_sha");
  TrainOptions o = small_translate(dir, "a b\tx y\nb a\ty x\n", "");
  std::ostringstream log;
  train(o, log);
  const std::string checkpoint = dir.file("run/checkpoint.safetensors");
  const LoadedModel m = load_trained_model(checkpoint);
  CHECK(m.valid_sha256.size() == 64);
  CHECK(run_evaluation_file(m, "") == o.valid_file);
  CHECK(run_evaluation_file(m, "other.tsv") == "other.tsv");  // --data given: used as it is
  dir.write("valid.tsv", "b a\ty x\n");
  CHECK_THROWS_WITH_AS(run_evaluation_file(m, ""), doctest::Contains("is not the file the model was trained with"), FormatError);
  CHECK_THROWS_WITH_AS(run_evaluation_file(m, ""), doctest::Contains("give the pairs with --data"), FormatError);
  fs::remove(o.valid_file);
  CHECK_THROWS_WITH_AS(run_evaluation_file(m, ""), doctest::Contains("is not there: give the pairs with --data"), FormatError);

  TensorFile file = load_safetensors(checkpoint);
  file.metadata["valid_sha256"] = "not a hash";
  CHECK_THROWS_WITH_AS(load_trained_model(file), doctest::Contains("metadata 'valid_sha256' is not a SHA-256"), FormatError);
  file.metadata.erase("valid_sha256");  // a checkpoint from before the hash: the file is taken as it is
  const LoadedModel old = load_trained_model(file);
  CHECK(old.valid_sha256.empty());
  dir.write("valid.tsv", "b a\ty x\n");
  CHECK(run_evaluation_file(old, "") == o.valid_file);
}

TEST_CASE("translate: every --test sentence is length-checked before step 1, naming FILE:LINE") {
  // Before: a --test file with an over-long line was refused only after all training, without the
  // file's name ("sentence 2 has ..."), and no summary was written.
  TempDir dir("long_test");
  std::string long_line;
  for (int i = 0; i < 40; ++i) long_line += i ? " a" : "a";
  TrainOptions o = small_translate(dir, "a b c\tx y z\na b\tx y\nb c\ty z\na c\tx z\n",
                                   "a b\tx y\n" + long_line + "\tx\n");
  std::ostringstream log;
  CHECK_THROWS_WITH_AS(train(o, log), doctest::Contains("test.tsv:2: the source sentence has 41 ids"), ValueError);
  CHECK_FALSE(fs::exists(fs::path(o.run_dir) / "checkpoint.safetensors"));  // refused before any step
}

TEST_CASE("fuzz corpus: every seed checkpoint of fuzz_safetensors loads and decodes one step") {
  // The fuzz target decodes one step of every checkpoint that loads (fuzz/fuzz_safetensors.cpp);
  // its seeds must load, or the fuzzer never reaches decoding. fuzz/make_fuzz_checkpoints.sh
  // makes one per task.
  const fs::path corpus = fs::path(HEADLAB_FIXTURE_DIR) / ".." / ".." / "fuzz" / "corpus" / "fuzz_safetensors";
  std::size_t loaded = 0, decoder_only = 0, translation = 0;
  for (const auto& entry : fs::directory_iterator(corpus)) {
    const TensorFile file = load_safetensors(entry.path().string());
    if (file.metadata.count("format") == 0) continue;  // a plain tensor file, not a checkpoint
    CAPTURE(entry.path().string());
    LoadedModel m = load_trained_model(file);
    ++loaded;
    if (m.lm) {
      ++decoder_only;
      NoGradGuard no_grad;
      std::vector<KVCache<float>> caches(m.lm->layers());
      IndexArray ids = IndexArray::from_shape({1, 1});
      ids(0, 0) = 1;
      CHECK(m.lm->forward(ids, nullptr, &caches).shape()[2] == m.lm->config().tgt_vocab);
    } else {
      translation += m.options.task == Task::translate;
      IndexArray src = IndexArray::from_shape({1, 2});
      src(0, 0) = 1;
      src(0, 1) = 2;
      CHECK(greedy_decode(*m.model, src, 2, 1).shape()[1] == 2);
    }
  }
  CHECK(loaded >= 3);
  CHECK(decoder_only >= 1);
  CHECK(translation >= 1);
}

TEST_CASE("loading: a subword model's merges are checked with the options that say it has them") {
  TensorFile file;
  file.source = "subwords.safetensors";
  file.metadata["src_vocab"] = "<pad>\n<s>\n</s>\n<unk>\nhaus\nha@@\nus\n";
  file.metadata["src_merges"] = "#headlab-bpe-merges 1\nh a\nha u\nhau s</w>\n";
  const Vocabulary vocab = saved_vocabulary(file, "src_vocab");
  REQUIRE(vocab.has_subwords());
  CHECK(vocab.subwords().merges().size() == 3);
  // haus: h a u s</w> -> ha u s</w> -> hau s</w> -> haus</w>;  hau: h a u</w> -> ha u</w> (no merge "ha u</w>")
  CHECK(vocab.pieces({"haus", "hau"}) == std::vector<std::string>{"haus", "ha@@", "u"});
  file.metadata["src_merges"] = "#headlab-bpe-merges 1\nh a\nh a\n";
  CHECK_THROWS_WITH_AS(saved_vocabulary(file, "src_vocab"),
                       doctest::Contains("checkpoint subwords.safetensors: metadata 'src_merges': line 3: the merge 'h a' repeats"),
                       FormatError);

  // A trained subword model whose metadata lost its merges, or a word model that gained some.
  TempDir dir("subword_checkpoint");
  TrainOptions o = TrainOptions::defaults_for(Task::translate);
  headlab::write_file_atomic(dir.path / "train.tsv", "w1 w2 w11\tv1 v2 v11 .\nw11 w1\tv11 v1 .\n", "test");
  o.train_file = o.valid_file = (dir.path / "train.tsv").string();
  o.tokenizer = "bpe";
  o.vocab_size = 0;
  o.merges = 3;
  o.showcase_file = "none";
  o.d_model = 8, o.heads = 1, o.ff_dim = 8, o.layers = 1, o.steps = 1, o.eval_every = 1;
  o.run_dir = (dir.path / "run").string();
  std::ostringstream log;
  train(o, log);
  const TensorFile good = load_safetensors(dir.file("run/best.safetensors"));
  CHECK(load_trained_model(good).src_vocab.has_subwords());
  TensorFile lost = good;
  lost.metadata.erase("tgt_merges");
  CHECK_THROWS_WITH_AS(load_trained_model(lost),  // the file named, as every other checkpoint refusal does
                       doctest::Contains("best.safetensors: the options say tokenizer bpe but the metadata lacks "
                                         "src_merges/tgt_merges"),
                       FormatError);
  TensorFile gained = good;
  gained.metadata["options"] = replaced(good.metadata.at("options"), "tokenizer = bpe", "tokenizer = word");
  gained.metadata["options"] = replaced(gained.metadata.at("options"), "merges = 3", "merges = 0");
  gained.metadata["options"] = replaced(gained.metadata.at("options"), "vocab_size = 0",
                                        "vocab_size = " + std::to_string(TrainOptions::defaults_for(Task::translate).vocab_size));
  CHECK_THROWS_WITH_AS(load_trained_model(gained), doctest::Contains("holds src_merges/tgt_merges"), FormatError);
}
}  // namespace test_loading
