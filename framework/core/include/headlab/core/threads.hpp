// headlab/core/threads.hpp: how many threads headlab computes with, and the one loop that shares
// work among them.
//
// One pool does everything: headlab's loops (row kernels, elementwise ops, the optimiser, the
// attention kernels) and BLAS. OpenBLAS is kept at one thread and its calls are split among
// headlab's threads (a gemm by blocks of rows or columns, the per-head products by head), so the
// two never compete for the cores. The pool is headlab's own (core/threads.cpp): threads() - 1
// workers and the calling thread, which take a loop's chunks in turn; a waiting thread spins a
// moment and then sleeps, and when the workers keep missing loops (another process holds their
// cores) the caller runs the chunks alone for a while (ContentionGuard below).
//
// Determinism: a loop of n items on T threads is always cut into the chunks [c n / T, (c + 1) n / T),
// c = 0 .. T - 1, whichever thread runs each, and every kernel combines partial results in a fixed
// order, so the same input and the same thread count give the same bits. Different thread counts may differ in the
// last bits (a gemm split in two blocks rounds like two gemms).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

namespace headlab {

// The cores this process may run on (its CPU affinity), at least 1.
int available_cores();

// Sets the number of threads every kernel uses (n >= 1; ValueError otherwise). Starts at 1.
void set_threads(int n);
int threads();

// Work, in rough multiply-adds, below which a loop stays on the calling thread: waking the pool
// costs about a microsecond, which a small op does not repay. Tests set it to 1 so that every
// parallel path runs on tiny shapes.
void set_min_parallel_work(std::size_t work);
std::size_t min_parallel_work();

// Runs body(begin, end) on T contiguous chunks covering [0, n) (chunk c is [c n / T, (c + 1) n / T),
// on whichever thread takes it), and returns when all are done. T = threads() (at most 65535),
// fewer when n < T, and 1
// when n * work_per_item < min_parallel_work() or when called from inside another parallel_for
// (the inner loop then runs whole on its thread). The chunks must write disjoint memory. The first
// exception a chunk throws is rethrown here once all chunks have finished.
void parallel_for(std::size_t n, std::size_t work_per_item,
                  const std::function<void(std::size_t begin, std::size_t end)>& body);

// Runs body(p) for p = 0 .. parts - 1 (at most 65535; ValueError otherwise), each part on whichever
// thread takes it, for parts that each take milliseconds (a data-parallel step's parts): the workers
// are woken unless the SlowWorkerGuard below says otherwise, and a part no worker takes runs on the
// caller. One thread, or inside another loop: all on the calling thread, in order.
void parallel_parts(std::size_t parts, const std::function<void(std::size_t part)>& body);
// The number of chunks parallel_for(n, work_per_item, ...) would use right now.
std::size_t parallel_chunks(std::size_t n, std::size_t work_per_item);

namespace detail {

// When to stop waking the workers. A loop in which the caller ran every chunk itself found no
// worker ready: on a machine where another process holds the other cores that is most loops, and
// waking workers only slows the caller. Every kWindow loops the guard looks back: kAbsentToYield or
// more such loops and the next loops run on the caller alone, first kFirstAlone of them, twice as
// many each time the workers are still missing after, at most kMostAlone; a window with fewer puts
// the count back to kFirstAlone. Running alone computes the same chunks in order: the same bits.
class ContentionGuard {
 public:
  static constexpr std::size_t kWindow = 32, kAbsentToYield = 8, kFirstAlone = 256, kMostAlone = 4096;

  // Whether the next loop should run on the caller alone (counts that loop down).
  bool run_alone();
  // After a loop that did wake the workers: whether any of its chunks ran on a worker.
  void record(bool workers_helped);

  // Off (tests only): every loop wakes the workers, so that the pool itself is exercised.
  static void set_enabled(bool enabled);

 private:
  std::size_t loops_ = 0, absent_ = 0, alone_left_ = 0, next_alone_ = kFirstAlone;
};

// The same for parallel_parts, whose parts each take milliseconds and cannot be taken over once a
// thread started one. A loop whose slowest part took more than 1.5 times its fastest (similar
// parts: one thread shares its core with another process), or in which no worker came, makes the
// next kFirstAlone loops run on the caller alone (idle, the scheduler then gives it a free core),
// twice as many each time the threads are still uneven after, at most kMostAlone. The same parts in
// order: the same bits.
class SlowWorkerGuard {
 public:
  static constexpr std::size_t kFirstAlone = 4, kMostAlone = 256;
  // Whether the next loop should run on the caller alone (counts that loop down).
  bool run_alone();
  // After a loop that did wake the workers: its fastest and slowest part, and whether any part ran
  // on a worker.
  void record(std::chrono::nanoseconds fastest, std::chrono::nanoseconds slowest, bool workers_helped);

 private:
  std::size_t alone_left_ = 0, next_alone_ = kFirstAlone;
};

}  // namespace detail

}  // namespace headlab
