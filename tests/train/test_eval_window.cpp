// Evaluation-time windows (set_attention_window): a model trained with full attention scored with a
// sliding window and sinks is the same model as one built with that window, and its KV cache evicts
// to sinks + window entries while giving the same logits as the whole-sequence forward.
#include <doctest/doctest.h>

#include <xtensor/xview.hpp>

#include "headlab/core/tensor.hpp"
#include "headlab/train/evaluation.hpp"
#include "../lab/untrained_model.hpp"

namespace test_eval_window {

using namespace headlab;

namespace {

TrainOptions window_options(std::size_t window, std::size_t sinks) {
  TrainOptions o = TrainOptions::defaults_for(Task::induction);
  o.vocab = 10;
  o.length = 6;  // sequences of 13
  o.d_model = 16;
  o.heads = 2;
  o.layers = 2;
  o.window = window;
  o.sinks = sinks;
  o.progress = "none";
  return o;
}

IndexArray some_ids(std::size_t batch, std::size_t length) {
  IndexArray ids = IndexArray::from_shape({batch, length});
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < length; ++t) ids(b, t) = std::int64_t(t == 0 ? 1 : 2 + (3 * t + 5 * b) % 8);
  return ids;
}

Array<float> logits_of(LoadedModel& m, const IndexArray& ids) {
  NoGradGuard no_grad;
  return m.lm->forward(ids, nullptr).value();  // (B, T, V)
}

// Copies every parameter of `from` into `to` (same architecture).
void copy_weights(LoadedModel& from, LoadedModel& to) {
  auto target = to.lm->named_parameters();
  for (const auto& [name, tensor] : from.lm->named_parameters())
    for (auto& [other, handle] : target)
      if (other == name) handle.mutable_value() = tensor.value();
}

}  // namespace

TEST_CASE("eval window: a full-attention model with a window set is the model built with it") {
  LoadedModel full = testing::untrained_model(window_options(0, 0), 21);
  LoadedModel built = testing::untrained_model(window_options(4, 1), 99);
  copy_weights(full, built);
  const IndexArray ids = some_ids(3, 13);
  const Array<float> before = logits_of(full, ids);
  set_attention_window(full, 4, 1);
  CHECK(full.options.window == 4);
  CHECK(full.options.sinks == 1);
  const Array<float> windowed = logits_of(full, ids);
  CHECK(windowed == logits_of(built, ids));  // bit for bit: the same masks on the same weights
  // The first 4 positions see their whole prefix either way; position 12 does not.
  CHECK(xt::view(windowed, xt::all(), xt::range(0, 4)) == xt::view(before, xt::all(), xt::range(0, 4)));
  CHECK(xt::amax(xt::abs(xt::view(windowed, xt::all(), 12) - xt::view(before, xt::all(), 12)))() > 1e-4);
  // And back to the whole causal prefix.
  set_attention_window(full, 0, 0);
  CHECK(logits_of(full, ids) == before);
}

TEST_CASE("eval window: the KV cache evicts to sinks + window and matches the whole-sequence forward") {
  LoadedModel m = testing::untrained_model(window_options(0, 0), 5);
  set_attention_window(m, 3, 2);
  const IndexArray ids = some_ids(2, 13);
  const Array<float> whole = logits_of(m, ids);
  std::vector<KVCache<float>> caches(m.lm->layers());
  NoGradGuard no_grad;
  for (std::size_t t = 0; t < 13; ++t) {
    const IndexArray step = xt::view(ids, xt::all(), xt::range(t, t + 1));
    const Array<float> out = m.lm->forward(step, nullptr, &caches).value();  // (B, 1, V)
    CHECK(xt::allclose(xt::view(out, xt::all(), 0), xt::view(whole, xt::all(), t), 1e-5, 1e-5));
    CHECK(caches[0].stored_tokens() == std::min<std::size_t>(t + 1, 2 + 3));
  }
}

TEST_CASE("eval window: refused for encoder-decoders and sinks without a window, the model unchanged") {
  TrainOptions copy = window_options(0, 0);
  copy.task = Task::copy;
  LoadedModel encoder_decoder = testing::untrained_model(copy, 1);
  CHECK_THROWS_WITH_AS(set_attention_window(encoder_decoder, 4, 0), doctest::Contains("encoder-decoder"), ValueError);
  LoadedModel m = testing::untrained_model(window_options(5, 1), 1);
  CHECK_THROWS_WITH_AS(set_attention_window(m, 0, 2), doctest::Contains("--sinks 2 needs --window"), ValueError);
  CHECK(m.options.window == 5);
  CHECK(m.lm->layer(0).self_attn.config().window == 5);
  CHECK(m.lm->layer(1).self_attn.config().sinks == 1);
}
}  // namespace test_eval_window
