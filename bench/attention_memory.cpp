// attention_memory.cpp: peak memory and time of one attention forward + backward, composed SDPA
// against the tiled kernel (flash_attention), one path per process (the peak RSS is a process-wide
// high-water mark, so the two must not share a process).
//
//   bench_attention_memory composed|flash [T] [heads] [d] [block]      (defaults 4096 8 64 64)
//
// q, k, v (1, h, T, d) float32, causal; "extra" = peak RSS after forward + backward minus the
// RSS once the inputs and the upstream gradient exist (what the attention itself needed).
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "headlab/attention/attention.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/core/random.hpp"
#include "headlab/headlab.hpp"

using namespace headlab;

namespace {
double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // kilobytes on Linux
}
}  // namespace

int main(int argc, char** argv) {
  set_threads(1);
  if (argc < 2 || (std::strcmp(argv[1], "composed") != 0 && std::strcmp(argv[1], "flash") != 0)) {
    std::cerr << "usage: bench_attention_memory composed|flash [T] [heads] [d] [block]\n";
    return 2;
  }
  const bool flash = std::strcmp(argv[1], "flash") == 0;
  const std::size_t T = argc > 2 ? std::stoul(argv[2]) : 4096, h = argc > 3 ? std::stoul(argv[3]) : 8,
                    d = argc > 4 ? std::stoul(argv[4]) : 64, block = argc > 5 ? std::stoul(argv[5]) : 64;
  Generator gen(1);
  Tensor<float> q = uniform<float>({1, h, T, d}, -1, 1, gen, true), k = uniform<float>({1, h, T, d}, -1, 1, gen, true),
                v = uniform<float>({1, h, T, d}, -1, 1, gen, true);
  const Tensor<float> w = uniform<float>({1, h, T, d}, -1, 1, gen);
  const double base = peak_rss_mb();
  SdpaOptions<float> o;
  o.causal = true;
  const auto t0 = std::chrono::steady_clock::now();
  const Tensor<float> out = flash ? flash_attention(q, k, v, o, block).output : scaled_dot_product_attention(q, k, v, o).output;
  const auto t1 = std::chrono::steady_clock::now();
  sum(out * w).backward();
  const auto t2 = std::chrono::steady_clock::now();
  const double peak = peak_rss_mb();
  std::cout << (flash ? "flash" : "composed") << " T " << T << " heads " << h << " d " << d << (flash ? " block " + std::to_string(block) : "")
            << ": forward " << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms, backward "
            << std::chrono::duration<double, std::milli>(t2 - t1).count() << " ms, peak RSS " << peak << " MB, extra "
            << peak - base << " MB over the inputs (" << base << " MB)\n";
  return 0;
}
