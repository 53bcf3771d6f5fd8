// tiny_train_run.hpp: the tiny copy-task run (a few steps, a second each) the training tests share.
#pragma once

#include <cstddef>
#include <filesystem>
#include <sstream>

#include <vector>

#include <doctest/doctest.h>

#include "headlab/core/threads.hpp"
#include "headlab/train/trainer.hpp"
#include "test_support.hpp"

namespace headlab::testing {

// d_model 16, 2 heads, ff 32, one layer, vocab 7, length 5, batch 4, `steps` steps into `dir`,
// no evaluation before the end, no early stop, no progress output. Dropout 0.1 exercises the
// dropout generator across a resume.
inline TrainOptions tiny_copy_run(const std::filesystem::path& dir, std::size_t steps) {
  TrainOptions o;
  o.d_model = 16;
  o.heads = 2;
  o.ff_dim = 32;
  o.layers = 1;
  o.vocab = 7;
  o.length = 5;
  o.batch = 4;
  o.dropout = 0.1;
  o.steps = steps;
  o.warmup = 4;
  o.eval_every = 1000;
  o.eval_sequences = 8;
  o.stop_at_perfect = false;
  o.progress = "none";
  o.run_dir = dir.string();
  return o;
}

// The smallest run: d_model 4, one head, ff 4, one layer, vocabulary 4, length 3, one step of
// batch 2, evaluated, trained into `dir` (428 parameters: small enough to take apart in every
// test). Returns its options.
inline TrainOptions smallest_copy_run_trained(const std::filesystem::path& dir) {
  TrainOptions o;
  o.vocab = 4;
  o.length = 3;
  o.d_model = 4;
  o.heads = 1;
  o.ff_dim = 4;
  o.layers = 1;
  o.steps = 1;
  o.batch = 2;
  o.eval_every = 1;
  o.eval_sequences = 2;
  o.progress = "none";
  o.run_dir = dir.string();
  std::ostringstream log;
  train(o, log);
  return o;
}

// Trains `o` (a batch of at least 8 rows) at 1 and at 2 threads (where the loop cuts each batch into one part per thread:
// headlab/core/data_parallel.hpp) and checks the data-parallel step: the same losses to float
// rounding, and not the same bits everywhere (the cut took effect: no op is split among threads
// here, so nothing else could change a bit). Returns the 2-thread losses.
inline std::vector<double> check_two_threads_match_one(const TrainOptions& o) {
  std::ostringstream log;
  std::vector<double> one, two;
  const std::size_t no_op_split = std::size_t(1) << 40;
  {
    const ThreadScope scope(1, no_op_split);
    one = train(o, log).losses;
  }
  {
    const ThreadScope scope(2, no_op_split);
    detail::ContentionGuard::set_enabled(false);  // and the slow-worker guard: parts on both threads
    two = train(o, log).losses;
    detail::ContentionGuard::set_enabled(true);
  }
  REQUIRE(one.size() == o.steps);
  REQUIRE(two.size() == o.steps);
  bool any_differs = false;
  for (std::size_t i = 0; i < one.size(); ++i) {
    CAPTURE(i);
    CHECK(two[i] == doctest::Approx(one[i]).epsilon(1e-4));
    any_differs = any_differs || two[i] != one[i];
  }
  CHECK(any_differs);
  return two;
}

}  // namespace headlab::testing
