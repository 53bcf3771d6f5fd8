// Anomaly detection (the first op that makes a NaN or an infinity) and stopping a
// training run on request (what SIGINT/SIGTERM do in the CLI).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headlab/core/anomaly.hpp"
#include "headlab/core/data_parallel.hpp"
#include "headlab/headlab.hpp"
#include "headlab/train/trainer.hpp"
#include "read_bytes.hpp"
#include "tiny_train_run.hpp"

namespace test_anomaly_and_interrupt {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::tiny_copy_run;

namespace {
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const NumericalError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("anomaly detection names the forward op that first makes a NaN, with its input shapes") {
  const auto x = from_data<double>({-1.0, 4.0, 9.0}, {3}, true);
  // Without detection sqrt(-1) is a silent NaN that spreads.
  CHECK(std::isnan(sqrt(x).value()(0)));
  AnomalyGuard on;
  const std::string msg = message_of([&] { (void)sum(exp(sqrt(x))); });
  CHECK(msg.find("forward of 'sqrt'") != std::string::npos);
  CHECK(msg.find("NaN") != std::string::npos);
  CHECK(msg.find("element 0") != std::string::npos);
  CHECK(msg.find("[3]") != std::string::npos);
  // log(0) makes -inf from finite inputs: caught too.
  CHECK(message_of([&] { (void)log(from_data<double>({0.0, 1.0}, {2})); }).find("'log' produced -inf") !=
        std::string::npos);
}

TEST_CASE("anomaly detection lets masks through: -inf placed by masked_fill and carried along is not an anomaly") {
  AnomalyGuard on;
  const auto scores = from_data<double>({1.0, 2.0, 3.0, 4.0}, {2, 2}, true);
  MaskArray mask{{false, true}, {false, false}};
  const auto masked = masked_fill(scores, mask, -std::numeric_limits<double>::infinity());
  const auto weights = softmax(masked, -1);  // -inf in, finite out
  CHECK_NOTHROW(sum(weights * weights).backward());
  CHECK(std::isfinite(scores.grad()(0, 1)));
}

TEST_CASE("anomaly detection names the backward op whose gradient is not finite") {
  // d sqrt(x)/dx = 1 / (2 sqrt(x)) is +inf at x = 0: the forward is finite, the backward is not.
  const auto x = from_data<double>({0.0, 4.0}, {2}, true);
  std::string msg;
  {
    AnomalyGuard on;
    const auto y = sum(sqrt(x));
    msg = message_of([&] { y.backward(); });
  }
  CHECK(msg.find("backward of 'sqrt'") != std::string::npos);
  CHECK(msg.find("+inf") != std::string::npos);
  CHECK(msg.find("[2]") != std::string::npos);
  CHECK(!anomaly_detection_enabled());  // the guard restored the setting
}

TEST_CASE("anomaly detection sees a parameter's gradient inside a data-parallel part, and the parts' sum") {
  // y = x w with x = 3e38 in every row and w = 1e-30: the forward is finite (3e8 a row), and so is
  // dL/dx = w, but dL/dw = sum over rows of x = 3e38 a row overflows float from two rows on: the
  // first non-finite number is in the parameter's gradient, which a part keeps in its
  // LeafGradients, not in w itself.
  const auto x = from_data<float>({3e38f, 3e38f, 3e38f, 3e38f}, {4, 1}, false);
  const auto w = from_data<float>({1e-30f}, {1, 1}, true);
  const auto rows_loss = [&](std::size_t begin, std::size_t end, Generator*) {
    return PartLoss{sum(matmul(narrow(x, 0, begin, end - begin), w)), end - begin};
  };
  std::string in_scope, in_parts, in_sum;
  {
    AnomalyGuard on;
    LeafGradients<float> sink({w});
    {
      const LeafGradients<float>::Scope scope(sink);
      const auto y = sum(matmul(x, w));
      in_scope = message_of([&] { y.backward(); });
    }
    // two parts of two rows: each part's backward overflows
    in_parts = message_of([&] { (void)data_parallel_backward({w}, 4, 2, rows_loss, nullptr); });
    CHECK_FALSE(w.has_grad());  // nothing reached the parameter
    // four parts of one row: each finite (3e38), their sum is not
    in_sum = message_of([&] { (void)data_parallel_backward({w}, 4, 4, rows_loss, nullptr); });
  }
  for (const std::string& msg : {in_scope, in_parts}) {
    CHECK(msg.find("backward of 'matmul'") != std::string::npos);
    CHECK(msg.find("+inf in the gradient of its input 1") != std::string::npos);
  }
  CHECK(in_sum.find("data-parallel sum of the parts' gradients produced +inf in the gradient of parameter 0") !=
        std::string::npos);
}

TEST_CASE("a stop request ends training after the current step, saves the checkpoint, and resume is exact") {
  const fs::path base = fs::temp_directory_path() / "headlab_test_interrupt";
  fs::remove_all(base);
  std::ostringstream log;
  const TrainResult straight = train(tiny_copy_run(base / "straight", 6), log);

  request_stop();  // as the SIGINT handler does; this run stops after its first step
  const TrainResult stopped = train(tiny_copy_run(base / "stopped", 6), log);
  CHECK(stopped.interrupted);
  CHECK(stopped.steps_done == 1);
  CHECK(!stop_requested());  // the request was consumed
  CHECK(fs::exists(base / "stopped" / "checkpoint.safetensors"));

  TrainOptions rest = tiny_copy_run(base / "stopped", 6);
  rest.resume = true;
  const TrainResult resumed = train(rest, log);
  CHECK(!resumed.interrupted);
  REQUIRE(resumed.losses.size() == straight.losses.size());
  for (std::size_t i = 0; i < straight.losses.size(); ++i) CHECK(resumed.losses[i] == straight.losses[i]);
  fs::remove_all(base);
}

TEST_CASE("a stop request inside a step of --grad-accum batches drops that step, and resume is exact") {
  // Before: a stop was taken after a whole step; one of 1e9 batches ignored SIGINT for minutes.
  const fs::path base = fs::temp_directory_path() / "headlab_test_interrupt_accum";
  fs::remove_all(base);
  std::ostringstream log;
  TrainOptions o = tiny_copy_run(base / "straight", 4);
  o.grad_accum = 3;
  o.dropout = 0.1;  // the dropout generator must be put back too
  const TrainResult straight = train(o, log);

  request_stop();  // taken after the first of step 1's three batches
  o.run_dir = (base / "stopped").string();
  const TrainResult stopped = train(o, log);
  CHECK(stopped.interrupted);
  CHECK(stopped.steps_done == 0);
  CHECK(!stop_requested());
  CHECK(log.str().find("interrupted during step 1 (its partial gradient dropped)") != std::string::npos);
  o.resume = true;
  const TrainResult resumed = train(o, log);
  REQUIRE(resumed.losses.size() == straight.losses.size());
  for (std::size_t i = 0; i < straight.losses.size(); ++i) CHECK(resumed.losses[i] == straight.losses[i]);
  fs::remove_all(base);
}

TEST_CASE("a non-finite loss stops training with a NumericalError that names the step and keeps the checkpoint") {
  const fs::path dir = fs::temp_directory_path() / "headlab_test_nan_loss";
  fs::remove_all(dir);
  std::ostringstream log;
  TrainOptions o = tiny_copy_run(dir, 20);
  o.lr_factor = 1e30;  // Adam's updates at this rate blow the weights up within a few steps
  o.clip_norm = 0;
  o.save_every = 1;    // a checkpoint after every good step
  std::string msg;
  try {
    train(o, log);
  } catch (const NumericalError& e) {
    msg = e.what();
  }
  REQUIRE(msg.find("the loss became") != std::string::npos);
  CHECK(msg.find("--detect-anomaly") != std::string::npos);
  // The checkpoint on disk is the last good step's: the step that failed is the next one.
  const LoadedModel last_good = load_trained_model((dir / "checkpoint.safetensors").string());
  CHECK(last_good.step >= 1);
  CHECK(msg.find("at step " + std::to_string(last_good.step + 1) + ";") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("--stop-on-divergence: a non-finite loss ends the run as a result, with summary.json and a finite checkpoint") {
  const fs::path dir = fs::temp_directory_path() / "headlab_test_diverged";
  fs::remove_all(dir);
  std::ostringstream log;
  TrainOptions o = tiny_copy_run(dir, 20);
  o.lr_factor = 1e30;  // as above: the weights blow up within a few steps
  o.clip_norm = 0;
  o.save_every = 1;
  o.stop_on_divergence = true;
  TrainResult r;
  REQUIRE_NOTHROW(r = train(o, log));
  CHECK(r.diverged);
  CHECK(!r.interrupted);
  CHECK(r.diverged_step == r.steps_done + 1);  // the steps before it are the run
  CHECK(r.steps_done < 20);
  CHECK(r.losses.size() == r.steps_done);
  CHECK(std::isnan(r.valid_loss));
  // summary.json: diverged 1 (a number, for the sweep), the step, a null validation loss.
  const nlohmann::json summary = nlohmann::json::parse(headlab::testing::read_bytes(dir / "summary.json"));
  CHECK(summary.at("diverged") == 1);
  CHECK(summary.at("diverged_step") == r.diverged_step);
  CHECK(summary.at("valid_loss").is_null());
  CHECK(summary.at("interrupted") == false);
  CHECK(summary.contains("loss_spikes"));
  // The checkpoint is the last finite step's, with finite weights only.
  const LoadedModel last = load_trained_model((dir / "checkpoint.safetensors").string());
  CHECK(last.step == r.steps_done);
  for (const Tensor<float>& p : last.model->parameters())
    for (const float v : p.value()) REQUIRE(std::isfinite(v));
  fs::remove_all(dir);
}

TEST_CASE("--stop-on-divergence is not part of the run: a healthy run is unchanged and says diverged 0") {
  const fs::path dir = fs::temp_directory_path() / "headlab_test_not_diverged";
  fs::remove_all(dir);
  std::ostringstream log;
  const TrainResult plain = train(tiny_copy_run(dir / "plain", 6), log);
  TrainOptions o = tiny_copy_run(dir / "flag", 6);
  o.stop_on_divergence = true;
  const TrainResult flagged = train(o, log);
  CHECK(!flagged.diverged);
  CHECK(flagged.losses == plain.losses);
  const nlohmann::json summary = nlohmann::json::parse(headlab::testing::read_bytes(dir / "flag" / "summary.json"));
  CHECK(summary.at("diverged") == 0);
  CHECK(!summary.contains("diverged_step"));
  CHECK(o.to_text() == tiny_copy_run(dir / "flag", 6).to_text());  // not stored: not in the checkpoint's options
  fs::remove_all(dir);
}
}  // namespace test_anomaly_and_interrupt
