// attention_step_bench.cpp: milliseconds of one self-attention layer's training step (forward,
// backward) at a given width, head count and sequence length, the tokens per step held fixed, for
// the "free lunch" study (docs/studies/free-lunch.md): are h heads of D/h as fast as one of D?
//
//   bench_attention_step D H T [tokens=2048] [steps=20] [warmup=3] [threads=N] [flash|in-place]
//     -> one JSON line: d_model, heads, seq, batch, threads, ms (the median step), ms_min, ms_max,
//        forward_flops (per step, headlab's formula 8 T D^2 + 4 T^2 D per sequence, causal or not)
//
// x (B, T, D) with B = tokens / T, uniform in [-1, 1) from seed 1; MultiHeadAttention(D, H) with
// biases, causal; one step = forward, loss sum(out * g) with a fixed g, backward (gradients of x and
// of the four projections), then zero_grad. The composed path (split, head split, scores, softmax,
// weighted sum and head merge as separate ops: what the free-lunch study measures), set by
// config.heads_in_place = false; `in-place` takes the layer's default fast path instead (heads
// read in place from the projections), `flash` the tiled kernel.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "headlab/headlab.hpp"

using namespace headlab;

int main(int argc, char** argv) {
  tune_allocator();
  if (argc < 4) {
    std::cerr << "usage: bench_attention_step D H T [tokens=2048] [steps=20] [warmup=3] [threads=N] [flash|in-place]\n";
    return 2;
  }
  const std::size_t D = std::stoul(argv[1]), H = std::stoul(argv[2]), T = std::stoul(argv[3]);
  std::size_t tokens = 2048, steps = 20, warmup = 3, thread_count = 1;
  bool flash = false, in_place = false;
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](const char* key) { return std::stoul(a.substr(std::string(key).size())); };
    if (a.rfind("tokens=", 0) == 0) tokens = value("tokens=");
    else if (a.rfind("steps=", 0) == 0) steps = value("steps=");
    else if (a.rfind("warmup=", 0) == 0) warmup = value("warmup=");
    else if (a.rfind("threads=", 0) == 0) thread_count = value("threads=");
    else if (a == "flash") flash = true;
    else if (a == "in-place") in_place = true;
    else {
      std::cerr << "bench_attention_step: unknown argument '" << a << "'\n";
      return 2;
    }
  }
  if (D == 0 || H == 0 || D % H != 0 || T == 0 || tokens < T || steps == 0) {
    std::cerr << "bench_attention_step: D a multiple of H, T >= 1, tokens >= T, steps >= 1\n";
    return 2;
  }
  set_threads(int(std::max<std::size_t>(1, thread_count)));
  const std::size_t B = tokens / T;
  Generator gen(1);
  AttentionConfig config;
  config.d_model = D;
  config.num_heads = H;
  config.flash = flash;
  config.heads_in_place = in_place;
  MultiHeadAttention<float> attention(config, gen);
  Tensor<float> x = uniform<float>({B, T, D}, -1, 1, gen, true);
  const Tensor<float> g = uniform<float>({B, T, D}, -1, 1, gen);
  AttentionCall<float> call;
  call.causal = true;
  std::vector<double> ms;
  for (std::size_t s = 0; s < warmup + steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    sum(attention.forward(x, call).output * g).backward();
    attention.zero_grad();
    x.zero_grad();
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (s >= warmup) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  const double flops = double(B) * (8.0 * double(T) * double(D * D) + 4.0 * double(T * T) * double(D));
  std::cout << "{\"d_model\": " << D << ", \"heads\": " << H << ", \"seq\": " << T << ", \"batch\": " << B
            << ", \"threads\": " << threads() << ", \"flash\": " << (flash ? "true" : "false")
            << ", \"in_place\": " << (in_place ? "true" : "false") << ", \"ms\": " << median
            << ", \"ms_min\": " << ms.front() << ", \"ms_max\": " << ms.back() << ", \"forward_flops\": " << flops
            << "}\n";
  return 0;
}
