// matmul_bench: matmul forward + backward through the autograd engine versus
// the same three raw cblas_sgemm calls, single-threaded.
//
//   forward   C = A B              (M x K) @ (K x N)
//   backward  dA = dC B^T, dB = A^T dC
// Both sides do 3 gemms = 6 M N K flops per step. Reported: median ms per
// step over repetitions (after warm-up), GFLOP/s, and autograd / raw.
//
// usage: bench_matmul [repetitions]   (one thread: it calls set_threads(1))
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cblas.h>

#include "headlab/headlab.hpp"

using namespace headlab;
using Clock = std::chrono::steady_clock;

namespace {

template <typename Fn>
double median_ms(Fn&& fn, int reps) {
  for (int i = 0; i < 3; ++i) fn();  // warm-up
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  set_threads(1);
  tune_allocator();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 31;
  struct Case { int M, K, N; };
  const std::vector<Case> cases = {{64, 64, 64}, {256, 256, 256}, {640, 128, 384}, {512, 512, 512}};
  std::printf("| M x K x N | raw sgemm x3 (ms) | autograd matmul fwd+bwd (ms) | raw GFLOP/s | autograd GFLOP/s | autograd / raw |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const Case& c : cases) {
    Generator gen(1);
    TensorF a = uniform<float>({std::size_t(c.M), std::size_t(c.K)}, -1, 1, gen, true);
    TensorF b = uniform<float>({std::size_t(c.K), std::size_t(c.N)}, -1, 1, gen, true);
    const Array<float> upstream = uniform<float>({std::size_t(c.M), std::size_t(c.N)}, -1, 1, gen).value();

    std::vector<float> C(std::size_t(c.M) * c.N), dA(std::size_t(c.M) * c.K), dB(std::size_t(c.K) * c.N);
    const float* A = a.value().data();
    const float* B = b.value().data();
    const float* dC = upstream.data();
    auto raw = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c.M, c.N, c.K, 1.f, A, c.K, B, c.N, 0.f, C.data(), c.N);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c.M, c.K, c.N, 1.f, dC, c.N, B, c.N, 0.f, dA.data(), c.K);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, c.K, c.N, c.M, 1.f, A, c.K, dC, c.N, 0.f, dB.data(), c.N);
    };
    auto engine = [&] {
      a.zero_grad();
      b.zero_grad();
      TensorF out = matmul(a, b);
      out.backward(upstream);
    };
    // Alternate the two sides so that machine noise hits both alike.
    double t_raw = 0, t_eng = 0;
    for (int round = 0; round < 3; ++round) {
      const double r = median_ms(raw, reps), e = median_ms(engine, reps);
      t_raw = round ? std::min(t_raw, r) : r;
      t_eng = round ? std::min(t_eng, e) : e;
    }
    const double gflop = 6.0 * c.M * c.N * c.K * 1e-9;
    std::printf("| %d x %d x %d | %.3f | %.3f | %.1f | %.1f | %.3f |\n", c.M, c.K, c.N, t_raw, t_eng,
                gflop / (t_raw * 1e-3), gflop / (t_eng * 1e-3), t_eng / t_raw);
  }
  return 0;
}
