// train_step_bench.cpp: milliseconds per training step of the three benchmark models, and the
// machine's sgemm rate, for bench/compare_train.py (which runs the PyTorch twin, bench/train_twin.py,
// on the same configurations and alternates the two sides).
//
//   bench_train_step copy|translate|lm [steps] [warmup] [flash] [ftz]   -> one JSON line
//        flash: the tiled attention kernel in every module; ftz: set_flush_denormal(true)
//   bench_train_step sgemm [n]                              -> one JSON line: GFLOP/s of an n^3 sgemm
//
// The configurations (defined here and in train_twin.py, kept equal by hand):
//   copy       encoder-decoder d 64, 4 heads, ff 256, 2+2 layers, vocabulary 20, length 10, batch 32
//   translate  encoder-decoder d 128, 8 heads, ff 512, 2+2 layers, vocabulary 1000, length 20, batch 64
//   lm         decoder-only d 256, 8 heads, ff 1024, 4 layers, vocabulary 1000, length 128, batch 16
// Post-LN, ReLU, dropout 0, no label smoothing, Adam (lr 1e-4), no clipping. Encoder-decoder
// steps read src (B, L) and tgt (B, L): decoder input tgt[:, :-1], labels tgt[:, 1:]; the LM
// reads ids[:, :-1] and predicts ids[:, 1:]. Token ids uniform in [1, V) from a fixed seed, one
// batch reused every step. One step = forward, cross-entropy, backward, Adam update.
// FLOPs per step = 3 x forward FLOPs (backward ~ 2 x forward), from headlab's cost formulas.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <cblas.h>
#include <xtensor/xview.hpp>

#include "headlab/headlab.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/core/random.hpp"

using namespace headlab;

namespace {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Config {
  std::string name;
  bool decoder_only;
  std::size_t d, heads, ff, layers, vocab, length, batch;
};

const Config configs[] = {
    {"copy", false, 64, 4, 256, 2, 20, 10, 32},
    {"translate", false, 128, 8, 512, 2, 1000, 20, 64},
    {"lm", true, 256, 8, 1024, 4, 1000, 128, 16},
};

IndexArray random_ids(Generator& gen, std::size_t rows, std::size_t cols, std::size_t vocab) {
  IndexArray a = IndexArray::from_shape({rows, cols});
  for (auto& x : a) x = 1 + std::int64_t(gen.below(vocab - 1));
  return a;
}

int run_sgemm(std::size_t n) {
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  std::vector<double> ms;
  for (int r = 0; r < 23; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n), int(n), 1.0f, a.data(), int(n), b.data(),
                int(n), 0.0f, c.data(), int(n));
    if (r >= 3) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double m = median(ms);
  std::cout << "{\"sgemm_n\": " << n << ", \"ms\": " << m << ", \"gflops\": " << 2.0 * double(n * n * n) / (m * 1e6)
            << "}\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  set_blas_threads(1);
  tune_allocator();
  if (argc < 2) {
    std::cerr << "usage: bench_train_step copy|translate|lm [steps] [warmup] | sgemm [n]\n";
    return 2;
  }
  const std::string which = argv[1];
  if (which == "sgemm") return run_sgemm(argc > 2 ? std::stoul(argv[2]) : 512);
  const Config* cfg = nullptr;
  for (const Config& c : configs)
    if (c.name == which) cfg = &c;
  if (!cfg) {
    std::cerr << "bench_train_step: unknown configuration '" << which << "' (copy, translate, lm, sgemm)\n";
    return 2;
  }
  const std::size_t steps = argc > 2 ? std::stoul(argv[2]) : 20, warmup = argc > 3 ? std::stoul(argv[3]) : 3;
  TransformerConfig tc;
  tc.d_model = cfg->d;
  tc.ff_dim = cfg->ff;
  tc.encoder_layers = cfg->decoder_only ? 0 : cfg->layers;
  tc.decoder_layers = cfg->layers;
  tc.dropout = 0.0;
  tc.attention.num_heads = cfg->heads;
  bool flash = false, ftz = false;
  for (int i = 4; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "flash") {
      flash = true;
    } else if (arg == "ftz") {
      ftz = true;
    } else {
      std::cerr << "bench_train_step: unknown argument '" << arg << "' (flash, ftz)\n";
      return 2;
    }
  }
  if (ftz && !set_flush_denormal(true)) {
    std::cerr << "bench_train_step: flushing denormals is not supported here\n";
    return 2;
  }
  tc.attention.flash = flash;
  tc.src_vocab = cfg->decoder_only ? 1 : cfg->vocab;
  tc.tgt_vocab = cfg->vocab;
  tc.max_len = cfg->length;
  Generator gen(1);
  const auto V = std::ptrdiff_t(cfg->vocab), L = std::ptrdiff_t(cfg->length);
  const IndexArray src = random_ids(gen, cfg->batch, cfg->length, cfg->vocab);
  const IndexArray tgt = random_ids(gen, cfg->batch, cfg->length, cfg->vocab);
  const IndexArray inputs = xt::view(tgt, xt::all(), xt::range(0, L - 1));
  IndexArray labels = xt::view(tgt, xt::all(), xt::range(1, L));
  labels.reshape({labels.size()});
  AdamOptions ao;
  ao.lr = 1e-4;

  std::unique_ptr<Transformer<float>> seq2seq;
  std::unique_ptr<DecoderOnlyLM<float>> lm;
  std::vector<Tensor<float>> params;
  double forward_flops = 0;
  if (cfg->decoder_only) {
    lm = std::make_unique<DecoderOnlyLM<float>>(tc, gen);
    params = lm->parameters();
    forward_flops = decoder_only_flops_per_token(tc, cfg->length - 1) * double(cfg->batch * (cfg->length - 1));
  } else {
    seq2seq = std::make_unique<Transformer<float>>(tc, gen);
    params = seq2seq->parameters();
    forward_flops = transformer_flops_per_token(tc, cfg->length, cfg->length - 1) * double(cfg->batch * (cfg->length - 1));
  }
  Adam<float> adam(params, ao);
  std::vector<double> ms;
  for (std::size_t s = 0; s < warmup + steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    adam.zero_grad();
    const Tensor<float> logits = lm ? lm->forward(inputs, nullptr) : seq2seq->forward(src, inputs, Masks{}, nullptr);
    const Tensor<float> loss = cross_entropy(reshape(logits, {-1, V}), labels);
    loss.backward();
    adam.step();
    if (s >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double m = median(ms), flops = 3 * forward_flops;
  std::size_t n_params = 0;
  for (const auto& p : params) n_params += p.value().size();
  std::cout << "{\"side\": \"headlab\", \"config\": \"" << cfg->name << "\", \"flash\": " << (flash ? "true" : "false")
            << ", \"flush_denormals\": " << (ftz ? "true" : "false") << ", \"ms_per_step\": " << m
            << ", \"flops_per_step\": " << flops << ", \"gflops\": " << flops / (m * 1e6)
            << ", \"parameters\": " << n_params << ", \"peak_rss_mb\": " << peak_rss_mb() << ", \"steps\": " << steps
            << "}\n";
  return 0;
}
