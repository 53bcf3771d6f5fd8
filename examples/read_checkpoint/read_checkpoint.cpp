// examples/read_checkpoint: open a checkpoint written by `headlab train`, list what is in it, and
// look at one layer's attention through the taps of MultiHeadAttention.
//
// Usage: read_checkpoint RUN_DIR/checkpoint.safetensors
//
//   1. load_trained_model reads the weights and the options they were trained with;
//   2. every parameter's name and shape (PyTorch's names: encoder.layers.0.self_attn.in_proj_weight ...),
//      checked against a fresh model built from those options: the same names, shapes and count;
//   3. one input through the model with taps on the first self-attention layer; taps keep the
//      per-head weights A (B, h, L, S), A[b, h, i, :] = softmax_j(q_i . k_j / sqrt(d)), so every
//      row must be >= 0 and sum to 1.
// The program exits 1 if a check fails (2 for a bad command line or an unreadable file).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "headlab/headlab.hpp"

using namespace headlab;

namespace {

bool check(bool good, const std::string& what) {
  std::printf("  %-70s %s\n", what.c_str(), good ? "ok" : "FAILED");
  return good;
}

// The number of scalars in a list of (name, array) pairs.
std::size_t scalars(const Module<float>::StateDict& state) {
  std::size_t n = 0;
  for (const auto& [name, value] : state) n += value.size();
  return n;
}

// Same names, in the same order, with the same shapes.
bool same_layout(const Module<float>::StateDict& a, const Module<float>::StateDict& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || a[i].second.shape() != b[i].second.shape()) return false;
  }
  return true;
}

// An array's shape as headlab's Shape (for shape_str).
template <typename A>
Shape shape_of(const A& a) {
  return Shape(a.shape().begin(), a.shape().end());
}

// One input row (1, n) of ids.
IndexArray row(const std::vector<std::int64_t>& ids) {
  IndexArray a = IndexArray::from_shape({1, ids.size()});
  for (std::size_t i = 0; i < ids.size(); ++i) a(0, i) = ids[i];
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR/checkpoint.safetensors\n", argv[0]);
    return 2;
  }
  LoadedModel m;
  try {
    m = load_trained_model(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "read_checkpoint: %s\n", e.what());
    return 2;
  }
  const TrainOptions& o = m.options;
  const bool lm = m.lm != nullptr;  // the induction task trains a decoder-only model
  Module<float>& model = lm ? static_cast<Module<float>&>(*m.lm) : *m.model;
  bool ok = true;

  std::printf("1. %s, saved at step %zu, trained with:\n%s\n", argv[1], m.step, o.to_text().c_str());

  std::printf("2. parameters\n");
  const Module<float>::StateDict state = model.state_dict();
  for (const auto& [name, value] : state) std::printf("  %-50s %s\n", name.c_str(), shape_str(shape_of(value)).c_str());
  std::printf("  %zu tensors, %zu scalars\n", state.size(), model.parameter_count());
  // A fresh model from the saved options must have exactly this layout (the weights differ).
  Generator gen(0);
  std::unique_ptr<Module<float>> fresh;
  if (lm) {
    fresh = std::make_unique<DecoderOnlyLM<float>>(o.model_config(), gen);
  } else if (o.task == Task::translate) {
    fresh = std::make_unique<Transformer<float>>(o.model_config(m.src_vocab.size(), m.tgt_vocab.size()), gen);
  } else {
    fresh = std::make_unique<Transformer<float>>(o.model_config(), gen);
  }
  ok &= check(same_layout(state, fresh->state_dict()), "names and shapes = a model built from the options");
  ok &= check(model.parameter_count() == fresh->parameter_count(),
              "parameter count " + std::to_string(model.parameter_count()) + " = the fresh model's");
  ok &= check(o.tie_embeddings || scalars(state) == model.parameter_count(),
              "untied: the shapes add up to the count");

  // 3. One input with taps on the first self-attention layer.
  IndexArray src, tgt;
  if (lm) {
    tgt = held_out_induction_sequences(o, 1).sequences;                 // (1, 2 T + 1)
  } else if (o.task == Task::copy) {
    src = held_out_sequences(o, 1);                                     // (1, length)
    std::vector<std::int64_t> in(src.begin(), src.end() - 1);           // decoder input: tgt[:, :-1]
    tgt = row(in);
  } else {                                                              // translate: a few corpus ids
    std::vector<std::int64_t> ids;
    const std::int64_t end = std::min<std::int64_t>(10, std::int64_t(m.src_vocab.size()));
    for (std::int64_t id = Vocabulary::num_specials; id < end; ++id) ids.push_back(id);
    ids.push_back(Vocabulary::eos);
    src = row(ids);
    tgt = row({Vocabulary::bos});
  }
  MultiHeadAttention<float>& attn = lm ? m.lm->layer(0).self_attn : m.model->encoder_layer(0).self_attn;
  attn.set_taps(true);
  {
    NoGradGuard no_grad;  // inference: no graph
    if (lm) {
      (void)m.lm->forward(tgt, nullptr);
    } else {
      (void)m.model->forward(src, tgt, Masks{}, nullptr);
    }
  }
  attn.set_taps(false);
  const Array<float>& w = attn.last_taps().weights.value();  // (B, h, L, S)
  const std::size_t heads = w.shape()[1], L = w.shape()[2], S = w.shape()[3];
  const IndexArray& seen = lm ? tgt : src;
  std::printf("3. %s layer 0 self-attention on the ids", lm ? "decoder-only" : "encoder");
  for (const std::int64_t id : seen) std::printf(" %lld", static_cast<long long>(id));
  std::printf("\n  weights %s (B, h, L, S)\n", shape_str(shape_of(w)).c_str());
  double worst = 0, smallest = 0;
  for (std::size_t h = 0; h < heads; ++h) {
    std::printf("  head %zu: row i = query i, column j = key j\n", h);
    for (std::size_t i = 0; i < L; ++i) {
      double total = 0;
      std::printf("   ");
      for (std::size_t j = 0; j < S; ++j) {
        std::printf(" %.2f", double(w(0, h, i, j)));
        total += w(0, h, i, j);
        smallest = std::min(smallest, double(w(0, h, i, j)));
      }
      std::printf("\n");
      worst = std::max(worst, std::fabs(total - 1.0));
    }
  }
  ok &= check(heads == o.heads, "one weight matrix per head (" + std::to_string(o.heads) + ")");
  ok &= check(smallest >= 0 && worst < 1e-5,
              "every row is >= 0 and sums to 1 (max |sum - 1| " + std::to_string(worst) + ")");

  std::printf("%s\n", ok ? "OK: the checkpoint reads back consistently" : "FAILED: see the lines above");
  return ok ? 0 : 1;
}
