// core/threads.cpp: headlab's thread pool and parallel_for; see headlab/core/threads.hpp.
//
// The pool (one per process, started on the first loop that needs it) keeps threads() - 1 worker
// threads; the calling thread is the last member of every team. A loop of n items on T threads is
// cut into the fixed chunks [c n / T, (c + 1) n / T), c = 0 .. T - 1, and every member, the caller
// included, takes the next chunk not yet taken until none is left. Which thread runs a chunk
// therefore never changes a number (the chunks write disjoint memory), and a worker that the
// operating system has not scheduled (another process holds its core) does not hold the loop up:
// the caller runs its chunks itself.
//
// Waiting yields. Between loops a worker spins for a short while (spin_budget, 50 us)
// and then sleeps on a condition variable; the caller waiting for the last chunk does the same.
// Spinning keeps the wake-up of back-to-back loops short on an idle machine; sleeping stops waiting
// threads from burning the time slices that the thread they wait for, or another process, needs.
// And when the workers keep missing loops, the caller runs them alone for a while
// (detail::ContentionGuard). The pool used to be OpenMP's, whose threads busy-wait at each barrier
// unless the user sets OMP_WAIT_POLICY before the program starts: beside one busy process a step
// took twice as long at two threads as at one (bench/wait_policy.py, docs/performance.md).
//
// Limits: a loop body must not start a thread that runs a parallel_for and wait for it (loops take
// turns on the one pool: that would deadlock), and must not fork.
#include "headlab/core/threads.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>
#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
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

thread_local bool t_inside_loop = false;  // this thread is running a chunk of a parallel_for
constexpr std::size_t kMostChunks = 0xffff;  // a loop's chunk count fits 16 bits of the ticket

using Body = std::function<void(std::size_t, std::size_t)>;

void cpu_relax() {
#if defined(HEADLAB_HAS_MXCSR)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// How long a waiting thread spins before it sleeps: 50 microseconds, long enough to catch the next
// loop of a training step, short next to a time slice. bench/wait_policy.py measures 0, 50 and 200
// us (HEADLAB_SPIN_US overrides it for that measurement; 0 = sleep at once): on the 2-vCPU EPYC of
// 2026-12-05 sleeping at once cost copy 20-50% in two runs of three, the rest was within noise.
std::chrono::microseconds spin_budget() {
  static const std::chrono::microseconds budget = [] {
    const char* text = std::getenv("HEADLAB_SPIN_US");
    if (text == nullptr || *text == '\0') return std::chrono::microseconds(50);
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 0 || value > 1000000) return std::chrono::microseconds(50);
    return std::chrono::microseconds(value);
  }();
  return budget;
}

// Spins until done() holds or the budget is spent; true when done() held.
template <typename Done>
bool spin_until(const Done& done) {
  const auto budget = spin_budget();
  if (budget.count() == 0) return done();
  const auto start = std::chrono::steady_clock::now();
  for (unsigned i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start > budget) return done();
  }
}

class Pool {
 public:
  // Runs chunk c = [c n / T, (c + 1) n / T) of body for c = 0 .. T - 1 on the workers and the
  // calling thread; returns when all have ended, rethrowing the first exception of a chunk.
  // coarse: long chunks (parallel_parts): timed, and judged by the SlowWorkerGuard instead.
  void run(std::size_t n, std::size_t T, const Body& body, bool coarse) {
    if (coarse ? coarse_guard_.run_alone() : guard_.run_alone()) return run_alone(n, T, body);
    coarse_ = coarse;
    if (coarse) chunk_time_.assign(T, std::chrono::nanoseconds(0));
    start_workers(T - 1);
    body_ = &body;
    n_ = n;
    finished_ = 0;
    error_ = nullptr;
#if defined(HEADLAB_HAS_MXCSR)
    csr_ = _mm_getcsr();  // the caller's float mode (flush-to-zero): the same on every thread
#endif
    // A new ticket: the next generation, its chunk count, chunk 0 not yet taken. Release: the loop's
    // fields above are visible to whoever takes a chunk of this generation (a take is an exchange
    // from this ticket or a later one of the same generation).
    const std::uint64_t generation = generation_of(ticket_.load(std::memory_order_relaxed)) + 1;
    ticket_.store(generation << 32 | std::uint64_t(T) << 16, std::memory_order_seq_cst);
    if (sleeping_workers_.load(std::memory_order_seq_cst) > 0) {
      { const std::lock_guard<std::mutex> lock(mutex_); }
      wake_.notify_all();
    }
    const std::size_t ran_here = run_chunks(generation);
    if (!spin_until([&] { return finished_.load(std::memory_order_seq_cst) == T; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_sleeping_.store(true, std::memory_order_seq_cst);
      finished_cv_.wait(lock, [&] { return finished_.load(std::memory_order_seq_cst) == T; });
      caller_sleeping_.store(false, std::memory_order_relaxed);
    }
    if (coarse) {
      const auto [fastest, slowest] = std::minmax_element(chunk_time_.begin(), chunk_time_.end());
      coarse_guard_.record(*fastest, *slowest, ran_here < T);
    } else {
      guard_.record(ran_here < T);
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // The same chunks, in order, on the calling thread: the same bits as with the workers.
  static void run_alone(std::size_t n, std::size_t T, const Body& body) {
    std::exception_ptr error;
    t_inside_loop = true;
    for (std::size_t c = 0; c < T; ++c) {
      try {
        if (n * c / T < n * (c + 1) / T) body(n * c / T, n * (c + 1) / T);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    t_inside_loop = false;
    if (error) std::rethrow_exception(error);
  }

  void start_workers(std::size_t count) {
    while (workers_ < count) {
      std::thread(&Pool::work, this, workers_).detach();  // the pool lives as long as the process
      ++workers_;
    }
  }

  // A ticket: generation << 32 | chunks << 16 | next chunk to take. The count and the next chunk
  // travel in one word, so a take checks its bound against its own loop, never the next one's.
  static std::uint64_t generation_of(std::uint64_t ticket) { return ticket >> 32; }
  static std::size_t chunks_of(std::uint64_t ticket) { return (ticket >> 16) & 0xffffu; }
  static std::size_t next_of(std::uint64_t ticket) { return ticket & 0xffffu; }

  // Takes chunks of this generation until none is left; returns how many this thread ran.
  std::size_t run_chunks(std::uint64_t generation) {
    std::size_t ran = 0;
    std::uint64_t ticket = ticket_.load(std::memory_order_acquire);
    for (;;) {
      if (generation_of(ticket) != generation || next_of(ticket) >= chunks_of(ticket)) return ran;
      if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel)) continue;
      const std::size_t c = next_of(ticket), T = chunks_of(ticket);
      ticket = ticket + 1;
#if defined(HEADLAB_HAS_MXCSR)
      if (_mm_getcsr() != csr_) _mm_setcsr(csr_);
#endif
      const std::size_t begin = n_ * c / T, end = n_ * (c + 1) / T;
      t_inside_loop = true;
      const auto chunk_start = coarse_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      try {
        if (begin < end) (*body_)(begin, end);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      t_inside_loop = false;
      if (coarse_) chunk_time_[c] = std::chrono::steady_clock::now() - chunk_start;  // chunk c: this thread's alone
      ++ran;
      if (finished_.fetch_add(1, std::memory_order_seq_cst) + 1 == T &&
          caller_sleeping_.load(std::memory_order_seq_cst)) {
        { const std::lock_guard<std::mutex> lock(mutex_); }
        finished_cv_.notify_one();
      }
    }
  }

  void work(std::size_t index) {
    std::uint64_t seen = 0;
    for (;;) {
      // Workers beyond the current thread count do not spin: they would only find no chunk.
      const bool wanted = index + 1 < static_cast<std::size_t>(g_threads.load(std::memory_order_relaxed));
      auto fresh = [&] { return generation_of(ticket_.load(std::memory_order_seq_cst)) != seen; };
      if (!(wanted && spin_until(fresh))) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, fresh);
        sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = generation_of(ticket_.load(std::memory_order_acquire));
      run_chunks(seen);
    }
  }

  // The loop being run; written by the caller before it publishes a new ticket.
  const Body* body_ = nullptr;
  std::size_t n_ = 0;
  unsigned int csr_ = 0;
  bool coarse_ = false;                             // a parallel_parts loop: its chunks are timed
  std::vector<std::chrono::nanoseconds> chunk_time_;  // coarse loops: how long chunk c took
  std::exception_ptr error_;  // the first chunk's exception: set under mutex_, read once all have ended

  std::atomic<std::uint64_t> ticket_{0};  // see generation_of
  std::atomic<std::size_t> finished_{0};  // chunks of this generation that have ended
  std::size_t workers_ = 0;
  detail::ContentionGuard guard_;  // the caller's (loops run one at a time)
  detail::SlowWorkerGuard coarse_guard_;  // the same for parallel_parts

  std::mutex mutex_;
  std::condition_variable wake_;         // workers sleep here between loops
  std::condition_variable finished_cv_;  // the caller sleeps here for the last chunks
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
};

// One pool a process, never destroyed (its workers sleep until the process ends), and the lock by
// which loops started from several program threads take turns on it. A child made by fork() has
// none of the parent's workers, and the lock may have been held by a thread it does not have: it
// starts with a pool and a lock of its own.
// Constant-initialised (no static-initialisation guard that a fork could catch half-taken).
struct PoolAndTurn {
  Pool* pool = nullptr;
  std::mutex turn;
};
PoolAndTurn g_shared;

void forget_the_pool_in_child() {
  new (&g_shared.turn) std::mutex;  // the parent's may be held by a thread the child lacks
  g_shared.pool = nullptr;          // the parent's workers are not in the child
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

void set_threads(int n) {
  if (n < 1) throw ValueError("set_threads: the thread count must be >= 1, got " + std::to_string(n));
  g_threads = n;
  // BLAS runs inside headlab's threads (one pool): each call on one thread.
  openblas_set_num_threads(1);
}

int threads() { return g_threads; }

void set_min_parallel_work(std::size_t work) { g_min_work = work < 1 ? 1 : work; }
std::size_t min_parallel_work() { return g_min_work; }

std::size_t parallel_chunks(std::size_t n, std::size_t work_per_item) {
  const auto T = std::min<std::size_t>(static_cast<std::size_t>(g_threads.load()), kMostChunks);
  if (T <= 1 || n < 2 || t_inside_loop) return 1;
  const std::size_t w = work_per_item < 1 ? 1 : work_per_item;
  const bool worth_it = n >= (g_min_work.load() + w - 1) / w;  // n * w >= min work, without overflow
  return worth_it ? (n < T ? n : T) : 1;
}

namespace {
// parallel_for's loop of T >= 2 chunks on the pool (started on first use).
void run_on_pool(std::size_t n, std::size_t T, const Body& body, bool coarse) {
  // Two threads of the program may each start a loop: they take turns on the one pool.
  const std::lock_guard<std::mutex> turn(g_shared.turn);
  if (g_shared.pool == nullptr) {
    static bool fork_handler_set = false;  // under the turn lock
#if defined(__linux__)
    if (!fork_handler_set) pthread_atfork(nullptr, nullptr, forget_the_pool_in_child);
#endif
    fork_handler_set = true;
    g_shared.pool = new Pool;
  }
  g_shared.pool->run(n, T, body, coarse);
}
}  // namespace

void parallel_for(std::size_t n, std::size_t work_per_item,
                  const std::function<void(std::size_t begin, std::size_t end)>& body) {
  const std::size_t T = parallel_chunks(n, work_per_item);
  if (T <= 1) {
    if (n > 0) body(0, n);
    return;
  }
  run_on_pool(n, T, body, false);
}

void parallel_parts(std::size_t parts, const std::function<void(std::size_t part)>& body) {
  const Body each = [&](std::size_t begin, std::size_t end) {
    for (std::size_t p = begin; p < end; ++p) body(p);
  };
  if (parts > kMostChunks) throw ValueError("parallel_parts: " + std::to_string(parts) + " parts (at most 65535)");
  const std::size_t T = parallel_chunks(parts, min_parallel_work());  // min(parts, threads()), or 1 inside a loop
  if (T <= 1) return each(0, parts);
  run_on_pool(parts, T, each, true);  // chunk c = parts [c P / T, (c + 1) P / T): never more threads than asked for
}

namespace detail {

namespace {
std::atomic<bool> g_guard_enabled{true};
}

bool SlowWorkerGuard::run_alone() {
  if (!g_guard_enabled.load(std::memory_order_relaxed) || alone_left_ == 0) return false;
  --alone_left_;
  return true;
}

void SlowWorkerGuard::record(std::chrono::nanoseconds fastest, std::chrono::nanoseconds slowest, bool workers_helped) {
  if (!g_guard_enabled.load(std::memory_order_relaxed)) return;
  if (workers_helped && slowest * 2 <= fastest * 3) {  // every thread kept up: slowest <= 1.5 fastest
    next_alone_ = kFirstAlone;
    return;
  }
  alone_left_ = next_alone_;
  next_alone_ = std::min(next_alone_ * 2, kMostAlone);
}

void ContentionGuard::set_enabled(bool enabled) { g_guard_enabled = enabled; }

bool ContentionGuard::run_alone() {
  if (!g_guard_enabled.load(std::memory_order_relaxed)) {  // off: forget what was seen
    loops_ = absent_ = alone_left_ = 0;
    next_alone_ = kFirstAlone;
    return false;
  }
  if (alone_left_ == 0) return false;
  if (--alone_left_ == 0) next_alone_ = next_alone_ * 2 > kMostAlone ? kMostAlone : next_alone_ * 2;
  return true;
}

void ContentionGuard::record(bool workers_helped) {
  if (!g_guard_enabled.load(std::memory_order_relaxed)) return;
  if (!workers_helped) ++absent_;
  if (++loops_ < kWindow) return;
  if (absent_ >= kAbsentToYield) {
    alone_left_ = next_alone_;
  } else {
    next_alone_ = kFirstAlone;
  }
  loops_ = absent_ = 0;
}

}  // namespace detail
}  // namespace headlab
