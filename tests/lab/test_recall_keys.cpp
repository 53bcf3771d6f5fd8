// Where each head of a recall model looks among the keys a query names (headlab/lab/recall_keys.hpp):
// hand-made patterns with known answers, the refusals, and a checkpoint's rows.
#include <doctest/doctest.h>

#include <numeric>
#include <sstream>

#include "headlab/lab/recall_keys.hpp"
#include "headlab/train/trainer.hpp"
#include "test_support.hpp"
#include "tiny_train_run.hpp"

namespace test_recall_keys {

using namespace headlab;
using headlab::testing::TempDir;

namespace {
// The position (1..n) of `key`'s pair in sequence b.
std::size_t position_of(const RecallBatch& batch, const RecallLayout& layout, std::size_t b, std::size_t key) {
  for (std::size_t i = 1; i <= batch.sequences.shape()[1] / 2; ++i)
    if (layout.pair_key(batch.sequences(b, i)) == std::ptrdiff_t(key)) return i;
  FAIL("key not in the sequence");
  return 0;
}
}  // namespace

TEST_CASE("recall key mass: a head on key a, a head that averages a and b, a head on <s>") {
  const RecallLayout layout{8, 4, 2};
  Generator gen(5);
  const RecallBatch batch = recall_batch(gen, layout, 6, 4);  // (6, 9)
  const std::size_t B = 6, L = 9, n = 4;
  Array<double> w = xt::zeros<double>({B, std::size_t(3), L, L});
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t q = 0; q < L; ++q) {
      w(b, 2, q, 0) = 1.0;  // head 2: everything on <s>
      if (q <= n) {
        w(b, 0, q, 0) = w(b, 1, q, 0) = 1.0;
        continue;
      }
      const std::vector<std::size_t> keys = layout.query_keys(batch.sequences(b, q));
      const std::size_t a = position_of(batch, layout, b, keys[0]), c = position_of(batch, layout, b, keys[1]);
      w(b, 0, q, a) = 1.0;                  // head 0 reads key a
      w(b, 1, q, a) = w(b, 1, q, c) = 0.5;  // head 1 averages the two keys
    }
  const std::vector<RecallKeyMass> rows = recall_key_mass(w, batch, layout, 10);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].queries == B * n);
  CHECK(rows[0].mass == std::vector<double>{1.0, 0.0});
  CHECK(rows[0].focus == 1.0);
  CHECK(rows[0].share_histogram[9] == B * n);  // share 1: the last bin
  CHECK(rows[1].mass == std::vector<double>{0.5, 0.5});
  CHECK(rows[1].named == 1.0);
  CHECK(rows[1].focus == 0.5);
  CHECK(rows[1].share_histogram[5] == B * n);  // share 0.5: the bin [0.5, 0.6)
  CHECK(rows[2].named == 0.0);
  CHECK(std::accumulate(rows[2].share_histogram.begin(), rows[2].share_histogram.end(), std::size_t(0)) == 0);
}

TEST_CASE("recall key mass: weights of another shape, or sequences of another task, are refused") {
  const RecallLayout layout{8, 4, 2};
  Generator gen(5);
  const RecallBatch batch = recall_batch(gen, layout, 2, 4);
  CHECK_THROWS_AS(recall_key_mass(Array<double>(xt::zeros<double>({2, 1, 9, 8})), batch, layout), ShapeError);
  CHECK_THROWS_AS(recall_key_mass(Array<double>(xt::zeros<double>({3, 1, 9, 9})), batch, layout), ShapeError);
  RecallBatch not_recall = batch;
  not_recall.sequences(0, 2) = 1;  // <s> where a pair should be
  CHECK_THROWS_AS(recall_key_mass(Array<double>(xt::zeros<double>({2, 1, 9, 9})), not_recall, layout), ValueError);
  CHECK_THROWS_AS(recall_key_mass(Array<double>(xt::zeros<double>({2, 1, 9, 9})), batch, layout, 0), ValueError);
}

TEST_CASE("recall key mass of a checkpoint: one row a head, weights that add up, other tasks refused") {
  TempDir dir("recall_keys");
  TrainOptions o = TrainOptions::defaults_for(Task::recall);
  o.keys = 6;
  o.values = 3;
  o.length = 3;
  o.d_model = 16;
  o.heads = 2;
  o.layers = 2;
  o.steps = 2;
  o.eval_every = 2;
  o.eval_sequences = 16;
  o.progress = "none";
  o.run_dir = dir.path.string();
  std::ostringstream log;
  train(o, log);
  LoadedModel m = load_trained_model((dir.path / "checkpoint.safetensors").string());
  const std::vector<RecallKeyMass> rows = recall_key_mass(m, held_out_recall_sequences(m.options, 16), 4);
  REQUIRE(rows.size() == 4);  // 2 layers x 2 heads
  CHECK(rows[3].site == "layers.1.self_attn");
  CHECK(rows[3].head == 1);
  for (const RecallKeyMass& r : rows) {
    CHECK(r.queries == 16 * 3);
    CHECK(r.named == doctest::Approx(r.mass[0] + r.mass[1]));
    CHECK(r.named <= 1.0 + 1e-6);
    CHECK(r.focus <= r.named + 1e-12);
    CHECK(std::accumulate(r.share_histogram.begin(), r.share_histogram.end(), std::size_t(0)) == 16 * 3);
  }
  TempDir copy_dir("recall_keys_copy");
  headlab::testing::smallest_copy_run_trained(copy_dir.path);
  LoadedModel copy = load_trained_model((copy_dir.path / "checkpoint.safetensors").string());
  CHECK_THROWS_AS(recall_key_mass(copy, held_out_recall_sequences(m.options, 4)), ValueError);
}
}  // namespace test_recall_keys
