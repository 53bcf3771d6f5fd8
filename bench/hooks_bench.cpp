// hooks_bench.cpp: what the hook points cost (headlab/nn/hooks.hpp, docs/circuits.md).
//
//   bench_hooks [copy|lm] [repeats]   -> one JSON line per mode: median ms of a training step
//                                        (forward, cross-entropy, backward) of the model
// Modes, alternated within each repeat so that drift hits them alike:
//   none      no HookPoints set (the default: every point is one null-pointer test)
//   attached  an empty HookPoints set: every point is passed (its name built, looked up), nothing
//             kept or changed; an upper bound on what "none" can cost over a model without points
//   caching   run_with_cache: every point's activation copied into the cache, hook_result and
//             hook_pattern computed (the composed kernel, per-head output products)
// Models as in train_step_bench.cpp: copy (encoder-decoder d 64, 4 heads, ff 256, 2+2 layers,
// length 10, batch 32) and lm (decoder-only d 256, 8 heads, ff 1024, 4 layers, length 128, batch 16).
// One thread (HEADLAB_THREADS is not read: set_threads(1)).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <xtensor/xview.hpp>

#include "headlab/core/random.hpp"
#include "headlab/core/threads.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/ops/ops.hpp"

using namespace headlab;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

IndexArray random_ids(Generator& gen, std::size_t rows, std::size_t cols, std::size_t vocab) {
  IndexArray a = IndexArray::from_shape({rows, cols});
  for (auto& x : a) x = 1 + std::int64_t(gen.below(vocab - 1));
  return a;
}

TransformerConfig config(bool lm) {
  TransformerConfig c;
  c.d_model = lm ? 256 : 64;
  c.ff_dim = lm ? 1024 : 256;
  c.encoder_layers = lm ? 0 : 2;
  c.decoder_layers = lm ? 4 : 2;
  c.dropout = 0.0;
  c.attention.num_heads = lm ? 8 : 4;
  c.src_vocab = c.tgt_vocab = lm ? 1000 : 20;
  c.max_len = 256;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "copy";
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 30;
  if (which != "copy" && which != "lm") {
    std::cerr << "bench_hooks: the model must be copy or lm, got '" << which << "'\n";
    return 2;
  }
  set_threads(1);
  const bool lm = which == "lm";
  const TransformerConfig c = config(lm);
  Generator gen(1);
  const std::size_t B = lm ? 16 : 32, L = lm ? 129 : 10;
  const IndexArray ids = random_ids(gen, B, L, c.tgt_vocab);
  const auto Lm1 = std::ptrdiff_t(L - 1);
  const IndexArray inputs = xt::view(ids, xt::all(), xt::range(0, Lm1));
  IndexArray labels = xt::view(ids, xt::all(), xt::range(1, Lm1 + 1));
  labels.reshape({labels.size()});
  std::unique_ptr<DecoderOnlyLM<float>> decoder_only;
  std::unique_ptr<Transformer<float>> encoder_decoder;
  if (lm) decoder_only = std::make_unique<DecoderOnlyLM<float>>(c, gen);
  else encoder_decoder = std::make_unique<Transformer<float>>(c, gen);
  auto set_hooks = [&](HookPoints<float>* h) { lm ? decoder_only->set_hooks(h) : encoder_decoder->set_hooks(h); };
  auto step = [&]() {
    const Tensor<float> logits =
        lm ? decoder_only->forward(inputs, nullptr) : encoder_decoder->forward(ids, inputs, Masks{}, nullptr);
    Tensor<float> loss = cross_entropy(reshape(logits, {-1, std::ptrdiff_t(c.tgt_vocab)}), labels);
    loss.backward();
  };
  const char* modes[] = {"none", "attached", "caching"};
  std::vector<std::vector<double>> ms(3);
  for (int r = 0; r < repeats + 3; ++r) {
    for (int m = 0; m < 3; ++m) {
      HookPoints<float> hooks;
      hooks.set_caching(m == 2);
      set_hooks(m == 0 ? nullptr : &hooks);
      const auto t0 = std::chrono::steady_clock::now();
      step();
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 3) ms[m].push_back(t);  // three warm-up rounds
      set_hooks(nullptr);
    }
  }
  for (int m = 0; m < 3; ++m)
    std::cout << "{\"model\": \"" << which << "\", \"mode\": \"" << modes[m] << "\", \"threads\": 1, \"repeats\": " << repeats
              << ", \"median_ms\": " << median(ms[m]) << ", \"vs_none\": " << median(ms[m]) / median(ms[0]) << "}\n";
  return 0;
}
