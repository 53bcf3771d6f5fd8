// The recall task (headlab/train/recall_task.hpp): its token layout, its sequences (checked against
// a decoding of their own), its scores, its options, and that a small model learns it.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <sstream>

#include "headlab/headlab.hpp"
#include "headlab/train/recall_task.hpp"
#include "headlab/train/trainer.hpp"
#include "test_support.hpp"
#include "tiny_train_run.hpp"

namespace test_recall_task {

using namespace headlab;
using headlab::testing::TempDir;

namespace {

// The tiny task of these tests: 4 keys, 2 values, 2 pairs, queries of both keys.
TrainOptions tiny_recall_run(std::size_t steps) {
  TrainOptions o = TrainOptions::defaults_for(Task::recall);
  o.keys = 4;
  o.values = 2;
  o.length = 2;
  o.relations = 2;
  o.d_model = 16;
  o.heads = 2;
  o.steps = steps;
  o.batch = 32;
  o.eval_every = steps;
  o.eval_sequences = 64;
  o.progress = "none";
  return o;
}

// 8 steps of the tiny run straight into `straight_dir`, and 4 then 4 more resumed in `resumed_dir`:
// the same losses bit for bit. train_sequences: the tiny run's --train-sequences.
void check_resume_bit_for_bit(const std::string& straight_dir, const std::string& resumed_dir,
                              std::size_t train_sequences, std::ostream& log) {
  TrainOptions straight = tiny_recall_run(8), half = tiny_recall_run(4), rest = tiny_recall_run(8);
  for (TrainOptions* t : {&straight, &half, &rest}) t->train_sequences = train_sequences;
  straight.run_dir = straight_dir;
  half.run_dir = rest.run_dir = resumed_dir;
  half.eval_every = straight.eval_every = rest.eval_every = 8;
  rest.resume = true;
  const TrainResult whole = train(straight, log);
  train(half, log);
  const TrainResult resumed = train(rest, log);
  REQUIRE(resumed.losses.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) CHECK(resumed.losses[i] == whole.losses[i]);  // bit for bit
}

}  // namespace

TEST_CASE("recall layout: pairs, queries and answers take disjoint id ranges that cover the vocabulary") {
  const RecallLayout layout{5, 3, 2};
  CHECK(layout.query_count() == 25);
  CHECK(layout.answer_count() == 9);
  CHECK(layout.vocab() == 2 + 15 + 25 + 9);
  std::set<std::int64_t> ids;
  for (std::size_t k = 0; k < 5; ++k)
    for (std::size_t v = 0; v < 3; ++v) ids.insert(layout.pair_token(k, v));
  for (std::size_t a = 0; a < 5; ++a)
    for (std::size_t b = 0; b < 5; ++b) ids.insert(layout.query_token({a, b}));
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t b = 0; b < 3; ++b) {
      const std::int64_t id = layout.answer_token({a, b});
      ids.insert(id);
      CHECK(layout.answer_values(id) == std::vector<std::size_t>{a, b});  // first value most significant
    }
  CHECK(ids.size() == layout.vocab() - 2);  // every id once, none of <pad> and <s>
  CHECK(*ids.begin() == 2);
  CHECK(*ids.rbegin() == std::int64_t(layout.vocab()) - 1);
  CHECK(layout.answer_values(layout.pair_token(0, 0)).empty());  // not an answer token
  CHECK(layout.token_text(layout.pair_token(4, 2)) == "k4=v2");
  CHECK(layout.token_text(layout.query_token({3, 1})) == "?k3,k1");
  CHECK(layout.token_text(layout.answer_token({2, 0})) == "=v2,v0");
  CHECK(layout.token_text(1) == "<s>");
  CHECK(layout.token_text(std::int64_t(layout.vocab())) == "#" + std::to_string(layout.vocab()));
  CHECK(layout.answer_values(std::int64_t(layout.vocab())).empty());
}

TEST_CASE("recall batch: distinct keys, queries of r distinct keys present, answers their values in order") {
  const RecallLayout layout{16, 8, 3};
  const std::size_t pairs = 6, B = 40;
  Generator gen(7);
  const RecallBatch batch = recall_batch(gen, layout, B, pairs);
  REQUIRE(batch.sequences.shape() == std::vector<std::size_t>{B, 2 * pairs + 1});
  REQUIRE(batch.targets.shape() == batch.sequences.shape());
  const std::int64_t first_query = std::int64_t(2 + layout.keys * layout.values);
  std::set<std::size_t> queried_slots;
  for (std::size_t b = 0; b < B; ++b) {
    CHECK(batch.sequences(b, 0) == Vocabulary::bos);
    std::map<std::size_t, std::size_t> value_of;  // decoded from the pair tokens
    for (std::size_t t = 1; t <= pairs; ++t) {
      const std::int64_t id = batch.sequences(b, t);
      REQUIRE(id >= 2);
      REQUIRE(id < first_query);
      const std::size_t key = std::size_t(id - 2) / layout.values, value = std::size_t(id - 2) % layout.values;
      CHECK(value_of.count(key) == 0);  // keys are distinct within a sequence
      value_of[key] = value;
      CHECK(batch.targets(b, t) == -100);
    }
    CHECK(batch.targets(b, 0) == -100);
    for (std::size_t t = pairs + 1; t <= 2 * pairs; ++t) {
      std::size_t index = std::size_t(batch.sequences(b, t) - first_query);
      REQUIRE(index < layout.query_count());
      std::vector<std::size_t> named(layout.relations);
      for (std::size_t j = layout.relations; j-- > 0;) {
        named[j] = index % layout.keys;
        index /= layout.keys;
      }
      std::vector<std::size_t> want;
      for (std::size_t key : named) {
        REQUIRE(value_of.count(key) == 1);  // every named key is in the sequence
        want.push_back(value_of[key]);
      }
      CHECK(std::set<std::size_t>(named.begin(), named.end()).size() == layout.relations);  // distinct
      CHECK(layout.answer_values(batch.targets(b, t)) == want);
      queried_slots.insert(named[0]);
    }
  }
  CHECK(queried_slots.size() > 8);  // the first named key varies
  Generator again(7);
  CHECK(recall_batch(again, layout, B, pairs).sequences == batch.sequences);  // one seed, one stream
}

TEST_CASE("recall options: sizes that make no task are refused, naming the option") {
  TrainOptions o = TrainOptions::defaults_for(Task::recall);
  CHECK_NOTHROW(o.validate());
  CHECK(o.model_config().tgt_vocab == recall_layout(o).vocab());
  auto refused = [](TrainOptions bad, const std::string& field, const std::string& words) {
    CAPTURE(field);
    try {
      bad.validate();
      FAIL("accepted");
    } catch (const OptionError& e) {
      CHECK(e.field() == field);
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
  };
  TrainOptions few_keys = o;
  few_keys.keys = o.length - 1;
  refused(few_keys, "keys", "distinct keys");
  TrainOptions short_context = o;
  short_context.length = 1;
  refused(short_context, "length", "cannot hold a query");
  TrainOptions one_value = o;
  one_value.values = 1;
  refused(one_value, "values", ">= 2");
  TrainOptions no_relation = o;
  no_relation.relations = 0;
  refused(no_relation, "relations", ">= 1");
  TrainOptions huge = o;  // 1000^4 query tokens: refused before anything is allocated
  huge.keys = 1000;
  huge.relations = 4;
  huge.length = 8;
  refused(huge, "relations", "exceed");
  TrainOptions copy = TrainOptions::defaults_for(Task::copy);
  copy.attention_only = true;
  refused(copy, "attention_only", "recall");
}

TEST_CASE("recall_eval: the loss is the cross-entropy at the query positions, accuracy the argmax's") {
  TrainOptions o = tiny_recall_run(1);
  Generator init(3), data(4);
  TransformerConfig c = o.model_config();
  DecoderOnlyLM<float> model(c, init);
  const RecallLayout layout = recall_layout(o);
  const RecallBatch batch = recall_batch(data, layout, 16, o.length);
  const RecallScore s = recall_eval(model, layout, batch);
  NoGradGuard no_grad;
  model.eval();
  const Tensor<float> logits = model.forward(batch.sequences, nullptr);  // (B, 5, V)
  IndexArray targets = batch.targets;
  targets.reshape({targets.size()});
  const double reference = cross_entropy(reshape(logits, {-1, std::ptrdiff_t(layout.vocab())}), targets).item();
  CHECK(s.loss == doctest::Approx(reference).epsilon(1e-5));
  std::size_t right = 0, answers = 0;
  for (std::size_t b = 0; b < 16; ++b)
    for (std::size_t t = 0; t < 5; ++t) {
      if (batch.targets(b, t) < 0) continue;
      ++answers;
      std::size_t best = 0;
      for (std::size_t v = 1; v < layout.vocab(); ++v)
        if (logits.value()(b, t, v) > logits.value()(b, t, best)) best = v;
      right += std::int64_t(best) == batch.targets(b, t);
    }
  CHECK(answers == 16 * o.length);
  CHECK(s.answer_accuracy == doctest::Approx(double(right) / double(answers)));
}

TEST_CASE("recall task: two heads learn the tiny task, and the summary and the resume are the shared loop's") {
  TempDir dir("recall");
  TrainOptions o = tiny_recall_run(300);
  o.run_dir = dir.path.string();
  std::ostringstream log;
  const TrainResult r = train(o, log);
  CHECK(r.steps_done == 300);
  CHECK(r.answer_accuracy > 0.95);  // chance is 1/4
  CHECK(r.slot_accuracy >= r.answer_accuracy);
  const std::string summary = headlab::testing::read_text(dir.path / "summary.json");
  CHECK(summary.find("\"task\": \"recall\"") != std::string::npos);
  CHECK(summary.find("\"slot_accuracy\"") != std::string::npos);
  // The checkpoint loads as a recall model and scores the same held-out sequences the same way.
  LoadedModel m = load_trained_model((dir.path / "checkpoint.safetensors").string());
  REQUIRE(m.lm);
  CHECK(m.options.task == Task::recall);
  const RecallScore again = recall_eval(*m.lm, recall_layout(m.options), held_out_recall_sequences(m.options, 64));
  CHECK(again.answer_accuracy == r.answer_accuracy);

  TempDir a("recall_straight"), b("recall_resumed");
  check_resume_bit_for_bit(a.path.string(), b.path.string(), 0, log);
}

TEST_CASE("recall unordered: the same sequences as the ordered form, each answer the values sorted") {
  const RecallLayout ordered{16, 8, 2}, unordered{16, 8, 2, true};
  Generator a(11), b(11);
  const RecallBatch x = recall_batch(a, ordered, 32, 6), y = recall_batch(b, unordered, 32, 6);
  CHECK(x.sequences == y.sequences);  // the same draws: a paired comparison of the two forms
  std::size_t swapped = 0;
  for (std::size_t i = 0; i < 32; ++i)
    for (std::size_t t = 7; t < 13; ++t) {
      const std::vector<std::size_t> in_order = ordered.answer_values(x.targets(i, t)),
                                      sorted = unordered.answer_values(y.targets(i, t));
      REQUIRE(in_order.size() == 2);
      CHECK(sorted == std::vector<std::size_t>{std::min(in_order[0], in_order[1]), std::max(in_order[0], in_order[1])});
      swapped += in_order != sorted;
    }
  CHECK(swapped > 40);  // about half of the 192 answers are out of order (and equal values stay)
  CHECK(unordered.answer_for({5, 2}) == unordered.answer_token({2, 5}));
  CHECK(ordered.answer_for({5, 2}) == ordered.answer_token({5, 2}));
}

TEST_CASE("recall layout: query_keys and pair_key read back what query_token and pair_token wrote") {
  const RecallLayout layout{5, 3, 2};
  for (std::size_t a = 0; a < 5; ++a) {
    for (std::size_t b = 0; b < 5; ++b) CHECK(layout.query_keys(layout.query_token({a, b})) == std::vector<std::size_t>{a, b});
    for (std::size_t v = 0; v < 3; ++v) CHECK(layout.pair_key(layout.pair_token(a, v)) == std::ptrdiff_t(a));
  }
  CHECK(layout.query_keys(layout.pair_token(1, 1)).empty());
  CHECK(layout.query_keys(layout.answer_token({0, 0})).empty());
  CHECK(layout.pair_key(layout.query_token({0, 1})) == -1);
  CHECK(layout.pair_key(1) == -1);  // <s>
}

TEST_CASE("recall unordered: a small model learns the sorted answers, and the option travels with the checkpoint") {
  TempDir dir("recall_unordered");
  TrainOptions o = tiny_recall_run(300);
  o.unordered_answer = true;
  o.run_dir = dir.path.string();
  std::ostringstream log;
  const TrainResult r = train(o, log);
  CHECK(log.str().find("answered sorted") != std::string::npos);
  CHECK(r.answer_accuracy > 0.95);
  LoadedModel m = load_trained_model((dir.path / "checkpoint.safetensors").string());
  CHECK(m.options.unordered_answer);
  CHECK(recall_layout(m.options).unordered_answer);
}

TEST_CASE("recall --train-sequences: a fixed set drawn from the seed, memorised by a small model, resumed bit for bit") {
  TrainOptions o = TrainOptions::defaults_for(Task::recall);  // 8 pairs of 16 keys x 16 values
  o.d_model = 16;
  o.heads = 4;
  o.train_sequences = 50;
  const RecallBatch set = recall_training_set(o), again = recall_training_set(o);
  REQUIRE(set.sequences.shape()[0] == 50);
  CHECK(set.sequences == again.sequences);
  CHECK(set.targets == again.targets);
  const RecallBatch held_out = held_out_recall_sequences(o, 50);
  CHECK(set.sequences != held_out.sequences);  // its own generator, not the held-out one
  TrainOptions other_seed = o;
  other_seed.seed = 2;
  CHECK(recall_training_set(other_seed).sequences != set.sequences);
  TrainOptions no_set = o;
  no_set.train_sequences = 0;
  CHECK(recall_training_set(no_set).sequences.shape()[0] == 0);
  const RecallBatch picked = recall_rows(set, {7, 0, 7});
  const std::size_t picks[3] = {7, 0, 7};
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t t = 0; t < 17; ++t) {
      CHECK(picked.sequences(i, t) == set.sequences(picks[i], t));
      CHECK(picked.targets(i, t) == set.targets(picks[i], t));
    }

  // 50 sequences: the model learns them and not the task (trained on fresh batches it would score
  // the same on both, near chance after 300 steps).
  TempDir dir("recall_finite");
  o.steps = 300;
  o.eval_every = 300;
  o.eval_sequences = 64;
  o.progress = "none";
  o.run_dir = dir.path.string();
  std::ostringstream log;
  const TrainResult r = train(o, log);
  CHECK(log.str().find("a training set of 50 sequences") != std::string::npos);
  const std::string summary = headlab::testing::read_text(dir.path / "summary.json");
  const auto at = summary.find("\"train_accuracy\": ");
  REQUIRE(at != std::string::npos);
  const double train_accuracy = std::stod(summary.substr(at + 18));
  CHECK(train_accuracy > 0.9);
  CHECK(r.answer_accuracy < 0.2);

  TempDir a("recall_finite_straight"), b("recall_finite_resumed");
  check_resume_bit_for_bit(a.path.string(), b.path.string(), 5, log);
  CHECK(headlab::testing::read_text(a.path / "summary.json").find("train_accuracy") != std::string::npos);
}

TEST_CASE("recall: at two threads each batch is cut in two parts, which train as the whole batch does") {
  TrainOptions o = tiny_recall_run(4);
  o.dropout = 0.0;
  headlab::testing::check_two_threads_match_one(o);
}
}  // namespace test_recall_task
