// The optimiser and schedule flags (headlab/train/optimizer_choice.hpp): what each option builds is
// the library optimiser with those values (whose float64 steps are pinned to PyTorch in
// tests/optim), weight decay reaches matrices only, gradient accumulation is the larger batch,
// and a run with any of them resumes bit for bit.
#include <doctest/doctest.h>

#include <sstream>

#include "headlab/headlab.hpp"
#include "headlab/train/memory_estimate.hpp"
#include "headlab/train/optimizer_choice.hpp"
#include "headlab/train/trainer.hpp"
#include "test_support.hpp"
#include "tiny_train_run.hpp"

namespace test_optimizer_choice {

using namespace headlab;
using headlab::testing::TempDir;
using headlab::testing::tiny_copy_run;

namespace {

std::string why(TrainOptions o) {
  try {
    o.validate();
  } catch (const OptionError& e) {
    return e.field() + ": " + e.why();
  }
  return "valid";
}

// A small transformer whose parameters have every kind: matrices, biases, norms, embeddings.
std::unique_ptr<Transformer<float>> small_model(std::uint64_t seed, bool tied = false) {
  TransformerConfig c;
  c.tie_embeddings = tied;
  c.d_model = 8;
  c.ff_dim = 16;
  c.encoder_layers = c.decoder_layers = 1;
  c.attention.num_heads = 2;
  c.src_vocab = c.tgt_vocab = 6;
  Generator gen(seed);
  return std::make_unique<Transformer<float>>(c, gen);
}

// Gives every parameter of `model` the same made-up gradient, from `seed`.
void fill_gradients(Module<float>& model, std::uint64_t seed) {
  Generator gen(seed);
  model.zero_grad();
  Tensor<float> loss;
  for (const Tensor<float>& p : model.parameters()) {
    Array<float> w = Array<float>::from_shape(p.value().shape());
    for (float& v : w) v = static_cast<float>(gen.uniform(-1, 1));
    const Tensor<float> term = sum(p * Tensor<float>(w, false));  // d term / d p = w
    loss = loss.defined() ? loss + term : term;
  }
  loss.backward();
}

}  // namespace

TEST_CASE("optimizer options: a value the chosen optimiser or schedule does not read is refused, naming both") {
  TrainOptions o;
  CHECK(why(o) == "valid");
  o.optimizer = "rmsprop";
  CHECK(why(o) == "optimizer: 'rmsprop' is not sgd, adam or adamw");
  o = TrainOptions{};
  o.optimizer = "sgd";
  o.betas = AdamBetas{0.8, 0.99};
  CHECK(why(o) == "betas: is for --optimizer adam and adamw; this run's optimizer is sgd");
  o.betas = AdamBetas{};
  o.eps = 1e-6;
  CHECK(why(o) == "eps: is for --optimizer adam and adamw; this run's optimizer is sgd");
  o = TrainOptions{};
  o.momentum = 0.9;
  CHECK(why(o) == "momentum: is for --optimizer sgd; this run's optimizer is adam");
  o.optimizer = "sgd";
  CHECK(why(o) == "valid");
  o.momentum = 1.0;
  CHECK(why(o) == "momentum: must be in [0, 1)");
  o = TrainOptions{};
  o.lr = 1e-3;  // noam's peak comes from --lr-factor
  CHECK(why(o).find("lr: is not read by --schedule noam") == 0);
  o.schedule = "cosine";
  CHECK(why(o) == "valid");
  o.lr_factor = 2;
  CHECK(why(o) == "lr_factor: is for --schedule noam; this run's schedule is cosine, whose peak is --lr");
  o.lr_factor = TrainOptions{}.lr_factor;
  o.lr = 0;
  CHECK(why(o).find("lr: --schedule cosine needs --lr > 0") == 0);
  o.lr = 1e-3;
  o.min_lr = 1e-2;
  CHECK(why(o) == "min_lr: must be <= lr (0.001), got 0.01");
  o.min_lr = 0;
  o.warmup = o.steps;
  CHECK(why(o) == "warmup: 2000 must be below steps 2000 for --schedule cosine");
  o.warmup = 10;
  o.steps = 0;
  o.time_budget = 30;
  CHECK(why(o).find("schedule: cosine decays to --min-lr at --steps, and this run has no step count") == 0);
  o.schedule = "constant";  // needs no end
  CHECK(why(o) == "valid");
  o.min_lr = 1e-5;
  CHECK(why(o) == "min_lr: is for --schedule cosine and linear; this run's schedule is constant");
  o = TrainOptions{};
  o.decay_all = true;
  CHECK(why(o) == "decay_all: says which parameters --weight-decay reaches, and the weight decay is 0");
  o = TrainOptions{};
  o.grad_accum = 0;
  CHECK(why(o) == "grad_accum: must be a whole number from 1 to 1000000000, got '0'");
}

TEST_CASE("optimizer options: --betas reads two numbers, each at least 0 and below 1, and writes them back") {
  const OptionInfo* betas = find_option_by_flag("betas");
  REQUIRE(betas != nullptr);
  TrainOptions o;
  betas->set(o, "0.8,0.95");
  CHECK(o.betas == AdamBetas{0.8, 0.95});
  CHECK(betas->get(o) == "0.8,0.95");
  CHECK(betas->get(TrainOptions{}) == "0.9,0.98");
  CHECK_THROWS_WITH_AS(betas->set(o, "0.9"), doctest::Contains("expected two numbers BETA1,BETA2"), ValueError);
  CHECK_THROWS_WITH_AS(betas->set(o, "0.9,0.98,0.5"), doctest::Contains("expected two numbers"), ValueError);
  CHECK_THROWS_WITH_AS(betas->set(o, "0.9,1"), doctest::Contains("each beta must be in [0, 1)"), ValueError);
  CHECK_THROWS_AS(betas->set(o, "0.9,x"), ValueError);
  TrainOptions text = TrainOptions::from_text(o.to_text());
  CHECK(text.betas == AdamBetas{0.8, 0.95});
}

TEST_CASE("optimizer options: weight decay reaches matrices, not biases, norms or embeddings (minGPT's rule)") {
  auto model = small_model(3);
  std::size_t matrices = 0, others = 0;
  for (auto& named : model->named_parameters()) {  // not a structured binding: CAPTURE's lambda takes `name`
    const std::string& name = named.first;
    auto& p = named.second;
    const bool decays = takes_weight_decay(name, p);
    CAPTURE(name);
    if (name.find("embed") != std::string::npos || name.find("norm") != std::string::npos ||
        name.find("bias") != std::string::npos) {
      CHECK_FALSE(decays);
    }
    if (name.find("in_proj_weight") != std::string::npos || name.find("linear1.weight") != std::string::npos ||
        name.find("generator.weight") != std::string::npos) {
      CHECK(decays);
    }
    (decays ? matrices : others) += 1;
  }
  CHECK(matrices > 0);
  CHECK(others > 0);
}

TEST_CASE("optimizer options: tied embeddings are one parameter, in the group of their first name") {
  auto model = small_model(3, true);
  TrainOptions o;
  o.optimizer = "adamw";
  o.weight_decay = 0.1;
  TrainingOptimizer optimizer(o, *model);  // threw "parameter 1 appears more than once" before
  CHECK(optimizer.params().size() == model->parameters().size());
  CHECK(optimizer.describe().find(", not on ") != std::string::npos);
}

TEST_CASE("optimizer options: each choice steps exactly as the library optimiser with those values") {
  struct Case {
    const char* optimizer;
    double weight_decay, momentum;
    bool decay_all;
  };
  for (const Case& c : {Case{"adam", 0, 0, false}, Case{"adamw", 0.1, 0, false}, Case{"adamw", 0.1, 0, true},
                        Case{"adam", 0.01, 0, false}, Case{"sgd", 0, 0.9, false}, Case{"sgd", 0.05, 0, false}}) {
    CAPTURE(c.optimizer);
    CAPTURE(c.weight_decay);
    CAPTURE(c.decay_all);
    TrainOptions o;
    o.optimizer = c.optimizer;
    o.weight_decay = c.weight_decay;
    o.momentum = c.momentum;
    o.decay_all = c.decay_all;
    o.betas = AdamBetas{0.85, 0.97};
    if (o.optimizer == "sgd") o.betas = AdamBetas{};
    o.eps = o.optimizer == "sgd" ? TrainOptions{}.eps : 1e-7;
    REQUIRE(why(o) == "valid");
    auto ours = small_model(5), reference = small_model(5);
    TrainingOptimizer chosen(o, *ours);

    // The reference: the library optimiser, one with the decay on the matrices, one without on the rest.
    std::vector<Tensor<float>> decay, no_decay;
    for (auto& [name, p] : reference->named_parameters())
      (c.decay_all || takes_weight_decay(name, p) ? decay : no_decay).push_back(p);
    std::vector<std::unique_ptr<Optimizer<float>>> groups;
    auto make = [&](std::vector<Tensor<float>> params, double wd) -> std::unique_ptr<Optimizer<float>> {
      if (params.empty()) return nullptr;
      if (o.optimizer == "sgd") {
        SGDOptions so;
        so.momentum = o.momentum;
        so.weight_decay = wd;
        return std::make_unique<SGD<float>>(params, so);
      }
      AdamOptions ao;
      ao.beta1 = 0.85;
      ao.beta2 = 0.97;
      ao.eps = 1e-7;
      ao.weight_decay = wd;
      if (o.optimizer == "adamw") return std::make_unique<AdamW<float>>(params, ao);
      return std::make_unique<Adam<float>>(params, ao);
    };
    groups.push_back(make(decay, o.weight_decay));
    groups.push_back(make(no_decay, 0.0));
    for (std::uint64_t step = 1; step <= 3; ++step) {
      fill_gradients(*ours, 100 + step);
      fill_gradients(*reference, 100 + step);
      chosen.set_lr(1e-2 * double(step));
      chosen.step();
      for (auto& g : groups) {
        if (!g) continue;
        g->set_lr(1e-2 * double(step));
        g->step();
      }
    }
    const auto a = ours->named_parameters(), b = reference->named_parameters();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(a[i].first);
      CHECK(xt::all(xt::equal(a[i].second.value(), b[i].second.value())));  // bit for bit
    }
    if (c.weight_decay != 0 && !c.decay_all) CHECK(chosen.describe().find("not on") != std::string::npos);
    if (std::string(c.optimizer) == "adamw" && !c.decay_all) {
      CHECK(chosen.describe() == "AdamW (betas 0.85,0.97, eps 1e-07), weight decay 0.1 on " + std::to_string(decay.size()) +
                                     " matrices, not on " + std::to_string(no_decay.size()) +
                                     " biases, norms and embeddings");
    }
  }
}

TEST_CASE("optimizer options: the state of two weight-decay groups round-trips, and a stranger's name is refused") {
  TrainOptions o;
  o.optimizer = "adamw";
  o.weight_decay = 0.1;
  auto model = small_model(7), copy = small_model(7);
  TrainingOptimizer first(o, *model), second(o, *copy);
  fill_gradients(*model, 1);
  first.set_lr(1e-3);
  first.step();
  const OptimizerState<float> state = first.state();
  bool decay = false, no_decay = false;
  for (const auto& [name, value] : state) {
    decay = decay || name.rfind("decay.exp_avg.", 0) == 0;
    no_decay = no_decay || name.rfind("no_decay.exp_avg.", 0) == 0;
  }
  CHECK(decay);
  CHECK(no_decay);
  second.load_state(state);
  const OptimizerState<float> again = second.state();
  REQUIRE(again.size() == state.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    CHECK(again[i].first == state[i].first);
    CHECK(xt::all(xt::equal(again[i].second, state[i].second)));
  }
  OptimizerState<float> stranger = state;
  stranger.back().first = "exp_avg.0";
  CHECK_THROWS_WITH_AS(second.load_state(stranger), doctest::Contains("'exp_avg.0' belongs to no weight-decay group"),
                       ValueError);
}

TEST_CASE("optimizer options: --grad-accum N gives the update of one N-times-larger batch, to float rounding") {
  // SGD: its update is linear in the gradient, so the two runs' weights differ by rounding only.
  // (Adam divides by sqrt(v): a gradient that is 0 up to rounding, such as a key bias's, moves by a
  // whole learning rate in a direction the rounding picks; the losses still agree, checked below.)
  auto sgd = [](TrainOptions o) {
    o.optimizer = "sgd";
    o.schedule = "constant";
    o.lr = 0.1;
    o.warmup = 1;
    o.clip_norm = 0;  // clipping would rescale a wrongly scaled gradient back to norm 1
    return o;
  };
  TempDir a("big_batch"), b("accumulated");
  std::ostringstream log;
  TrainOptions big = sgd(tiny_copy_run(a.path, 4));
  big.dropout = 0;  // the same data in the same order; dropout would draw differently per batch
  big.batch = 8;
  TrainOptions small = sgd(tiny_copy_run(b.path, 4));
  small.dropout = 0;
  small.batch = 4;
  small.grad_accum = 2;
  const TrainResult r_big = train(big, log), r_small = train(small, log);
  REQUIRE(r_big.losses.size() == 4);
  REQUIRE(r_small.losses.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(r_small.losses[i] == doctest::Approx(r_big.losses[i]).epsilon(1e-5));
  }
  const LoadedModel wa = load_trained_model((a.path / "checkpoint.safetensors").string());
  const LoadedModel wb = load_trained_model((b.path / "checkpoint.safetensors").string());
  const auto pa = wa.model->named_parameters(), pb = wb.model->named_parameters();
  REQUIRE(pa.size() == pb.size());
  double largest = 0;
  for (std::size_t i = 0; i < pa.size(); ++i)
    largest = std::max(largest, double(xt::amax(xt::abs(pa[i].second.value() - pb[i].second.value()))()));
  CHECK(largest < 1e-5);
  // and not the update of one small batch: accumulation changed something
  TempDir c("one_small");
  TrainOptions single = small;
  single.run_dir = c.path.string();
  single.grad_accum = 1;
  CHECK(train(single, log).losses[1] != doctest::Approx(r_big.losses[1]).epsilon(1e-5));

  // With the default Adam the losses agree as well.
  TempDir e("adam_big"), f("adam_accumulated");
  TrainOptions adam_big = tiny_copy_run(e.path, 4), adam_small = tiny_copy_run(f.path, 4);
  adam_big.dropout = adam_small.dropout = 0;
  adam_big.batch = 8;
  adam_small.batch = 4;
  adam_small.grad_accum = 2;
  const TrainResult rb = train(adam_big, log), rs = train(adam_small, log);
  for (std::size_t i = 0; i < 4; ++i) CHECK(rs.losses[i] == doctest::Approx(rb.losses[i]).epsilon(1e-5));
}

TEST_CASE("optimizer options: AdamW, cosine and grad-accum resume bit for bit, and a cosine run keeps its --steps") {
  auto options = [](const std::filesystem::path& dir) {
    TrainOptions o = tiny_copy_run(dir, 8);
    o.optimizer = "adamw";
    o.weight_decay = 0.1;
    o.schedule = "cosine";
    o.lr = 3e-3;
    o.min_lr = 3e-4;
    o.grad_accum = 2;
    return o;
  };
  TempDir a("straight"), b("resumed");
  std::ostringstream log;
  const TrainResult straight = train(options(a.path), log);
  REQUIRE(straight.losses.size() == 8);
  CHECK(describe_schedule(options(a.path)) == "schedule cosine (peak 0.003 after 4 warm-up steps, down to 0.0003 at step 8)");
  CHECK(describe_schedule(tiny_copy_run(a.path, 8)) == "schedule noam (factor 0.5, warm-up 4: peak 0.0625 at step 4)");
  request_stop();  // as SIGINT does: the run stops after its first step, with a checkpoint
  const TrainResult stopped = train(options(b.path), log);
  REQUIRE(stopped.interrupted);
  TrainOptions longer = options(b.path);
  longer.resume = true;
  longer.steps = 9;  // the schedule ends at --steps: a resume may not move the end
  CHECK_THROWS_WITH_AS(train(longer, log), doctest::Contains("steps 8 there, 9 here"), ValueError);
  TrainOptions rest = options(b.path);
  rest.resume = true;
  const TrainResult resumed = train(rest, log);
  REQUIRE(resumed.losses.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(resumed.losses[i] == straight.losses[i]);  // exact
  }
}

TEST_CASE("memory estimate: SGD keeps no moments (momentum one buffer), Adam two") {
  TrainOptions adam, sgd, momentum;
  sgd.optimizer = momentum.optimizer = "sgd";
  momentum.momentum = 0.9;
  auto item = [](const TrainOptions& o, const std::string& what) {
    for (const auto& i : estimate_training_memory(o).items)
      if (i.what == what) return i.bytes;
    return 0.0;
  };
  const double params = item(adam, "parameters");
  CHECK(item(adam, "Adam moments") == 2 * params);
  CHECK(item(sgd, "Adam moments") == 0);
  CHECK(item(sgd, "SGD momentum") == 0);
  CHECK(item(momentum, "SGD momentum") == params);
  CHECK(item(adam, "checkpoint save and resume") == 6 * params);
  CHECK(item(sgd, "checkpoint save and resume") == 2 * params);
  CHECK(item(momentum, "checkpoint save and resume") == 4 * params);
  CHECK(estimate_training_memory(sgd).total() < estimate_training_memory(adam).total());
}
}  // namespace test_optimizer_choice
