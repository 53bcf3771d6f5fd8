// The language-model task (headlab/train/lm_task.hpp) on the shipped King James text.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "headlab/core/file_writer.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/train/trainer.hpp"
#include "read_bytes.hpp"
#include "test_support.hpp"
#include "tiny_train_run.hpp"

namespace test_lm_task {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::TempDir;

namespace {

const std::string kKjv = std::string(HEADLAB_FIXTURE_DIR) + "/../../datasets/kjv/kjv.txt";

TrainOptions small_lm(const fs::path& dir, std::size_t steps) {
  TrainOptions o = TrainOptions::defaults_for(Task::lm);
  o.text_file = kKjv;
  o.d_model = 64;
  o.heads = 4;
  o.ff_dim = 256;
  o.layers = 2;
  o.length = 32;
  o.batch = 32;
  o.steps = steps;
  o.warmup = 20;
  o.eval_every = steps;
  o.eval_sequences = 200;
  o.progress = "none";
  o.run_dir = dir.string();
  return o;
}

void write_text(const fs::path& path, const std::string& text) { write_file_atomic(path.string(), text, "test"); }

}  // namespace

TEST_CASE("lm task: a small model learns the King James text (validation below 2.9 bits per character)") {
  // A model that knows only character frequencies scores 4.36 bits/char on the held-out
  // part (tutorials/10_char_lm.cpp computes it); the bound asks for clearly more than that after
  // 400 steps of 32 windows of 32 characters.
  TempDir d("lm_learns");
  std::ostringstream log;
  const TrainResult r = train(small_lm(d.path, 400), log);
  INFO(log.str());
  CHECK(r.steps_done == 400);
  const double bits = r.valid_loss / std::log(2.0);
  CHECK(bits < 2.9);
  CHECK(r.losses.front() > 3.5);  // it started from nothing (ln 66 ~ 4.2 nats)
  CHECK(fs::exists(d.path / "summary.json"));
  const std::string summary = headlab::testing::read_bytes(d.path / "summary.json");
  CHECK(summary.find("\"valid_bits_per_char\"") != std::string::npos);
  CHECK(summary.find("\"task\": \"lm\"") != std::string::npos);
  // The first-token sink of the final weights, and the run's loss spikes and divergence (none).
  CHECK(summary.find("\"sink_mass\": 0.") != std::string::npos);
  CHECK(summary.find("\"loss_spikes\": ") != std::string::npos);
  CHECK(summary.find("\"diverged\": 0") != std::string::npos);
  // The checkpoint loads back as a decoder-only model with its characters.
  const LoadedModel m = load_trained_model((d.path / "checkpoint.safetensors").string());
  REQUIRE(m.lm != nullptr);
  CHECK(m.lm_vocab.decode(m.lm_vocab.encode("In the beginning")) == "In the beginning");
  const LmScore again = lm_score(*m.lm, load_lm_data(m.options).valid, m.options.length, m.options.eval_sequences,
                                 m.options.batch);
  CHECK(again.loss == doctest::Approx(r.valid_loss).epsilon(1e-6));  // the same weights, the same score
}

TEST_CASE("lm task: a resumed run repeats the uninterrupted one bit for bit") {
  TempDir a("lm_straight"), b("lm_resumed");
  std::ostringstream log;
  const TrainResult straight = train(small_lm(a.path, 6), log);
  request_stop();
  const TrainResult stopped = train(small_lm(b.path, 6), log);
  REQUIRE(stopped.interrupted);
  TrainOptions rest = small_lm(b.path, 6);
  rest.resume = true;
  const TrainResult resumed = train(rest, log);
  REQUIRE(resumed.losses.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) CHECK(resumed.losses[i] == straight.losses[i]);
}

TEST_CASE("lm task: a stop inside the first step (--grad-accum) ends with step 0 scored, then resumes") {
  // Before: the final evaluation's log line read the last of no losses (a segfault).
  TempDir a("lm_accum_straight"), b("lm_accum_stopped");
  std::ostringstream log;
  TrainOptions o = small_lm(a.path, 3);
  o.grad_accum = 2;
  const TrainResult straight = train(o, log);
  o.run_dir = b.path.string();
  request_stop();
  const TrainResult stopped = train(o, log);
  REQUIRE(stopped.interrupted);
  CHECK(stopped.steps_done == 0);
  CHECK(std::isfinite(stopped.valid_loss));  // the initial weights, scored
  CHECK(std::filesystem::exists(b.path / "summary.json"));
  o.resume = true;
  const TrainResult resumed = train(o, log);
  REQUIRE(resumed.losses.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(resumed.losses[i] == straight.losses[i]);
}

TEST_CASE("lm task: the held-out part is the end of the text, or --valid's file") {
  TempDir d("lm_split");
  write_text(d.path / "t.txt", "abcdefghij");  // 10 characters: 8 to train, 2 held out at 0.2
  TrainOptions o = small_lm(d.path / "run", 1);
  o.text_file = (d.path / "t.txt").string();
  o.length = 1;
  o.valid_fraction = 0.2;
  LmData data = load_lm_data(o);
  CHECK(data.vocab.decode(data.train) == "abcdefgh");
  CHECK(data.vocab.decode(data.valid) == "<unk><unk>");
  CHECK(data.valid_unknown == 2);  // i and j are not in the training part
  write_text(d.path / "v.txt", "cab");
  o.valid_file = (d.path / "v.txt").string();
  o.valid_fraction = TrainOptions::defaults_for(Task::lm).valid_fraction;
  data = load_lm_data(o);
  CHECK(data.vocab.decode(data.train) == "abcdefghij");
  CHECK(data.vocab.decode(data.valid) == "cab");
}

TEST_CASE("lm task: bad texts and options are refused before training, naming the file or option") {
  TempDir d("lm_bad");
  TrainOptions o = small_lm(d.path / "run", 1);
  write_text(d.path / "bad.txt", "abc\xff def");
  o.text_file = (d.path / "bad.txt").string();
  CHECK_THROWS_WITH_AS(load_lm_data(o), doctest::Contains("bad.txt: not valid UTF-8 at byte 3"), FormatError);
  write_text(d.path / "short.txt", "abcdef");
  o.text_file = (d.path / "short.txt").string();
  CHECK_THROWS_WITH_AS(load_lm_data(o), doctest::Contains("fewer than one window"), FormatError);
  o.text_file = (d.path / "missing.txt").string();
  CHECK_THROWS_AS(load_lm_data(o), IOError);
  TrainOptions empty = TrainOptions::defaults_for(Task::lm);
  CHECK_THROWS_WITH_AS(empty.validate(), doctest::Contains("text_file: task lm needs a text"), OptionError);
  empty.text_file = kKjv;
  empty.valid_fraction = 0.9;
  CHECK_THROWS_WITH_AS(empty.validate(), doctest::Contains("valid_fraction: must be in (0, 0.5]"), OptionError);
  empty.valid_fraction = 0.1;
  empty.select = "accuracy";
  CHECK_THROWS_WITH_AS(empty.validate(), doctest::Contains("task lm has valid_loss"), OptionError);
}

TEST_CASE("lm task: a sliding window with sinks and latent K/V (MLA) reach the model, its config and its checkpoint") {
  TempDir full("lm_full"), windowed("lm_window"), latent("lm_latent");
  std::ostringstream log;
  const TrainResult all_keys = train(small_lm(full.path, 2), log);
  TrainOptions w = small_lm(windowed.path, 2);
  w.window = 4;
  w.sinks = 1;
  const TrainResult window = train(w, log);
  CHECK(window.losses.front() != all_keys.losses.front());  // the same weights see fewer keys
  const LoadedModel m = load_trained_model((windowed.path / "checkpoint.safetensors").string());
  REQUIRE(m.lm != nullptr);
  CHECK(m.lm->config().attention.window == 4);
  CHECK(m.lm->config().attention.sinks == 1);
  const std::string config = headlab::testing::read_bytes(windowed.path / "config.ini");
  CHECK(config.find("\nwindow=4\n") != std::string::npos);
  CHECK(config.find("\nsinks=1\n") != std::string::npos);

  TrainOptions l = small_lm(latent.path, 2);
  l.latent_dim = 16;
  l.rope = true;
  l.rope_dim = 4;
  const TrainResult mla = train(l, log);
  CHECK(std::isfinite(mla.losses.back()));
  const LoadedModel ml = load_trained_model((latent.path / "checkpoint.safetensors").string());
  REQUIRE(ml.lm != nullptr);
  CHECK(ml.lm->config().attention.latent_dim == 16);
  CHECK(ml.lm->config().attention.rope_dim == 4);
  CHECK(ml.lm->parameter_count() != m.lm->parameter_count());

  // A resume must keep the attention of the run it continues.
  TrainOptions other = w;
  other.resume = true;
  other.steps = 3;
  other.window = 8;
  CHECK_THROWS_WITH(train(other, log), doctest::Contains("window"));
}

TEST_CASE("lm task: window, sinks, latent-dim and rope-dim refused where they cannot apply, naming the option") {
  TrainOptions o = TrainOptions::defaults_for(Task::lm);
  o.text_file = kKjv;
  o.sinks = 2;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("sinks: keeps the first positions visible"), OptionError);
  o.sinks = 0;
  o.rope_dim = 4;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("rope_dim: is the rotary key of latent K/V"), OptionError);
  o.latent_dim = 16;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("rope_dim: is the size of a rotary key: give --rope"), OptionError);
  o.rope = true;
  o.rope_dim = 3;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("rope_dim: latent K/V with --rope needs an even"), OptionError);
  o.rope_dim = 4;
  o.validate();
  o.kv_heads = 2;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("kv_heads: latent K/V"), OptionError);
  TrainOptions copy = TrainOptions::defaults_for(Task::copy);
  copy.window = 4;
  CHECK_THROWS_WITH_AS(copy.validate(), doctest::Contains("window: is for tasks induction, lm and recall"), OptionError);
}

TEST_CASE("lm task: --tokenizer word trains on words, scores bits per character and saves its words") {
  TempDir d("lm_words");
  TrainOptions o = small_lm(d.path, 30);
  o.tokenizer = "word";
  o.min_freq = 3;
  o.length = 16;
  o.eval_sequences = 50;
  std::ostringstream log;
  const TrainResult r = train(o, log);
  INFO(log.str());
  CHECK(log.str().find("word tokens") != std::string::npos);
  const LoadedModel m = load_trained_model((d.path / "checkpoint.safetensors").string());
  REQUIRE(m.lm != nullptr);
  CHECK(m.lm_vocab.tokenizer() == LmTokenizer::words);
  CHECK(m.lm_vocab.decode(m.lm_vocab.encode("And God said")) == " and god said\n");
  const LmData data = load_lm_data(m.options);
  const double chars_per_token = data.valid_chars_per_token;
  CHECK(chars_per_token > 3.0);  // English words and their spaces: about 4.5 characters a token
  CHECK(chars_per_token < 6.0);
  const LmScore s = lm_score(*m.lm, data.valid, m.options.length, m.options.eval_sequences, m.options.batch,
                             chars_per_token);
  CHECK(s.loss == doctest::Approx(r.valid_loss).epsilon(1e-6));
  CHECK(s.bits_per_char == doctest::Approx(s.loss / std::log(2.0) / chars_per_token));
  CHECK(r.valid_bits_per_char == doctest::Approx(s.bits_per_char).epsilon(1e-6));
  // Char options stay refused for words and the other way round.
  TrainOptions bad = o;
  bad.tokenizer = "bpe";
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("tokenizer: 'bpe' is not char or word"), OptionError);
  bad.tokenizer = "char";
  CHECK_THROWS_WITH_AS(bad.validate(), doctest::Contains("min_freq: is for --tokenizer word"), OptionError);
}

TEST_CASE("lm task: the same seed and thread count give the same losses bit for bit, at 1 and at 2 threads") {
  std::vector<std::vector<double>> losses;
  for (int n : {1, 1, 2, 2}) {
    const headlab::testing::ThreadScope scope(n, 1);  // work 1: every parallel path runs, even on this small model
    TempDir d("lm_threads");
    std::ostringstream log;
    TrainOptions o = small_lm(d.path, 4);
    o.dropout = 0.1;  // dropout's random draws too
    losses.push_back(train(o, log).losses);
  }
  REQUIRE(losses[0].size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(losses[1][i] == losses[0][i]);  // one thread, twice
    CHECK(losses[3][i] == losses[2][i]);  // two threads, twice
  }
  // 1 against 2 threads: the batch is cut in two parts, each with its own dropout generator, so the
  // masks differ; without dropout the two agree to rounding ("lm: at two threads ..." below).
  CHECK(losses[2] != losses[0]);
}

namespace {
// A decoder-only lm of 2 layers, 2 heads, d_model 8 over `vocab` ids, its context `length`.
DecoderOnlyLM<float> tiny_lm(std::size_t vocab, std::size_t length, GateKind gate, std::uint64_t seed) {
  TrainOptions o = TrainOptions::defaults_for(Task::lm);
  o.d_model = 8;
  o.heads = 2;
  o.ff_dim = 16;
  o.layers = 2;
  o.length = length;
  o.gate = gate;
  TransformerConfig c = o.model_config(vocab, vocab);
  Generator gen(seed);
  return DecoderOnlyLM<float>(c, gen);
}
std::vector<std::int64_t> some_ids(std::size_t n, std::size_t vocab) {
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < n; ++i) ids.push_back(std::int64_t(4 + (7 * i + i / 3) % (vocab - 4)));
  return ids;
}
}  // namespace

TEST_CASE("lm sink mass: with zero queries and keys every query attends uniformly, so the sink is mean_i 1/(i+1)") {
  for (GateKind gate : {GateKind::none, GateKind::elementwise}) {  // a gate scales outputs, not weights
    DecoderOnlyLM<float> m = tiny_lm(12, 5, gate, 3);
    // in_proj_weight (3D, D) = [W_q; W_k; W_v]: rows 0 .. 2D - 1 (and their biases) to 0, so every
    // score is 0 and query i's softmax over its i + 1 keys is 1 / (i + 1) each.
    for (auto& [name, p] : m.named_parameters()) {
      if (name.find("self_attn.in_proj_") == std::string::npos) continue;
      const std::size_t qk = 2 * 8 * (p.dim() == 2 ? 8 : 1);
      for (std::size_t i = 0; i < qk; ++i) p.mutable_value().data()[i] = 0.0f;
    }
    const double expected = (1.0 / 2 + 1.0 / 3 + 1.0 / 4 + 1.0 / 5) / 4;  // queries 1..4 of L = 5
    CHECK(lm_sink_mass(m, some_ids(40, 12), 5, 3, 2) == doctest::Approx(expected).epsilon(1e-6));
    CHECK(m.is_training());  // the mode is given back
  }
}

TEST_CASE("lm sink mass: equals the mean over layers and heads of the per-head sink mass headlab heads reports") {
  DecoderOnlyLM<float> m = tiny_lm(12, 6, GateKind::headwise, 5);
  const std::vector<std::int64_t> ids = some_ids(50, 12);
  const double sink = lm_sink_mass(m, ids, 6, 4, 4);
  // The same 4 windows (starts 0, 6, 12, 18; their first 6 ids) through the model with taps on.
  IndexArray w = IndexArray::from_shape({4, 6});
  for (std::size_t b = 0; b < 4; ++b)
    for (std::size_t t = 0; t < 6; ++t) w(b, t) = ids[6 * b + t];
  double sum = 0;
  std::size_t heads = 0;
  {
    NoGradGuard no_grad;
    m.eval();
    for (std::size_t l = 0; l < m.layers(); ++l) m.layer(l).self_attn.set_taps(true);
    (void)m.forward(w, nullptr);
    for (std::size_t l = 0; l < m.layers(); ++l)
      for (double s : sink_mass(m.layer(l).self_attn.last_taps().weights.value())) sum += s, ++heads;
  }
  REQUIRE(heads == 4);
  CHECK(sink == doctest::Approx(sum / double(heads)).epsilon(1e-9));
  CHECK(sink > 0.0);
  CHECK(sink < 1.0);
}

TEST_CASE("lm --bos-windows: each window is read from <s>, as the score and the sink mass are computed here") {
  DecoderOnlyLM<float> m = tiny_lm(12, 6, GateKind::none, 7);
  m.eval();
  const std::vector<std::int64_t> ids = some_ids(40, 12);
  // 3 windows of 6 inputs + 1 target (starts 0, 6, 12); with bos_first the first input is <s> (1).
  IndexArray inputs = IndexArray::from_shape({3, 6});
  IndexArray targets = IndexArray::from_shape({18});
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t t = 0; t < 6; ++t) {
      inputs(b, t) = t == 0 ? LmVocabulary::bos : ids[6 * b + t];
      targets(6 * b + t) = ids[6 * b + t + 1];
    }
  double expected = 0, sink = 0;
  {
    NoGradGuard no_grad;
    for (std::size_t l = 0; l < m.layers(); ++l) m.layer(l).self_attn.set_taps(true);
    const Tensor<float> logits = m.forward(inputs, nullptr);  // (3, 6, V)
    expected = cross_entropy(reshape(logits, {-1, 12}), targets, -100).item();
    std::size_t heads = 0;
    for (std::size_t l = 0; l < m.layers(); ++l)
      for (double s : sink_mass(m.layer(l).self_attn.last_taps().weights.value())) sink += s, ++heads;
    sink /= double(heads);
    for (std::size_t l = 0; l < m.layers(); ++l) m.layer(l).self_attn.set_taps(false);
  }
  const LmScore with = lm_score(m, ids, 6, 3, 2, 1.0, true), without = lm_score(m, ids, 6, 3, 2, 1.0, false);
  CHECK(with.tokens == 18);
  CHECK(with.loss == doctest::Approx(expected).epsilon(1e-6));
  CHECK(std::abs(with.loss - without.loss) > 1e-6);  // the first input matters
  CHECK(lm_sink_mass(m, ids, 6, 3, 2, true) == doctest::Approx(sink).epsilon(1e-6));
}

TEST_CASE("lm --bos-windows: a run trains from <s>-first windows, stores the option and is refused for other tasks") {
  TempDir dir("lm_bos_windows");
  TrainOptions o = small_lm(dir.path / "run", 6);
  o.d_model = 16;
  o.heads = 2;
  o.ff_dim = 32;
  o.length = 8;
  o.batch = 4;
  o.eval_sequences = 8;
  o.bos_windows = true;
  std::ostringstream log;
  (void)train(o, log);
  const LoadedModel m = load_trained_model((dir.path / "run" / "checkpoint.safetensors").string());
  CHECK(m.options.bos_windows);
  o.bos_windows = false;
  o.run_dir = (dir.path / "plain").string();
  std::ostringstream log2;
  (void)train(o, log2);
  // The same seed and data: only the first input of every window differs, so the losses do.
  CHECK(testing::read_bytes(dir.path / "run" / "metrics.jsonl") != testing::read_bytes(dir.path / "plain" / "metrics.jsonl"));
  TrainOptions induction = TrainOptions::defaults_for(Task::induction);
  induction.bos_windows = true;
  CHECK_THROWS_WITH_AS(induction.validate(), doctest::Contains("bos_windows: is for task lm"), OptionError);
}

TEST_CASE("lm: at two threads each batch is cut in two parts, which train as the whole batch does") {
  TrainOptions o = small_lm("", 3);
  o.dropout = 0.0;
  o.eval_sequences = 20;
  headlab::testing::check_two_threads_match_one(o);
}
}  // namespace test_lm_task
