// train_step_bench.cpp: milliseconds per training step of the three benchmark models, and the
// machine's sgemm rate, for bench/compare_train.py (which runs the PyTorch twin, bench/train_twin.py,
// on the same configurations and alternates the two sides).
//
//   bench_train_step copy|translate|lm [steps] [warmup] [flash] [ftz] [composed] [threads=N] [seq=T]
//        -> one JSON line
//        flash: the tiled attention kernel in every module; ftz: set_flush_denormal(true);
//        composed: the composed attention steps (heads split, permuted and merged as separate ops)
//        instead of the default that reads the heads in place (AttentionConfig::heads_in_place);
//        threads=N: headlab's thread count (default 1); seq=T: T input tokens, batch 2048 / T;
//        work=W: set_min_parallel_work(W), the size below which a loop stays on one thread;
//        split=0: every op split among the threads, never the batch (at threads > 1 a step cuts
//        the batch into one part per thread, as headlab train does: headlab/core/data_parallel.hpp)
//   bench_train_step sgemm [n] [threads=N]      -> one JSON line: GFLOP/s of an n^3 sgemm
//   bench_train_step gemm-rate CONFIG [threads=N] [seq=T] [split=0]
//        -> one JSON line: GFLOP/s of the model's own products (every linear layer's forward and
//           two backward gemms, and the per-head score and weighted-sum products), run the way the
//           step runs them (each thread its part's products when the batch is cut, else every
//           product split among the threads): the rate a step could reach if it did nothing but
//           its matrix products
//   bench_train_step baseline                   -> one JSON line: the peak RSS of an empty process
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

#include <xtensor/xview.hpp>

#include "headlab/core/data_parallel.hpp"
#include "headlab/headlab.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/optim/optim.hpp"
#include "headlab/core/random.hpp"
#include "ops/kernels/blas_gemm.hpp"

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

// Runs `once` untimed until kWarmupSeconds have passed (at least 3 times), then `timed` times, and
// returns the median milliseconds. The time floor outlasts OpenBLAS's own threads, which it starts
// when the library loads and which spin for about 0.1 s before they sleep: on 2 cores they take
// the second core from headlab's pool, and a 60 ms measurement read half the 2-thread rate in 12
// of 20 processes (OPENBLAS_THREAD_TIMEOUT=4, spinning cut short: 3 of 20; docs/performance.md).
constexpr double kWarmupSeconds = 0.3;
template <typename F>
double median_ms_after_warmup(int timed, const F& once) {
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < 3 || std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
                               kWarmupSeconds;
       ++r)
    once();
  std::vector<double> ms;
  for (int r = 0; r < timed; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    once();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(ms);
}

int run_sgemm(std::size_t n) {
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  const double m =
      median_ms_after_warmup(20, [&] { detail::gemm(false, false, n, n, n, a.data(), b.data(), 0.0f, c.data()); });
  std::cout << "{\"sgemm_n\": " << n << ", \"threads\": " << threads() << ", \"ms\": " << m
            << ", \"gflops\": " << 2.0 * double(n * n * n) / (m * 1e6) << "}\n";
  return 0;
}

// One product of the model: C (M x N) = op(A) op(B) with K inner, `count` independent copies
// (the per-head products: count = batch x heads, shared among the threads like matmul's).
struct Product {
  bool ta, tb;
  std::size_t M, N, K, count;
};

// The products of one training step of cfg (forward and backward), at batch B and T tokens.
std::vector<Product> step_products(const Config& cfg, std::size_t B, std::size_t T) {
  std::vector<Product> out;
  const std::size_t D = cfg.d, F = cfg.ff, V = cfg.vocab, H = cfg.heads, dh = D / H, rows = B * T;
  auto linear = [&](std::size_t in, std::size_t outf) {  // y = x W^T; dx = dy W; dW = dy^T x
    out.push_back({false, true, rows, outf, in, 1});
    out.push_back({false, false, rows, in, outf, 1});
    out.push_back({true, false, outf, in, rows, 1});
  };
  auto attention = [&](bool cross) {
    if (cross) {
      linear(D, D);
      linear(D, 2 * D);
    } else {
      linear(D, 3 * D);
    }
    linear(D, D);
    // scores = q k^T (T x T per head), out = w v; backward: two products each
    out.push_back({false, true, T, T, dh, B * H});
    out.push_back({false, false, T, dh, T, B * H});
    out.push_back({false, false, T, dh, T, B * H});   // dq = ds k
    out.push_back({true, false, T, dh, T, B * H});    // dk = ds^T q
    out.push_back({false, true, T, T, dh, B * H});    // dw = dout v^T
    out.push_back({true, false, T, dh, T, B * H});    // dv = w^T dout
  };
  const std::size_t decoder_layers = cfg.layers, encoder_layers = cfg.decoder_only ? 0 : cfg.layers;
  for (std::size_t l = 0; l < encoder_layers; ++l) {
    attention(false);
    linear(D, F);
    linear(F, D);
  }
  for (std::size_t l = 0; l < decoder_layers; ++l) {
    attention(false);
    if (!cfg.decoder_only) attention(true);
    linear(D, F);
    linear(F, D);
  }
  linear(D, V);
  return out;
}

// The products of a step run as the step runs them: with parts > 1 (the batch cut, one part per
// thread: headlab/core/data_parallel.hpp) each thread runs its part's products, each product on one
// thread; with parts = 1 every product is split among the threads (gemm by blocks, the per-head
// products by head).
int run_gemm_rate(const Config& cfg, std::size_t B, std::size_t T, std::size_t parts) {
  std::vector<std::vector<Product>> part_products;
  for (std::size_t p = 0; p < parts; ++p) part_products.push_back(step_products(cfg, (p + 1) * B / parts - p * B / parts, T));
  double flops = 0;
  std::size_t biggest = 0, count = 0;
  for (const std::vector<Product>& products : part_products) {
    count += products.size();
    for (const Product& p : products) {
      flops += 2.0 * double(p.M * p.N * p.K * p.count);
      biggest = std::max({biggest, p.M * p.K * p.count, p.K * p.N * p.count, p.M * p.N * p.count});
    }
  }
  // One set of buffers per part: parts run at once.
  std::vector<std::vector<float>> a(parts, std::vector<float>(biggest, 0.01f)),
      b(parts, std::vector<float>(biggest, 0.02f)), c(parts, std::vector<float>(biggest));
  auto run_part = [&](std::size_t part) {
    float *pa = a[part].data(), *pb = b[part].data(), *pc = c[part].data();
    for (const Product& p : part_products[part]) {
      const std::size_t sa = p.M * p.K, sb = p.K * p.N, sc = p.M * p.N;
      if (p.count == 1) {
        detail::gemm(p.ta, p.tb, p.M, p.N, p.K, pa, pb, 0.0f, pc);
      } else {  // inside parallel_parts this loop stays on the part's thread
        parallel_for(p.count, p.M * p.N * p.K, [&](std::size_t i0, std::size_t i1) {
          for (std::size_t i = i0; i < i1; ++i)
            detail::gemm(p.ta, p.tb, p.M, p.N, p.K, pa + i * sa, pb + i * sb, 0.0f, pc + i * sc);
        });
      }
    }
  };
  const double m = median_ms_after_warmup(10, [&] {
    if (parts == 1) {
      run_part(0);
    } else {
      parallel_parts(parts, run_part);
    }
  });
  std::cout << "{\"gemm_rate\": \"" << cfg.name << "\", \"threads\": " << threads() << ", \"seq\": " << T
            << ", \"batch\": " << B << ", \"parts\": " << parts << ", \"products\": " << count
            << ", \"ms\": " << m << ", \"gflops\": " << flops / (m * 1e6) << "}\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tune_allocator();
  if (argc < 2) {
    std::cerr << "usage: bench_train_step copy|translate|lm [steps] [warmup] [flash] [ftz] [composed] [threads=N]"
                 " [seq=T]\n"
                 "       bench_train_step sgemm [n] [threads=N] | gemm-rate CONFIG [threads=N] [seq=T] | baseline\n";
    return 2;
  }
  const std::string which = argv[1];
  // key=value arguments anywhere after the first; the rest are positional.
  std::vector<std::string> plain;
  std::size_t thread_count = 1, seq = 0;
  bool flash = false, ftz = false, split = true, in_place = true;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("threads=", 0) == 0) {
      thread_count = std::stoul(arg.substr(8));
    } else if (arg.rfind("work=", 0) == 0) {
      set_min_parallel_work(std::stoul(arg.substr(5)));
    } else if (arg.rfind("seq=", 0) == 0) {
      seq = std::stoul(arg.substr(4));
    } else if (arg.rfind("split=", 0) == 0) {
      split = arg.substr(6) != "0";
    } else if (arg == "flash") {
      flash = true;
    } else if (arg == "ftz") {
      ftz = true;
    } else if (arg == "composed") {
      in_place = false;
    } else {
      plain.push_back(arg);
    }
  }
  set_threads(int(std::max<std::size_t>(1, thread_count)));
  if (which == "baseline") {
    std::cout << "{\"side\": \"headlab\", \"config\": \"baseline\", \"peak_rss_mb\": " << peak_rss_mb() << "}\n";
    return 0;
  }
  if (which == "sgemm") return run_sgemm(!plain.empty() ? std::stoul(plain[0]) : 512);
  const std::string config_name = which == "gemm-rate" ? (plain.empty() ? "" : plain[0]) : which;
  const Config* found = nullptr;
  for (const Config& c : configs)
    if (c.name == config_name) found = &c;
  if (!found) {
    std::cerr << "bench_train_step: unknown configuration '" << config_name << "' (copy, translate, lm)\n";
    return 2;
  }
  Config chosen = *found;
  if (seq > 0) {  // T input tokens (length T + 1), B x T = 2048
    chosen.length = seq + 1;
    chosen.batch = std::max<std::size_t>(1, 2048 / seq);
  }
  const Config* cfg = &chosen;
  if (which == "gemm-rate")
    return run_gemm_rate(*cfg, cfg->batch, cfg->length - 1, split ? data_parallel_parts(cfg->batch) : 1);
  const std::size_t steps = plain.size() > 0 ? std::stoul(plain[0]) : 20,
                    warmup = plain.size() > 1 ? std::stoul(plain[1]) : 3;
  TransformerConfig tc;
  tc.d_model = cfg->d;
  tc.ff_dim = cfg->ff;
  tc.encoder_layers = cfg->decoder_only ? 0 : cfg->layers;
  tc.decoder_layers = cfg->layers;
  tc.dropout = 0.0;
  tc.attention.num_heads = cfg->heads;
  if (ftz && !set_flush_denormal(true)) {
    std::cerr << "bench_train_step: flushing denormals is not supported here\n";
    return 2;
  }
  tc.attention.flash = flash;
  tc.attention.heads_in_place = in_place;
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
  const std::size_t parts = split ? data_parallel_parts(cfg->batch) : 1;
  const PartLossFn part_loss = [&](std::size_t begin, std::size_t end, Generator*) {
    const auto rows = [&](const IndexArray& a) -> IndexArray {
      return xt::view(a, xt::range(std::ptrdiff_t(begin), std::ptrdiff_t(end)), xt::all());
    };
    const IndexArray part_inputs = rows(inputs);
    const IndexArray part_labels = xt::view(labels, xt::range(std::ptrdiff_t(begin) * (L - 1), std::ptrdiff_t(end) * (L - 1)));
    const Tensor<float> logits =
        lm ? lm->forward(part_inputs, nullptr) : seq2seq->forward(rows(src), part_inputs, Masks{}, nullptr);
    return PartLoss{cross_entropy(reshape(logits, {-1, V}), part_labels), part_labels.size()};
  };
  std::vector<double> ms;
  for (std::size_t s = 0; s < warmup + steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    adam.zero_grad();
    if (parts > 1) {  // the gradient of the token sum, part by part; then the mean's
      const DataParallelResult r = data_parallel_backward(params, cfg->batch, parts, part_loss, nullptr);
      const float inverse_tokens = 1.0f / static_cast<float>(r.tokens);
      for (const Tensor<float>& p : params)
        if (p.has_grad())
          for (float& g : p.node()->grad) g *= inverse_tokens;
    } else {
      const Tensor<float> logits = lm ? lm->forward(inputs, nullptr) : seq2seq->forward(src, inputs, Masks{}, nullptr);
      const Tensor<float> loss = cross_entropy(reshape(logits, {-1, V}), labels);
      loss.backward();
    }
    adam.step();
    if (s >= warmup) ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const double m = median(ms), flops = 3 * forward_flops;
  std::size_t n_params = 0;
  for (const auto& p : params) n_params += p.value().size();
  std::cout << "{\"side\": \"headlab\", \"config\": \"" << cfg->name << "\", \"flash\": " << (flash ? "true" : "false")
            << ", \"flush_denormals\": " << (ftz ? "true" : "false")
            << ", \"heads_in_place\": " << (in_place ? "true" : "false") << ", \"threads\": " << threads()
            << ", \"parts\": " << parts << ", \"seq\": " << cfg->length - 1 << ", \"batch\": " << cfg->batch << ", \"ms_per_step\": " << m
            << ", \"flops_per_step\": " << flops << ", \"gflops\": " << flops / (m * 1e6)
            << ", \"parameters\": " << n_params << ", \"peak_rss_mb\": " << peak_rss_mb() << ", \"steps\": " << steps
            << "}\n";
  return 0;
}
