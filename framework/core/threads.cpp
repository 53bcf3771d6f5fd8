// core/threads.cpp: the thread pool (OpenMP's) and parallel_for; see headlab/core/threads.hpp.
#include "headlab/core/threads.hpp"

#include <atomic>
#include <exception>
#include <string>
#include <thread>

#include <cblas.h>
#if defined(__linux__)
#include <sched.h>
#endif
#if defined(HEADLAB_HAS_OPENMP)
#include <omp.h>
#endif
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define HEADLAB_HAS_MXCSR 1
#endif

#include "headlab/core/errors.hpp"

namespace headlab {
namespace {
std::atomic<int> g_threads{1};
std::atomic<std::size_t> g_min_work{std::size_t(1) << 18};  // see set_min_parallel_work

bool inside_parallel_region() {
#if defined(HEADLAB_HAS_OPENMP)
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}
}  // namespace

int available_cores() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

bool threads_supported() {
#if defined(HEADLAB_HAS_OPENMP)
  return true;
#else
  return false;
#endif
}

void set_threads(int n) {
  if (n < 1) throw ValueError("set_threads: the thread count must be >= 1, got " + std::to_string(n));
  if (!threads_supported()) n = 1;
  g_threads = n;
  // BLAS runs inside headlab's threads (one pool): each call on one thread.
  openblas_set_num_threads(1);
#if defined(HEADLAB_HAS_OPENMP)
  omp_set_num_threads(n);
#endif
}

int threads() { return g_threads; }

void set_min_parallel_work(std::size_t work) { g_min_work = work < 1 ? 1 : work; }
std::size_t min_parallel_work() { return g_min_work; }

std::size_t parallel_chunks(std::size_t n, std::size_t work_per_item) {
  const auto T = static_cast<std::size_t>(g_threads.load());
  if (T <= 1 || n < 2 || inside_parallel_region()) return 1;
  const std::size_t w = work_per_item < 1 ? 1 : work_per_item;
  const bool worth_it = n >= (g_min_work.load() + w - 1) / w;  // n * w >= min work, without overflow
  return worth_it ? (n < T ? n : T) : 1;
}

void parallel_for(std::size_t n, std::size_t work_per_item,
                  const std::function<void(std::size_t begin, std::size_t end)>& body) {
  const std::size_t T = parallel_chunks(n, work_per_item);
  if (T <= 1) {
    if (n > 0) body(0, n);
    return;
  }
#if defined(HEADLAB_HAS_OPENMP)
  std::exception_ptr error;
#if defined(HEADLAB_HAS_MXCSR)
  const unsigned int csr = _mm_getcsr();  // the caller's float mode (flush-to-zero): the same on every thread
#endif
#pragma omp parallel num_threads(static_cast<int>(T))
  {
#if defined(HEADLAB_HAS_MXCSR)
    if (_mm_getcsr() != csr) _mm_setcsr(csr);
#endif
    // The team may be smaller than asked; chunks follow the team's size (fixed for a given T).
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    const auto team = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t begin = n * t / team, end = n * (t + 1) / team;
    if (begin < end) {
      try {
        body(begin, end);
      } catch (...) {
#pragma omp critical(headlab_parallel_for_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
#else
  body(0, n);
#endif
}

}  // namespace headlab
