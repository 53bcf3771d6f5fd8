// The training stack: state dicts, decoding with caches, the trainer's
// checkpoints and exact resume.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <xtensor/xview.hpp>

#include "headlab/headlab.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/trainer.hpp"
#include "test_support.hpp"
#include "tiny_train_run.hpp"
#include "train/best_checkpoint.hpp"

namespace test_trainer {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::TempDir;
using headlab::testing::tiny_copy_run;

namespace {

TransformerConfig tiny_config() {
  TransformerConfig c;
  c.d_model = 16;
  c.ff_dim = 32;
  c.encoder_layers = c.decoder_layers = 1;
  c.dropout = 0.0;
  c.attention.num_heads = 2;
  c.src_vocab = c.tgt_vocab = 7;
  return c;
}

}  // namespace

TEST_CASE("state_dict: round trip, and strict loading lists missing, unexpected and mis-shaped entries") {
  Generator gen(1);
  Transformer<float> a(tiny_config(), gen), b(tiny_config(), gen);
  b.load_state_dict(a.state_dict());
  for (std::size_t i = 0; i < a.parameters().size(); ++i)
    CHECK(a.parameters()[i].value() == b.parameters()[i].value());

  auto state = a.state_dict();
  const Array<float> before = b.parameters()[0].value();
  state.pop_back();                                              // missing: generator.bias
  state.emplace_back("decoder.extra", Array<float>({1.0f}));     // unexpected
  state[0].second = xt::zeros<float>({3, 3});                    // wrong shape
  std::string msg;
  try {
    b.load_state_dict(state);
  } catch (const ValueError& e) {
    msg = e.what();
  }
  CHECK(msg.find("missing (1): generator.bias") != std::string::npos);
  CHECK(msg.find("unexpected (1): decoder.extra") != std::string::npos);
  CHECK(msg.find("wrong shape (1): " + state[0].first + " (expected") != std::string::npos);
  CHECK(b.parameters()[0].value() == before);  // untouched

  // Every tensor misshaped: three named, the rest counted (a 6-layer model's list was 11 kB on one line).
  auto all_wrong = a.state_dict();
  for (auto& [name, value] : all_wrong) value = xt::zeros<float>({2, 2, 2});
  msg.clear();
  try {
    b.load_state_dict(all_wrong);
  } catch (const ValueError& e) {
    msg = e.what();
  }
  CHECK(msg.find("wrong shape (" + std::to_string(all_wrong.size()) + "): ") != std::string::npos);
  CHECK(msg.find(" and " + std::to_string(all_wrong.size() - 3) + " more") != std::string::npos);
  CHECK(msg.size() < 400);
}

TEST_CASE("greedy decoding with a KV cache equals decoding by full recomputation") {
  Generator gen(3);
  Transformer<float> model(tiny_config(), gen);
  model.eval();
  Generator data(4);
  const IndexArray src = copy_task_batch(data, 3, 6, 7);
  const IndexArray cached = greedy_decode(model, src, 6, 1);
  NoGradGuard ng;
  IndexArray prefix = IndexArray::from_shape({3, 1});
  prefix.fill(1);
  const Tensor<float> memory = model.encode(src, Masks{}, nullptr);
  for (std::size_t t = 1; t < 6; ++t) {
    const Array<float> logits = model.project(model.decode(memory, prefix, Masks{}, nullptr)).value();
    IndexArray next = IndexArray::from_shape({3, t + 1});
    for (std::size_t b = 0; b < 3; ++b) {
      for (std::size_t j = 0; j < t; ++j) next(b, j) = prefix(b, j);
      std::size_t best = 0;
      for (std::size_t v = 1; v < 7; ++v)
        if (logits(b, t - 1, v) > logits(b, t - 1, best)) best = v;
      next(b, t) = static_cast<std::int64_t>(best);
    }
    prefix = next;
  }
  CHECK(prefix == cached);
}

TEST_CASE("decoder-only LM: cached one-token steps equal the full causal forward") {
  Generator gen(5);
  TransformerConfig c = tiny_config();
  c.decoder_layers = 2;
  c.attention.num_kv_heads = 1;
  c.attention.rope = true;
  DecoderOnlyLM<float> lm(c, gen);
  lm.eval();
  CHECK(lm.named_parameters().front().first == "embed.weight");
  Generator data(6);
  const IndexArray ids = copy_task_batch(data, 2, 6, 7);
  NoGradGuard ng;
  const Array<float> full = lm.forward(ids, nullptr).value();
  std::vector<KVCache<float>> caches(2);
  for (std::size_t t = 0; t < 6; ++t) {
    IndexArray one = xt::view(ids, xt::all(), xt::range(t, t + 1));
    const Array<float> step = lm.forward(one, nullptr, &caches).value();
    for (std::size_t b = 0; b < 2; ++b)
      for (std::size_t v = 0; v < 7; ++v) CHECK(step(b, 0, v) == doctest::Approx(full(b, t, v)).epsilon(1e-4));
  }
}

TEST_CASE("trainer: options survive to_text / from_text, and bad text names the line") {
  TrainOptions o;
  o.gate = GateKind::headwise;
  o.lr_factor = 0.3;
  o.norm_first = true;
  o.tiled_attention = true;
  CHECK(TrainOptions::from_text(o.to_text()).to_text() == o.to_text());
  CHECK(TrainOptions::from_text(o.to_text()).model_config().attention.flash);
  CHECK_FALSE(TrainOptions::from_text("vocab = 11\n").model_config().attention.flash);  // older files: off
  CHECK_THROWS_WITH_AS(TrainOptions::from_text("vocab = 11\nheads = many\n"), doctest::Contains("line 2 (heads)"),
                       ValueError);
  CHECK_THROWS_WITH_AS(TrainOptions::from_text("colour = red\n"), doctest::Contains("unknown option 'colour'"),
                       ValueError);
}

TEST_CASE("trainer: model_config gives decoder-only tasks no encoder, and encoder-decoder tasks theirs") {
  for (const Task task : {Task::induction, Task::lm, Task::recall}) {
    const TransformerConfig c = TrainOptions::defaults_for(task).model_config(9, 9);
    CHECK_MESSAGE(c.src_vocab == 1, task_name(task));
    CHECK_MESSAGE(c.encoder_layers == 0, task_name(task));
    CHECK_MESSAGE(c.tgt_vocab == 9, task_name(task));
  }
  for (const Task task : {Task::copy, Task::translate}) {
    const TransformerConfig c = TrainOptions::defaults_for(task).model_config(7, 9);
    CHECK_MESSAGE(c.src_vocab == 7, task_name(task));
    CHECK_MESSAGE(c.encoder_layers > 0, task_name(task));
  }
}

TEST_CASE("trainer: 2N steps straight equal N steps, a checkpoint, a resume and N more (bit for bit)") {
  TempDir a("straight"), b("resumed");
  std::ostringstream log;
  const TrainResult straight = train(tiny_copy_run(a.path, 8), log);
  REQUIRE(straight.losses.size() == 8);
  const TrainResult first = train(tiny_copy_run(b.path, 4), log);
  CHECK(first.losses.size() == 4);
  TrainOptions more = tiny_copy_run(b.path, 8);
  more.resume = true;
  more.save_every = 1;  // a resume may save more often: the numbers stay the same
  const TrainResult resumed = train(more, log);
  REQUIRE(resumed.losses.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(resumed.losses[i] == straight.losses[i]);  // exact equality, not approximate
  }
  CHECK(fs::exists(b.path / "config.ini"));
  CHECK_FALSE(fs::exists(b.path / "config.txt"));  // one config file per run
  CHECK(fs::exists(b.path / "loss.svg"));
  const auto rows = read_metrics(b.path / "metrics.jsonl");  // 4 lines from the first run, 4 appended on resume
  REQUIRE(rows.size() == 8);
  CHECK(rows[7].number("step") == 8);
  CHECK(rows[7].number("loss") == resumed.losses[7]);
}

TEST_CASE("trainer: --keep-checkpoints keeps every --save-every checkpoint, each the one a shorter run ends with") {
  TempDir kept("kept"), short_run("short");
  std::ostringstream log;
  TrainOptions o = tiny_copy_run(kept.path, 6);
  o.keep_checkpoints = true;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("give --save-every too"), ValueError);
  o.save_every = 2;
  train(o, log);
  const fs::path dir = kept.path / "checkpoints";
  for (const char* name : {"step-000002.safetensors", "step-000004.safetensors", "step-000006.safetensors"})
    CHECK_MESSAGE(fs::exists(dir / name), name);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 3);
  // The copy at step 4 holds what a 4-step run's checkpoint holds (the same weights, optimizer
  // state and generators; the options differ only in --steps and the saving).
  train(tiny_copy_run(short_run.path, 4), log);
  const TensorFile at_4 = load_safetensors((dir / "step-000004.safetensors").string());
  const TensorFile short_end = load_safetensors((short_run.path / "checkpoint.safetensors").string());
  REQUIRE(at_4.entries().size() == short_end.entries().size());
  for (const TensorEntry& entry : short_end.entries()) {
    CAPTURE(entry.name);
    CHECK(at_4.entry(entry.name).bytes == entry.bytes);
  }
  // --overwrite removes the kept checkpoints with the rest of the run.
  o.overwrite = true;
  o.steps = 2;
  train(o, log);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
}

TEST_CASE("trainer: the copy and induction tasks keep best.safetensors by --select, and loss.svg draws every series") {
  for (Task task : {Task::copy, Task::induction}) {
    for (const std::string select : {"valid_loss", "accuracy"}) {
      CAPTURE(task_name(task));
      CAPTURE(select);
      TempDir dir("select");
      TrainOptions o = tiny_copy_run(dir.path, 12);
      o.task = task;
      o.length = task == Task::induction ? 4 : 5;
      o.attention_only = task == Task::induction;
      o.eval_every = 2;
      o.select = select;
      std::ostringstream log;
      const TrainResult r = train(o, log);
      const std::string key =
          select == "valid_loss" ? "valid_loss" : task == Task::copy ? "valid_exact_match" : "repeated_accuracy";
      const std::size_t expected = headlab::testing::expected_best_step(dir.path, key, select != "valid_loss");
      CHECK(expected > 0);
      CHECK(r.best_step == expected);
      CHECK(headlab::testing::best_file_step(dir.path) == expected);
      const auto summary = headlab::testing::read_summary(dir.path);
      CHECK(summary["select"] == select);
      CHECK(summary["best_step"] == expected);
      // loss.svg: training and validation loss, and the task's metric (a line per series).
      std::ifstream in(dir.path / "loss.svg");
      const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      CHECK(svg.find(">validation loss</text>") != std::string::npos);
      CHECK(svg.find(task == Task::copy ? ">exact match</text>" : ">repeated half</text>") != std::string::npos);
    }
  }
}

TEST_CASE("trainer: with steps 0 (no cap) the time budget alone stops the run, after the budget is spent") {
  // Before: the step cap always applied, so `--time-budget 600` stopped at the default 3000 steps.
  TempDir d("budget");
  std::ostringstream log;
  TrainOptions o = tiny_copy_run(d.path, 0);
  o.time_budget = 0.5;
  const TrainResult r = train(o, log);
  CHECK(r.train_seconds >= 0.5);
  CHECK(r.steps_done == r.losses.size());
  CHECK(r.steps_done > 0);
  o.steps = 3;  // an explicit cap still comes first when it is nearer
  o.overwrite = true;
  CHECK(train(o, log).steps_done == 3);
}

TEST_CASE("trainer: a corrupt or mismatched checkpoint is refused with a clear error") {
  TempDir d("corrupt");
  std::ostringstream log;
  train(tiny_copy_run(d.path, 2), log);
  const fs::path ckpt = d.path / "checkpoint.safetensors";
  REQUIRE(fs::exists(ckpt));

  TrainOptions other = tiny_copy_run(d.path, 4);
  other.resume = true;
  other.ff_dim = 48;  // a different model
  CHECK_THROWS_WITH_AS(train(other, log), doctest::Contains("different options"), ValueError);

  fs::resize_file(ckpt, fs::file_size(ckpt) / 2);  // truncated
  TrainOptions again = tiny_copy_run(d.path, 4);
  again.resume = true;
  bool threw = false;
  try {
    train(again, log);
  } catch (const Error& e) {
    threw = true;
    CHECK(std::string(e.what()).find("checkpoint.safetensors") != std::string::npos);
  }
  CHECK(threw);
}

// The library names the TrainOptions field (OptionError::field); the CLI shows its flag instead
// (tests/cli/bad_input.cmake checks the messages of `headlab train`).
TEST_CASE("trainer: invalid options name the field") {
  TrainOptions o;
  o.heads = 3;  // does not divide d_model 64
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("num_heads 3 does not divide d_model 64"), ValueError);
  o = TrainOptions();
  o.warmup = 0;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("warmup: must be a whole number from 1 to 1000000000, got '0'"), OptionError);
  try {
    o.validate();
  } catch (const OptionError& e) {
    CHECK(e.field() == "warmup");
    CHECK(find_option_by_field(e.field()) != nullptr);
  }
  o = TrainOptions();
  o.resume = true;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("resume: needs a run directory"), OptionError);
  o = TrainOptions();
  o.layers = 0;  // passed validation once and crashed at the first evaluation
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("layers: must be a whole number from 1 to 1000000000, got '0'"), OptionError);
}

TEST_CASE("tied embeddings: one tensor under three names, counted once, trained as one") {
  TransformerConfig c = tiny_config();
  Generator g1(9), g2(9);
  Transformer<float> untied(c, g1);
  c.tie_embeddings = true;
  Transformer<float> tied(c, g2);
  const std::size_t V = 7, D = 16;
  CHECK(tied.parameter_count() == untied.parameter_count() - 2 * V * D);
  CHECK(tied.parameters().size() == untied.parameters().size() - 2);
  CHECK(tied.named_parameters().size() == untied.named_parameters().size());  // every name still listed
  const auto shared = tied.parameter("src_embed.weight").node();
  CHECK(tied.parameter("tgt_embed.weight").node() == shared);
  CHECK(tied.parameter("generator.weight").node() == shared);

  // The gradient of the shared matrix sums its three uses: src lookup, tgt lookup, logits.
  Generator data(2);
  const IndexArray src = copy_task_batch(data, 2, 5, 7);
  IndexArray flat = src;
  flat.reshape({10});
  const Tensor<float> loss = cross_entropy(reshape(tied.forward(src, src, Masks{}, nullptr), {-1, 7}), flat);
  loss.backward();
  REQUIRE(tied.parameter("generator.weight").has_grad());
  CHECK(xt::amax(xt::abs(tied.parameter("src_embed.weight").grad()))() > 0.0f);

  auto state = tied.state_dict();
  for (auto& [name, value] : state)
    if (name == "generator.weight") value(0, 0) += 1.0f;
  CHECK_THROWS_WITH_AS(tied.load_state_dict(state), doctest::Contains("tied"), ValueError);
  c.tgt_vocab = 9;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("tie_embeddings needs one vocabulary"), ValueError);
}

TEST_CASE("trainer: --tiled-attention trains the same model to float rounding") {
  TempDir a("composed"), b("tiled");
  std::ostringstream log;
  TrainOptions composed = tiny_copy_run(a.path, 6);
  composed.dropout = 0.0;  // attention dropout would send every module back to the composed path
  TrainOptions tiled = composed;
  tiled.run_dir = b.path.string();
  tiled.tiled_attention = true;
  const TrainResult x = train(composed, log), y = train(tiled, log);
  REQUIRE(x.losses.size() == 6);
  REQUIRE(y.losses.size() == 6);
  bool any_differs = false;
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(y.losses[i] == doctest::Approx(x.losses[i]).epsilon(1e-4));
    any_differs = any_differs || y.losses[i] != x.losses[i];
  }
  CHECK(any_differs);  // the kernels differ in rounding: the switch took effect
}

TEST_CASE("trainer: --heads-in-place reaches every attention layer's config (a recipe pins the path)") {
  TrainOptions o;
  CHECK(o.heads_in_place);  // the default since 2026-12-06
  CHECK(o.model_config(10, 10).attention.heads_in_place);
  o.heads_in_place = false;  // the composed steps, as runs made before then
  CHECK_FALSE(o.model_config(10, 10).attention.heads_in_place);
  o.task = Task::induction;
  CHECK_FALSE(o.model_config(10, 10).attention.heads_in_place);
}

TEST_CASE("trainer: a checkpoint saved before --heads-in-place resumes with either path, one that names it only with its own") {
  TempDir dir("no_heads_in_place");
  std::ostringstream log;
  train(tiny_copy_run(dir.path, 2), log);
  const std::string path = (dir.path / "checkpoint.safetensors").string();
  TensorFile file = load_safetensors(path);
  std::string& options = file.metadata.at("options");
  const std::size_t line = options.find("heads_in_place = true\n");
  REQUIRE(line != std::string::npos);
  options.erase(line, std::string("heads_in_place = true\n").size());  // as saved before 2026-12-07
  save_safetensors(path, file);
  TrainOptions composed = tiny_copy_run(dir.path, 3);
  composed.resume = true;
  composed.heads_in_place = false;  // what a run made before 2026-12-06 did (refused as "true there" before)
  CHECK(train(composed, log).steps_done == 3);
  TrainOptions in_place = tiny_copy_run(dir.path, 4);  // the checkpoint now names false
  in_place.resume = true;
  CHECK_THROWS_WITH_AS(train(in_place, log), doctest::Contains("heads_in_place false there, true here"), ValueError);
}

TEST_CASE("trainer: at two threads each batch is cut in two parts, which train as the whole batch does (copy, induction)") {
  TempDir b("two"), c("again");
  TrainOptions o = tiny_copy_run(b.path, 5);
  o.batch = 8;      // 4 rows a part at least
  o.dropout = 0.0;  // dropout draws differ: each part has its own generator
  o.run_dir.clear();
  testing::check_two_threads_match_one(o);
  o.grad_accum = 2;  // parts within accumulated batches
  testing::check_two_threads_match_one(o);

  TrainOptions induction = TrainOptions::defaults_for(Task::induction);
  induction.vocab = 10;
  induction.length = 6;
  induction.d_model = 16;
  induction.heads = 2;
  induction.layers = 1;
  induction.batch = 8;
  induction.steps = 4;
  induction.eval_every = 4;
  induction.eval_sequences = 8;
  induction.dropout = 0.0;
  induction.progress = "none";
  testing::check_two_threads_match_one(induction);

  // With dropout, the same seed and thread count give the same bits.
  const testing::ThreadScope scope(2, min_parallel_work());
  std::ostringstream log;
  TrainOptions with_dropout = tiny_copy_run(b.path, 5);
  with_dropout.batch = 8;
  const TrainResult x = train(with_dropout, log);
  with_dropout.run_dir = c.path.string();
  const TrainResult y = train(with_dropout, log);
  REQUIRE(x.losses.size() == 5);
  CHECK(x.losses == y.losses);
}
}  // namespace test_trainer
