// headlab/core/threads.hpp: parallel_for's chunks, errors and nesting, and that the kernels give
// the same numbers for the same thread count (and, where they are row by row, for any count).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "headlab/headlab.hpp"
#include "headlab/core/shape_utils.hpp"
#include "test_support.hpp"

namespace test_threads {

using namespace headlab;
using headlab::testing::ThreadScope;

namespace {

template <typename T>
bool same_bits(const Array<T>& a, const Array<T>& b) {
  return detail::shape_of(a) == detail::shape_of(b) && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

TEST_CASE("threads: parallel_for covers every item once, in fixed contiguous chunks") {
  const ThreadScope scope(3, 1);
  for (std::size_t n : {0, 1, 2, 3, 7, 100}) {
    CAPTURE(n);
    std::vector<int> hits(n, 0);
    std::mutex lock;
    std::vector<std::pair<std::size_t, std::size_t>> chunks;
    parallel_for(n, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) ++hits[i];
      const std::lock_guard<std::mutex> guard(lock);
      chunks.emplace_back(b, e);
    });
    CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
    std::sort(chunks.begin(), chunks.end());
    const std::size_t T = std::min<std::size_t>(3, n);
    CHECK(chunks.size() == (n == 0 ? 0 : n == 1 ? 1 : T));
    for (std::size_t t = 0; t < chunks.size() && n > 1; ++t) {
      CHECK(chunks[t].first == n * t / T);  // chunk t = [t n / T, (t + 1) n / T)
      CHECK(chunks[t].second == n * (t + 1) / T);
    }
  }
}

TEST_CASE("threads: small loops, nested loops and one thread stay on the calling thread") {
  const ThreadScope scope(2, 1000);
  CHECK(parallel_chunks(10, 10) == 1);    // 100 < 1000: not worth waking the pool
  CHECK(parallel_chunks(10, 100) == 2);   // 1000
  CHECK(parallel_chunks(1, 1 << 20) == 1);
  std::atomic<int> inner_chunks{0};
  parallel_for(2, 1000, [&](std::size_t, std::size_t) {
    parallel_for(100, 1000, [&](std::size_t b, std::size_t e) {
      CHECK(b == 0);
      CHECK(e == 100);
      ++inner_chunks;
    });
  });
  CHECK(inner_chunks == 2);  // each outer chunk ran its inner loop whole
  set_threads(1);
  CHECK(parallel_chunks(1000, 1000) == 1);
}

TEST_CASE("threads: an exception in a chunk reaches the caller after all chunks end, and bad counts are refused") {
  const ThreadScope scope(2, 1);
  std::atomic<int> finished{0};
  CHECK_THROWS_WITH_AS(parallel_for(4, 1,
                                    [&](std::size_t b, std::size_t) {
                                      ++finished;
                                      if (b == 0) throw ValueError("chunk 0 failed");
                                    }),
                       "chunk 0 failed", ValueError);
  CHECK(finished == 2);
  CHECK_THROWS_WITH_AS(set_threads(0), "set_threads: the thread count must be >= 1, got 0", ValueError);
  CHECK(available_cores() >= 1);
}

TEST_CASE("threads: the contention guard runs loops alone after a window of absent workers, longer while they stay absent") {
  using Guard = detail::ContentionGuard;
  Guard guard;
  auto window = [&](std::size_t absent) {  // one window of loops that woke the workers
    for (std::size_t i = 0; i < Guard::kWindow; ++i) {
      CHECK_FALSE(guard.run_alone());
      guard.record(i >= absent);
    }
  };
  auto alone_loops = [&] {
    std::size_t n = 0;
    while (guard.run_alone()) ++n;
    return n;
  };
  window(Guard::kAbsentToYield - 1);  // below the bar: the workers stay in use
  CHECK(alone_loops() == 0);
  window(Guard::kAbsentToYield);
  CHECK(alone_loops() == Guard::kFirstAlone);
  window(Guard::kWindow);  // still absent: twice as long, up to the most
  CHECK(alone_loops() == 2 * Guard::kFirstAlone);
  for (int i = 0; i < 8; ++i) {
    window(Guard::kWindow);
    CHECK(alone_loops() <= Guard::kMostAlone);
  }
  window(Guard::kWindow);
  CHECK(alone_loops() == Guard::kMostAlone);
  window(0);  // back: the next absence starts again from the first length
  CHECK(alone_loops() == 0);
  window(Guard::kWindow);
  CHECK(alone_loops() == Guard::kFirstAlone);
}

TEST_CASE("threads: the slow-worker guard runs parts alone after uneven or unhelped loops, longer while they stay so") {
  using Guard = detail::SlowWorkerGuard;
  using ms = std::chrono::milliseconds;
  Guard guard;
  auto alone_loops = [&] {
    std::size_t n = 0;
    while (guard.run_alone()) ++n;
    return n;
  };
  guard.record(ms(10), ms(15), true);  // 1.5x: even enough
  CHECK(alone_loops() == 0);
  guard.record(ms(10), ms(16), true);  // a thread fell behind
  CHECK(alone_loops() == Guard::kFirstAlone);
  guard.record(ms(10), ms(10), false);  // no worker came: the same
  CHECK(alone_loops() == 2 * Guard::kFirstAlone);
  for (int i = 0; i < 10; ++i) guard.record(ms(1), ms(9), true);
  CHECK(alone_loops() == Guard::kMostAlone);
  guard.record(ms(10), ms(11), true);  // even again: the next time starts from the first length
  CHECK(alone_loops() == 0);
  guard.record(ms(10), ms(30), true);
  CHECK(alone_loops() == Guard::kFirstAlone);
}

TEST_CASE("threads: parallel_parts runs every part once, more parts than threads too, and rethrows a part's error") {
  const ThreadScope scope(2, 1);
  for (const std::size_t parts : {std::size_t(1), std::size_t(2), std::size_t(5)}) {
    std::vector<std::atomic<int>> runs(parts);
    parallel_parts(parts, [&](std::size_t p) { ++runs[p]; });
    for (std::size_t p = 0; p < parts; ++p) CHECK(runs[p].load() == 1);
  }
  std::vector<int> inner[2];  // inside a loop's chunk: every part on that chunk's thread, in order
  parallel_for(2, 1, [&](std::size_t begin, std::size_t) {
    parallel_parts(3, [&](std::size_t p) { inner[begin].push_back(int(p)); });
  });
  CHECK(inner[0] == std::vector<int>{0, 1, 2});
  CHECK(inner[1] == std::vector<int>{0, 1, 2});
  CHECK_THROWS_WITH(parallel_parts(2, [](std::size_t p) { if (p == 1) throw std::runtime_error("part 1"); }), "part 1");
  CHECK_THROWS_AS(parallel_parts(70000, [](std::size_t) {}), ValueError);
}

namespace {
struct GuardOff {  // every loop goes through the pool's workers, contended or not
  GuardOff() { detail::ContentionGuard::set_enabled(false); }
  ~GuardOff() { detail::ContentionGuard::set_enabled(true); }
};

// Whether a worker takes a chunk: in a loop of two chunks, each waits for the other to start.
bool a_worker_takes_a_chunk() {
  testing::Rendezvous both_chunks;
  parallel_for(2, 1, [&](std::size_t, std::size_t) { both_chunks.arrive_and_wait(); });
  return both_chunks.met();
}
}  // namespace

TEST_CASE("threads: loops of 2 to 4 chunks in a row each run every chunk once, whichever thread is late") {
  const ThreadScope scope(4, 1);
  const GuardOff guard_off;
  for (std::size_t round = 0; round < 20000; ++round) {
    const std::size_t n = 2 + (round * 7) % 3;  // the chunk count changes from loop to loop
    std::vector<std::atomic<int>> runs(n);
    parallel_for(n, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) runs[i].fetch_add(1);
    });
    for (std::size_t i = 0; i < n; ++i) REQUIRE(runs[i].load() == 1);
  }
  CHECK(a_worker_takes_a_chunk());  // the loops above went through live workers
}

TEST_CASE("threads: loops started from two program threads at once each run whole, with the same chunks") {
  const ThreadScope scope(2, 1);
  const GuardOff guard_off;
  auto loop_sums = [](std::size_t offset) {
    std::vector<std::size_t> sums;
    for (std::size_t round = 0; round < 2000; ++round) {
      std::vector<std::size_t> items(37 + round % 5, 0);
      parallel_for(items.size(), 1, [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) items[i] = offset + i * (b + 1);  // depends on the chunk
      });
      std::size_t sum = 0;
      for (std::size_t v : items) sum += v;
      sums.push_back(sum);
    }
    return sums;
  };
  const auto alone_a = loop_sums(1), alone_b = loop_sums(1000);
  std::vector<std::size_t> together_a, together_b;
  std::thread other([&] { together_b = loop_sums(1000); });
  together_a = loop_sums(1);
  other.join();
  CHECK(together_a == alone_a);
  CHECK(together_b == alone_b);
  CHECK(a_worker_takes_a_chunk());
}

TEST_CASE("threads: a child forked while another thread runs a loop gets a pool of its own") {
  const ThreadScope scope(2, 1);
  const GuardOff guard_off;
  std::atomic<bool> loop_started{false};
  std::thread busy([&] {  // holds the pool's turn for about 300 ms
    parallel_for(2, 1, [&](std::size_t, std::size_t) {
      loop_started = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    });
  });
  while (!loop_started) std::this_thread::yield();
  const pid_t child = ::fork();
  if (child == 0) {
    ::alarm(10);  // a child stuck on the parent's pool dies of SIGALRM
    std::atomic<int> items{0};
    parallel_for(4, 1, [&](std::size_t b, std::size_t e) { items += int(e - b); });
    ::_exit(items == 4 ? 0 : 1);
  }
  busy.join();
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("threads: row kernels and the optimiser give the same bits at 1 and 2 threads, and gemm at 2 stays within rounding") {
  Generator gen(7);
  const TensorF x = uniform<float>({6, 4, 9, 37}, -3.0f, 3.0f, gen, true);
  const TensorF w = uniform<float>({37}, 0.5f, 1.5f, gen, true);
  const TensorF a = uniform<float>({64, 48}, -1.0f, 1.0f, gen, true);
  const TensorF b = uniform<float>({48, 80}, -1.0f, 1.0f, gen, true);
  IndexArray targets = IndexArray::from_shape({216});
  for (std::size_t i = 0; i < targets.size(); ++i) targets.data()[i] = std::int64_t(i % 37);
  MaskArray pos = MaskArray::from_shape({9, 37});
  for (std::size_t i = 0; i < 9; ++i)
    for (std::size_t j = 0; j < 37; ++j) pos(i, j) = j > i + 20;
  struct Run {
    std::vector<Array<float>> values;
  };
  auto run = [&](int n) {
    const ThreadScope scope(n, 1);
    Run r;
    for (const TensorF* t : {&x, &w, &a, &b}) t->zero_grad();
    const TensorF sm = masked_softmax(x, ScoreMask{&pos, nullptr, nullptr});
    const TensorF ln = layer_norm(x, w, TensorF());
    const TensorF ce = cross_entropy(reshape(x, {-1, 37}), targets);
    const TensorF loss = sum(sm * ln) + ce + sum(softmax(x, 2)) + sum(log_softmax(x, -1));
    loss.backward();
    r.values = {sm.value(), ln.value(), ce.value(), x.grad(), w.grad()};
    // Adam on a copy of the parameters: elementwise, any split gives the same bits.
    TensorF p(x.value(), true);
    p.node()->grad = x.grad();
    p.node()->has_grad = true;
    AdamOptions ao;
    ao.weight_decay = 0.01;
    Adam<float> adam({p}, ao);
    adam.step();
    r.values.push_back(p.value());
    r.values.push_back(matmul(a, b).value());
    return r;
  };
  const Run one = run(1), two = run(2), two_again = run(2);
  for (std::size_t i = 0; i + 1 < one.values.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(one.values[i], two.values[i]));
  }
  const Array<float>& c1 = one.values.back();
  const Array<float>& c2 = two.values.back();
  CHECK(same_bits(c2, two_again.values.back()));  // the same count: the same bits
  double worst = 0;
  for (std::size_t i = 0; i < c1.size(); ++i) worst = std::max(worst, double(std::abs(c1.data()[i] - c2.data()[i])));
  CHECK(worst <= 1e-5);
}
}  // namespace test_threads
