// headlab/core/data_parallel.hpp: a batch's parts on their own threads give the uncut batch's
// gradient to rounding, the same bits for the same parts whichever thread ran them, and no
// gradient at all when a part's loss is not finite or a part throws.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "headlab/core/data_parallel.hpp"
#include "headlab/headlab.hpp"
#include "headlab/ops/ops.hpp"
#include "test_support.hpp"

namespace test_data_parallel {

using namespace headlab;
using headlab::testing::ThreadScope;

namespace {

// A two-layer model on rows of x (R, 4): logits = tanh(x W1) W2, cross-entropy against labels
// whose last row is ignored (-100), so the parts' token counts differ from their row counts.
struct TinyModel {
  Tensor<float> w1, w2;
  Tensor<float> x;
  IndexArray labels;
  explicit TinyModel(std::size_t rows) {
    Generator gen(7);
    w1 = uniform<float>({4, 6}, -1.0f, 1.0f, gen, true);
    w2 = uniform<float>({6, 3}, -1.0f, 1.0f, gen, true);
    x = uniform<float>({rows, 4}, -2.0f, 2.0f, gen);
    labels = IndexArray::from_shape({rows});
    for (std::size_t r = 0; r < rows; ++r) labels(r) = static_cast<std::int64_t>(gen.below(3));
    labels(rows - 1) = -100;
  }
  std::vector<Tensor<float>> params() const { return {w1, w2}; }
  PartLoss loss(std::size_t begin, std::size_t end) const {
    const Tensor<float> rows = narrow(x, 0, begin, end - begin);
    IndexArray part = IndexArray::from_shape({end - begin});
    std::size_t tokens = 0;
    for (std::size_t r = begin; r < end; ++r) tokens += (part(r - begin) = labels(r)) != -100;
    return {cross_entropy(matmul(tanh(matmul(rows, w1)), w2), part), tokens};
  }
  void zero_grad() const {
    w1.zero_grad();
    w2.zero_grad();
  }
};

bool same_bits(const Array<float>& a, const Array<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The parts' summed gradients, made the mean's (divided by the tokens), of each parameter.
std::vector<Array<float>> data_parallel_grads(const TinyModel& m, std::size_t parts) {
  m.zero_grad();
  const DataParallelResult r = data_parallel_backward(
      m.params(), m.x.shape()[0], parts, [&](std::size_t b, std::size_t e, Generator*) { return m.loss(b, e); }, nullptr);
  REQUIRE(r.finite);
  std::vector<Array<float>> grads;
  for (const Tensor<float>& p : m.params()) grads.push_back(p.grad() / static_cast<float>(r.tokens));
  return grads;
}

}  // namespace

TEST_CASE("data parallel: while a LeafGradients scope lives, the listed leaves' gradients go there, others stay") {
  Generator gen(3);
  const Tensor<float> a = uniform<float>({2, 3}, -1.0f, 1.0f, gen, true), b = uniform<float>({2, 3}, -1.0f, 1.0f, gen, true);
  LeafGradients<float> kept({a});
  {
    const LeafGradients<float>::Scope scope(kept);
    CHECK(LeafGradients<float>::current() == &kept);
    sum(mul(a, b)).backward();
  }
  CHECK(LeafGradients<float>::current() == nullptr);
  CHECK_FALSE(a.has_grad());  // kept apart
  REQUIRE(b.has_grad());      // not listed: its own gradient, d(sum a b)/db = a
  CHECK(same_bits(b.grad(), a.value()));
  kept.move_into_leaves();
  REQUIRE(a.has_grad());
  CHECK(same_bits(a.grad(), b.value()));
  kept.move_into_leaves();  // emptied: nothing added twice
  CHECK(same_bits(a.grad(), b.value()));
}

TEST_CASE("data parallel: a backward that adds in place (narrow's pieces) adds into the part's copy, not the leaf's grad") {
  Generator gen(5);
  const Tensor<float> a = uniform<float>({4, 3}, -1.0f, 1.0f, gen, true);
  sum(a).backward();  // a already has a gradient (an earlier accumulated batch): all ones
  const Array<float> before = a.grad();
  LeafGradients<float> kept({a});
  {
    const LeafGradients<float>::Scope scope(kept);
    sum(add(narrow(a, 0, 0, 2), narrow(a, 0, 0, 2))).backward();  // two pieces of the same rows
  }
  CHECK(same_bits(a.grad(), before));  // untouched while the part ran
  kept.move_into_leaves();
  for (std::size_t i = 0; i < 12; ++i) CHECK(a.grad().data()[i] == (i < 6 ? 3.0f : 1.0f));
}

TEST_CASE("data parallel: parts on two threads give the uncut batch's mean gradient to rounding, the same bits every time") {
  const TinyModel m(7);  // parts [0, 3) and [3, 7): 3 and 3 tokens (row 6 ignored)
  m.zero_grad();
  m.loss(0, 7).loss.backward();  // the uncut batch, one graph
  const Array<float> full1 = m.w1.grad(), full2 = m.w2.grad();

  std::vector<Array<float>> two_threads, again, one_thread;
  {
    const ThreadScope scope(2, 1);
    CHECK(data_parallel_parts(8) == 2);  // at least 4 rows a part
    CHECK(data_parallel_parts(7) == 1);
    CHECK(data_parallel_parts(1) == 1);
    two_threads = data_parallel_grads(m, 2);
    again = data_parallel_grads(m, 2);
  }
  {
    const ThreadScope scope(1, 1);
    CHECK(data_parallel_parts(7) == 1);
    one_thread = data_parallel_grads(m, 2);  // the same two parts, one after the other on the caller
  }
  for (std::size_t i = 0; i < 2; ++i) {
    const Array<float>& full = i == 0 ? full1 : full2;
    for (std::size_t k = 0; k < full.size(); ++k) CHECK(two_threads[i].data()[k] == doctest::Approx(full.data()[k]).epsilon(1e-5));
    CHECK(same_bits(two_threads[i], again[i]));
    CHECK(same_bits(two_threads[i], one_thread[i]));  // which thread ran a part changes no bit
  }
}

TEST_CASE("data parallel: a part whose loss is not finite, or that throws, adds no gradient, and bad part counts are refused") {
  const TinyModel m(6);
  const ThreadScope scope(2, 1);
  m.zero_grad();
  const DataParallelResult r = data_parallel_backward(
      m.params(), 6, 2,
      [&](std::size_t b, std::size_t e, Generator*) {
        PartLoss part = m.loss(b, e);
        if (b > 0) part.loss = mul_scalar(part.loss, std::numeric_limits<float>::infinity());
        return part;
      },
      nullptr);
  CHECK_FALSE(r.finite);
  CHECK_FALSE(m.w1.has_grad());
  CHECK_FALSE(m.w2.has_grad());

  const PartLossFn throws = [&](std::size_t b, std::size_t e, Generator*) -> PartLoss {
    if (b == 0) throw std::runtime_error("part 0 failed");
    return m.loss(b, e);
  };
  CHECK_THROWS_WITH(data_parallel_backward(m.params(), 6, 2, throws, nullptr), "part 0 failed");
  CHECK_FALSE(m.w1.has_grad());
  CHECK_FALSE(m.w2.has_grad());
  CHECK_THROWS_AS(data_parallel_backward(m.params(), 6, 7, throws, nullptr), ValueError);
  CHECK_THROWS_AS(data_parallel_backward(m.params(), 6, 0, throws, nullptr), ValueError);
}

TEST_CASE("data parallel: each part draws its dropout from its own generator, seeded in part order") {
  const ThreadScope scope(2, 1);
  const TinyModel m(4);
  std::vector<std::uint64_t> first(2), second(2);
  for (std::vector<std::uint64_t>* seen : {&first, &second}) {
    Generator dropout(11);
    data_parallel_backward(
        m.params(), 4, 2,
        [&](std::size_t b, std::size_t e, Generator* g) {
          REQUIRE(g != nullptr);
          (*seen)[b / 2] = g->next_u64();
          return m.loss(b, e);
        },
        &dropout);
  }
  Generator expected(11);
  const std::uint64_t seed0 = expected.next_u64(), seed1 = expected.next_u64();
  CHECK(first[0] == Generator(seed0).next_u64());
  CHECK(first[1] == Generator(seed1).next_u64());
  CHECK(first == second);
}

TEST_CASE("data parallel: the parts of a step run at the same time on two threads, and still sum to the same bits") {
  const ThreadScope scope(2, 1);
  detail::ContentionGuard::set_enabled(false);  // the slow-worker guard too: every step wakes the workers
  const TinyModel m(8);
  const std::vector<Array<float>> alone = data_parallel_grads(m, 2);
  testing::Rendezvous both_parts;  // each part waits for the other to start
  m.zero_grad();
  const DataParallelResult r = data_parallel_backward(
      m.params(), 8, 2,
      [&](std::size_t b, std::size_t e, Generator*) {
        both_parts.arrive_and_wait();
        return m.loss(b, e);
      },
      nullptr);
  detail::ContentionGuard::set_enabled(true);
  CHECK(both_parts.met());
  REQUIRE(r.finite);
  CHECK(same_bits(m.w1.grad() / static_cast<float>(r.tokens), alone[0]));
  CHECK(same_bits(m.w2.grad() / static_cast<float>(r.tokens), alone[1]));
}
}  // namespace test_data_parallel
