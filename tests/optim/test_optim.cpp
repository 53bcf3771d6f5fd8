// Optimisers, gradient clipping and learning-rate schedules.
// (Over 500 lines on purpose: the PyTorch parity cases of every optimiser and schedule share one
// fixture reader and one case loop; split by optimiser they would repeat both.)
//
// Parity: tests/fixtures/optim_float64.json (written by
// tests/fixtures/make_optim_fixtures.py with torch 1.13, float64) holds, per case,
// two initial parameters, the gradient given before each of 5 steps and the
// parameters after each step. headlab replays them and must agree within
//   |received - expected| <= 1e-12 * max(1, |expected|).
// The schedules are checked against their formulas evaluated here
// independently; state export/import by continuing two optimisers bit for bit;
// and Adam end to end by minimising a quadratic built from headlab ops.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "headlab/headlab.hpp"
#include "headlab/optim/optim.hpp"

namespace test_optim {

#ifndef HEADLAB_FIXTURE_DIR
#error "HEADLAB_FIXTURE_DIR must be defined (tests/CMakeLists.txt)"
#endif

namespace {

using headlab::Adam;
using headlab::AdamOptions;
using headlab::AdamW;
using headlab::Array;
using headlab::Generator;
using headlab::Optimizer;
using headlab::OptimizerState;
using headlab::SGD;
using headlab::SGDOptions;
using headlab::Shape;
using headlab::Tensor;
using headlab::TensorD;
using headlab::TensorF;
using json = nlohmann::json;

constexpr double kTol = 1e-12;
const std::string kFixturePath = std::string(HEADLAB_FIXTURE_DIR) + "/optim_float64.json";

// ---- The fixture file -----------------------------------------------------

struct Fixtures {
  json doc;
  std::string error;  // empty when doc is usable
};

const Fixtures& fixtures() {
  static const Fixtures loaded = [] {
    Fixtures f;
    std::ifstream in(kFixturePath);
    if (!in) {
      f.error = "cannot open fixture file " + kFixturePath +
                " (regenerate it with /usr/bin/python3 tests/fixtures/make_optim_fixtures.py)";
      return f;
    }
    try {
      f.doc = json::parse(in);
    } catch (const std::exception& e) {
      f.error = "cannot parse fixture file " + kFixturePath + ": " + e.what();
      return f;
    }
    for (const char* key : {"optimizers", "clip"}) {
      if (!f.doc.contains(key) || !f.doc[key].is_array() || f.doc[key].empty()) {
        f.error = "fixture file " + kFixturePath + " has no \"" + key + "\" array";
      }
    }
    return f;
  }();
  return loaded;
}

Array<double> array_of(const json& j) {
  Shape s;
  for (const auto& d : j.at("shape")) s.push_back(d.get<std::size_t>());
  Array<double> a = Array<double>::from_shape(s);
  const json& data = j.at("data");
  if (data.size() != a.size()) throw std::runtime_error("fixture: data length does not match its shape");
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = data[i].get<double>();
  return a;
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// Compares element by element; reports up to 3 mismatches. True when all agree.
bool compare(const std::string& where, const Array<double>& received, const Array<double>& expected) {
  const bool same_shape = received.shape() == expected.shape();
  CHECK_MESSAGE(same_shape, where, ": shape differs from PyTorch's");
  if (!same_shape) return false;
  int bad = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double r = received.data()[i];
    const double e = expected.data()[i];
    if (std::fabs(r - e) <= kTol * std::max(1.0, std::fabs(e))) continue;  // false for NaN
    if (++bad <= 3) {
      FAIL_CHECK(where, " [flat index ", i, "] expected ", fmt(e), " (PyTorch), received ", fmt(r),
                 " (headlab), |diff| = ", fmt(std::fabs(r - e)));
    }
  }
  return bad == 0;
}

// Gives p the gradient g, as `p.grad = g` in PyTorch (no backward pass needed).
template <typename T>
void set_grad(const Tensor<T>& p, Array<T> g) {
  p.zero_grad();
  p.node()->grad = std::move(g);
  p.node()->has_grad = true;
}

std::unique_ptr<Optimizer<double>> make_optimizer(const json& c, const std::vector<TensorD>& params) {
  const std::string kind = c.at("optimizer").get<std::string>();
  const json& o = c.at("options");
  if (kind == "sgd") {
    SGDOptions so;
    so.lr = o.at("lr").get<double>();
    so.momentum = o.at("momentum").get<double>();
    so.dampening = o.at("dampening").get<double>();
    so.weight_decay = o.at("weight_decay").get<double>();
    so.nesterov = o.at("nesterov").get<bool>();
    return std::make_unique<SGD<double>>(params, so);
  }
  AdamOptions ao;
  ao.lr = o.at("lr").get<double>();
  ao.beta1 = o.at("beta1").get<double>();
  ao.beta2 = o.at("beta2").get<double>();
  ao.eps = o.at("eps").get<double>();
  ao.weight_decay = o.at("weight_decay").get<double>();
  if (kind == "adam") return std::make_unique<Adam<double>>(params, ao);
  if (kind == "adamw") return std::make_unique<AdamW<double>>(params, ao);
  throw std::runtime_error("fixture: unknown optimizer \"" + kind + "\"");
}

void run_trajectory(const json& c) {
  const std::string name = c.at("name").get<std::string>();
  INFO("fixture case ", name);
  std::vector<TensorD> params;
  for (const auto& p : c.at("initial")) params.emplace_back(array_of(p), /*requires_grad=*/true);
  const auto opt = make_optimizer(c, params);
  const json& grads = c.at("grads");
  const json& after = c.at("params");
  REQUIRE(grads.size() == after.size());
  REQUIRE(!grads.empty());
  for (std::size_t step = 0; step < grads.size(); ++step) {
    opt->zero_grad();
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (!grads[step][i].is_null()) set_grad(params[i], array_of(grads[step][i]));
    }
    opt->step();
    bool ok = true;
    for (std::size_t i = 0; i < params.size(); ++i) {
      ok = compare(name + ": step " + std::to_string(step + 1) + ", parameter " + std::to_string(i),
                   params[i].value(), array_of(after[step][i])) && ok;
    }
    if (!ok) return;  // later steps would only repeat the divergence
  }
  CHECK(opt->steps() == grads.size());
}

// Runs every trajectory of the given optimizer kind; fails when there is none.
void run_kind(const std::string& kind) {
  const Fixtures& f = fixtures();
  REQUIRE_MESSAGE(f.error.empty(), f.error);
  int count = 0;
  for (const auto& c : f.doc.at("optimizers")) {
    if (c.at("optimizer").get<std::string>() != kind) continue;
    ++count;
    run_trajectory(c);
  }
  CHECK_MESSAGE(count > 0, "no \"", kind, "\" case in ", kFixturePath);
}

// ---- Helpers for the self-contained tests ---------------------------------

template <typename T>
Array<T> random_array(const Shape& shape, Generator& gen) {
  Array<T> a = Array<T>::from_shape(shape);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<T>(gen.normal());
  return a;
}

template <typename T>
std::vector<Tensor<T>> random_params(Generator& gen) {
  return {Tensor<T>(random_array<T>({3, 4}, gen), true), Tensor<T>(random_array<T>({5}, gen), true),
          Tensor<T>(random_array<T>({2, 1, 3}, gen), true)};
}

template <typename T>
std::vector<Tensor<T>> copies(const std::vector<Tensor<T>>& params) {
  std::vector<Tensor<T>> out;
  for (const auto& p : params) out.emplace_back(p.value(), true);
  return out;
}

// One step with gradients drawn from gen; parameter `skip` (if < size) gets none.
template <typename T>
void step_with(Optimizer<T>& opt, Generator& gen, std::size_t skip = static_cast<std::size_t>(-1)) {
  opt.zero_grad();
  for (std::size_t i = 0; i < opt.params().size(); ++i) {
    Array<T> g = random_array<T>(opt.params()[i].shape(), gen);
    if (i != skip) set_grad(opt.params()[i], std::move(g));
  }
  opt.step();
}

template <typename T>
bool bit_equal(const Array<T>& a, const Array<T>& b) {
  return a.shape() == b.shape() && std::equal(a.data(), a.data() + a.size(), b.data());
}

template <typename T>
bool same_state(const OptimizerState<T>& a, const OptimizerState<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !bit_equal(a[i].second, b[i].second)) return false;
  }
  return true;
}

template <typename T>
bool same_params(const std::vector<Tensor<T>>& a, const std::vector<Tensor<T>>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!bit_equal(a[i].value(), b[i].value())) return false;
  }
  return true;
}

// Runs A for 3 steps (parameter 1 skipped at the second, so the state has
// parameters at different counts), copies its parameters and state into a
// fresh B, then runs both for 4 more steps on the same gradients: they must
// agree bit for bit. A third optimiser C that got the parameters but not the
// state must diverge, which shows the state is what makes B match.
template <typename T, typename Make>
void check_round_trip(Make make) {
  Generator init(7);
  std::vector<Tensor<T>> pa = random_params<T>(init);
  auto a = make(pa);
  Generator grads_a(11);
  step_with(*a, grads_a);
  step_with(*a, grads_a, /*skip=*/1);
  step_with(*a, grads_a);

  const OptimizerState<T> saved = a->state();
  std::vector<Tensor<T>> pb = copies(pa);
  std::vector<Tensor<T>> pc = copies(pa);
  auto b = make(pb);
  auto c = make(pc);
  b->load_state(saved);
  CHECK(b->steps() == a->steps());
  CHECK_MESSAGE(same_state(b->state(), saved), "state() after load_state differs from what was loaded");

  Generator grads_b(99), grads_c(99), grads_a2(99);
  for (int k = 0; k < 4; ++k) {
    step_with(*a, grads_a2);
    step_with(*b, grads_b);
    step_with(*c, grads_c);
  }
  CHECK_MESSAGE(same_params(pa, pb), a->name(), ": the optimiser restored from state() does not continue identically");
  CHECK_MESSAGE(same_state(a->state(), b->state()), a->name(), ": states differ after continuing");
  CHECK_MESSAGE(!same_params(pa, pc), a->name(), ": an optimiser without the state did not diverge (test is blind)");
}

AdamOptions adam_options(double weight_decay = 0.0) {
  AdamOptions o;
  o.lr = 0.01;
  o.beta1 = 0.9;
  o.beta2 = 0.98;
  o.eps = 1e-9;
  o.weight_decay = weight_decay;
  return o;
}

template <typename E, typename F>
void check_throws_naming(F f, const std::string& needle) {
  bool thrown = false;
  try {
    f();
  } catch (const E& e) {
    thrown = true;
    const std::string what = e.what();
    CHECK_MESSAGE(what.find(needle) != std::string::npos, "message \"", what, "\" does not mention \"", needle, "\"");
  }
  CHECK_MESSAGE(thrown, "expected an exception mentioning \"", needle, "\"");
}

}  // namespace

// ---- PyTorch parity -------------------------------------------------------

TEST_CASE("optim: fixture file is present and every case is runnable") {
  const Fixtures& f = fixtures();
  REQUIRE_MESSAGE(f.error.empty(), f.error);
  std::set<std::string> names;
  for (const auto& c : f.doc.at("optimizers")) {
    const std::string name = c.at("name").get<std::string>();
    CHECK_MESSAGE(names.insert(name).second, "duplicate case ", name);
    const std::string kind = c.at("optimizer").get<std::string>();
    CHECK_MESSAGE((kind == "sgd" || kind == "adam" || kind == "adamw"), "case ", name, ": unknown optimizer ", kind);
    CHECK_MESSAGE(c.at("grads").size() == 5, "case ", name, " does not have 5 steps");
  }
}

TEST_CASE("optim: SGD matches torch.optim.SGD") { run_kind("sgd"); }
TEST_CASE("optim: Adam matches torch.optim.Adam") { run_kind("adam"); }
TEST_CASE("optim: AdamW matches torch.optim.AdamW") { run_kind("adamw"); }

TEST_CASE("optim: clip_grad_norm matches torch.nn.utils.clip_grad_norm_") {
  const Fixtures& f = fixtures();
  REQUIRE_MESSAGE(f.error.empty(), f.error);
  for (const auto& c : f.doc.at("clip")) {
    const std::string name = c.at("name").get<std::string>();
    INFO("fixture case ", name);
    std::vector<TensorD> params;
    for (const auto& g : c.at("grads")) {
      const Array<double> ga = array_of(g);
      Shape s(ga.shape().begin(), ga.shape().end());
      params.push_back(headlab::zeros<double>(s, true));
      set_grad(params.back(), ga);
    }
    const double norm = headlab::clip_grad_norm(params, c.at("max_norm").get<double>());
    const double expected = c.at("norm").get<double>();
    CHECK_MESSAGE(std::fabs(norm - expected) <= kTol * std::max(1.0, expected), "norm ", fmt(norm), " vs PyTorch ",
                  fmt(expected));
    for (std::size_t i = 0; i < params.size(); ++i) {
      compare(name + ": clipped grad " + std::to_string(i), params[i].grad(), array_of(c.at("clipped")[i]));
    }
  }
}

TEST_CASE("optim: clip_grad_norm reports a non-finite norm and leaves the grads alone") {
  TensorD a = headlab::zeros<double>({3}, true);
  TensorD b = headlab::zeros<double>({2}, true);
  TensorD none = headlab::zeros<double>({4}, true);  // no grad: ignored
  Array<double> ga = {1.0, std::numeric_limits<double>::infinity(), 2.0};
  Array<double> gb = {3.0, 4.0};
  set_grad(a, ga);
  set_grad(b, gb);
  const double norm = headlab::clip_grad_norm<double>({a, b, none}, 1.0);
  CHECK(std::isinf(norm));
  CHECK(bit_equal(a.grad(), ga));
  CHECK(bit_equal(b.grad(), gb));
  CHECK_FALSE(none.has_grad());

  // Finite: the norm over both tensors together is 5 (3-4-5), scaled to max_norm.
  set_grad(a, Array<double>{0.0, 0.0, 0.0});
  const double n2 = headlab::clip_grad_norm<double>({a, b, none}, 1.0);
  CHECK(n2 == doctest::Approx(5.0).epsilon(1e-15));
  CHECK(b.grad()(0) == doctest::Approx(3.0 / (5.0 + 1e-6)).epsilon(1e-15));
  CHECK(headlab::clip_grad_norm<double>({none}, 1.0) == 0.0);
  CHECK_THROWS_AS(headlab::clip_grad_norm<double>({a}, -1.0), headlab::ValueError);
}

// ---- Optimizer mechanics --------------------------------------------------

TEST_CASE("optim: step skips parameters without a gradient, and zero_grad clears them") {
  Generator gen(3);
  std::vector<TensorD> params = random_params<double>(gen);
  const Array<double> before1 = params[1].value();
  const Array<double> before0 = params[0].value();
  Adam<double> opt(params, adam_options());
  opt.zero_grad();
  set_grad(params[0], random_array<double>({3, 4}, gen));
  opt.step();
  CHECK(opt.steps() == 1);
  CHECK_FALSE(bit_equal(params[0].value(), before0));
  CHECK(bit_equal(params[1].value(), before1));
  // The state lists only the parameter that was updated.
  std::set<std::string> names;
  for (const auto& [n, a] : opt.state()) names.insert(n);
  CHECK(names == std::set<std::string>{"step", "step.0", "exp_avg.0", "exp_avg_sq.0"});
  opt.zero_grad();
  for (const auto& p : params) CHECK_FALSE(p.has_grad());
  opt.step();  // nothing has a grad: nothing moves, but the call is counted
  CHECK(opt.steps() == 2);
  CHECK(bit_equal(params[1].value(), before1));
}

TEST_CASE("optim: the update records no graph and keeps parameters as leaves") {
  Generator gen(4);
  std::vector<TensorD> params = random_params<double>(gen);
  SGDOptions o;
  o.lr = 0.1;
  o.momentum = 0.9;
  SGD<double> opt(params, o);
  step_with(opt, gen);
  for (const auto& p : params) {
    CHECK(p.node()->is_leaf());
    CHECK(p.requires_grad());
  }
  CHECK(headlab::grad_enabled());  // the guard inside step() was released
}

TEST_CASE("optim: constructors and set_lr reject bad arguments") {
  Generator gen(5);
  std::vector<TensorD> params = random_params<double>(gen);
  CHECK_THROWS_AS(Adam<double>({}, adam_options()), headlab::ValueError);
  CHECK_THROWS_AS(Adam<double>({params[0], params[0]}, adam_options()), headlab::ValueError);
  TensorD non_leaf = params[0] * 2.0;
  CHECK_THROWS_AS(Adam<double>({non_leaf}, adam_options()), headlab::ValueError);
  AdamOptions bad = adam_options();
  bad.beta1 = 1.0;
  check_throws_naming<headlab::ValueError>([&] { Adam<double> a(params, bad); }, "beta1");
  bad = adam_options();
  bad.lr = -1;
  check_throws_naming<headlab::ValueError>([&] { AdamW<double> a(params, bad); }, "lr");
  SGDOptions s;
  s.nesterov = true;  // with momentum 0
  check_throws_naming<headlab::ValueError>([&] { SGD<double> o(params, s); }, "nesterov");
  Adam<double> ok(params, adam_options());
  CHECK_THROWS_AS(ok.set_lr(std::nan("")), headlab::ValueError);
  ok.set_lr(0.5);
  CHECK(ok.lr() == 0.5);
  CHECK(ok.name() == "Adam");
  CHECK(AdamW<double>(params, adam_options()).name() == "AdamW");
}

// ---- State export / import ------------------------------------------------

TEST_CASE("optim: state round trip continues bit-exactly (SGD, Adam, AdamW, in double and float)") {
  SGDOptions so;
  so.lr = 0.05;
  so.momentum = 0.9;
  so.weight_decay = 0.01;
  SUBCASE("SGD") {
    check_round_trip<double>([&](const std::vector<TensorD>& p) { return std::make_unique<SGD<double>>(p, so); });
  }
  SUBCASE("SGD nesterov float") {
    SGDOptions n = so;
    n.nesterov = true;
    check_round_trip<float>([&](const std::vector<TensorF>& p) { return std::make_unique<SGD<float>>(p, n); });
  }
  SUBCASE("Adam") {
    check_round_trip<double>(
        [](const std::vector<TensorD>& p) { return std::make_unique<Adam<double>>(p, adam_options(0.1)); });
  }
  SUBCASE("Adam float") {
    check_round_trip<float>(
        [](const std::vector<TensorF>& p) { return std::make_unique<Adam<float>>(p, adam_options()); });
  }
  SUBCASE("AdamW") {
    check_round_trip<double>(
        [](const std::vector<TensorD>& p) { return std::make_unique<AdamW<double>>(p, adam_options(0.1)); });
  }
}

TEST_CASE("optim: state names, shapes and counts") {
  Generator gen(8);
  std::vector<TensorD> params = random_params<double>(gen);
  Adam<double> opt(params, adam_options());
  step_with(opt, gen, /*skip=*/2);
  step_with(opt, gen);
  const OptimizerState<double> s = opt.state();
  std::vector<std::string> names;
  for (const auto& [n, a] : s) names.push_back(n);
  const std::vector<std::string> expected = {"step",   "step.0",    "exp_avg.0",    "exp_avg_sq.0",
                                             "step.1", "exp_avg.1", "exp_avg_sq.1", "step.2",
                                             "exp_avg.2", "exp_avg_sq.2"};
  CHECK(names == expected);
  auto find = [&](const std::string& n) {
    for (const auto& [k, a] : s) {
      if (k == n) return a;
    }
    FAIL("no entry " << n);
    return Array<double>();
  };
  CHECK(find("step")() == 2.0);
  CHECK(find("step.0")() == 2.0);
  CHECK(find("step.2")() == 1.0);  // skipped once
  CHECK(find("step").dimension() == 0);
  CHECK(find("exp_avg.0").shape() == params[0].value().shape());
  CHECK(find("exp_avg_sq.2").shape() == params[2].value().shape());

  SGDOptions plain;  // momentum 0: no buffers, only counts
  plain.lr = 0.1;
  SGD<double> sgd(copies(params), plain);
  step_with(sgd, gen);
  std::vector<std::string> sgd_names;
  for (const auto& [n, a] : sgd.state()) sgd_names.push_back(n);
  CHECK(sgd_names == std::vector<std::string>{"step", "step.0", "step.1", "step.2"});
}

TEST_CASE("optim: load_state rejects a wrong name, shape or count and changes nothing") {
  Generator gen(9);
  std::vector<TensorD> params = random_params<double>(gen);
  Adam<double> source(params, adam_options());
  step_with(source, gen);
  const OptimizerState<double> good = source.state();

  std::vector<TensorD> target_params = copies(params);
  Adam<double> target(target_params, adam_options());
  step_with(target, gen);
  const OptimizerState<double> target_before = target.state();

  auto edited = [&](auto edit) {
    OptimizerState<double> s = good;
    edit(s);
    return s;
  };
  auto entry = [](OptimizerState<double>& s, const std::string& name) -> std::pair<std::string, Array<double>>& {
    for (auto& e : s) {
      if (e.first == name) return e;
    }
    throw std::runtime_error("test: no entry " + name);
  };

  // A buffer of the wrong shape.
  check_throws_naming<headlab::ShapeError>(
      [&] { target.load_state(edited([&](auto& s) { entry(s, "exp_avg.0").second = xt::zeros<double>({4, 3}); })); },
      "exp_avg.0");
  // An unknown buffer name, and an index past the last parameter.
  check_throws_naming<headlab::ValueError>(
      [&] { target.load_state(edited([&](auto& s) { entry(s, "exp_avg_sq.1").first = "momentum.1"; })); },
      "momentum.1");
  check_throws_naming<headlab::ValueError>(
      [&] { target.load_state(edited([&](auto& s) { entry(s, "exp_avg.2").first = "exp_avg.3"; })); }, "exp_avg.3");
  // A missing entry: the global count, or one buffer of a parameter that has the others.
  check_throws_naming<headlab::ValueError>(
      [&] { target.load_state(edited([&](auto& s) { s.erase(s.begin()); })); }, "'step'");
  check_throws_naming<headlab::ValueError>(
      [&] {
        target.load_state(edited([&](auto& s) {
          s.erase(std::find_if(s.begin(), s.end(), [](const auto& e) { return e.first == "exp_avg_sq.1"; }));
        }));
      },
      "exp_avg_sq.1");
  // A repeated entry.
  check_throws_naming<headlab::ValueError>(
      [&] {
        target.load_state(edited([&](auto& s) {
          const auto copy = s[1];
          s.push_back(copy);
        }));
      },
      "step.0");
  // Counts must be non-negative integers in a 0-d array.
  check_throws_naming<headlab::ValueError>(
      [&] { target.load_state(edited([&](auto& s) { entry(s, "step.0").second() = 1.5; })); }, "step.0");
  check_throws_naming<headlab::ShapeError>(
      [&] { target.load_state(edited([&](auto& s) { entry(s, "step").second = xt::ones<double>({1}); })); }, "step");
  // A momentum-SGD state does not load into Adam.
  SGDOptions so;
  so.momentum = 0.9;
  SGD<double> sgd(copies(params), so);
  step_with(sgd, gen);
  check_throws_naming<headlab::ValueError>([&] { target.load_state(sgd.state()); }, "momentum.0");

  CHECK_MESSAGE(same_state(target.state(), target_before), "a rejected load_state changed the optimiser");
  target.load_state(good);
  CHECK(same_state(target.state(), good));
}

// ---- Training end to end --------------------------------------------------

TEST_CASE("optim: Adam minimises a quadratic built from headlab ops") {
  // loss(x) = sum_i a_i (x_i - c_i)^2 with a_i in [0.5, 5]: minimum 0 at x = c.
  Generator gen(21);
  const std::size_t n = 16;
  TensorF x(Array<float>(random_array<float>({n}, gen) * 3.0f), true);
  TensorF c(random_array<float>({n}, gen), false);
  Array<float> a_values = Array<float>::from_shape({n});
  for (std::size_t i = 0; i < n; ++i) a_values(i) = static_cast<float>(gen.uniform(0.5, 5.0));
  TensorF a(a_values, false);
  auto loss_of = [&] {
    TensorF d = x - c;
    return headlab::sum(a * d * d);
  };

  AdamOptions o = adam_options();
  Adam<float> opt({x}, o);
  headlab::WarmupCosine schedule(0.1, 20, 500, 0.0);
  const float initial = loss_of().item();
  float last = initial;
  for (std::size_t k = 0; k < 500; ++k) {
    opt.zero_grad();
    TensorF loss = loss_of();
    last = loss.item();
    loss.backward();
    opt.set_lr(schedule.lr(opt.steps() + 1));
    opt.step();
  }
  const float final_loss = loss_of().item();
  INFO("initial loss ", initial, ", final loss ", final_loss);
  CHECK(initial > 1.0f);
  CHECK(final_loss * 100.0f < initial);
  CHECK(final_loss <= last * 1.01f);
  CHECK(opt.steps() == 500);
}

// ---- Schedules --------------------------------------------------------------

TEST_CASE("optim: Noam schedule follows its formula and peaks at warmup") {
  const std::size_t d_model = 512, warmup = 4000;
  const double factor = 2.0;
  headlab::NoamSchedule noam(d_model, warmup, factor);
  // The formula, written differently from the implementation (1/sqrt, not pow).
  auto formula = [&](double s) {
    const double w = static_cast<double>(warmup);
    return factor / std::sqrt(static_cast<double>(d_model)) * std::min(1.0 / std::sqrt(s), s / (w * std::sqrt(w)));
  };
  for (std::size_t s : {1u, 2u, 100u, 3999u, 4000u, 4001u, 10000u, 1000000u}) {
    CHECK_MESSAGE(noam.lr(s) == doctest::Approx(formula(static_cast<double>(s))).epsilon(1e-13), "step ", s);
  }
  // Linear rise: lr(2) = 2 lr(1); decay as 1/sqrt: lr(4 w) = lr(w) / 2.
  CHECK(noam.lr(2) == doctest::Approx(2 * noam.lr(1)).epsilon(1e-13));
  CHECK(noam.lr(4 * warmup) == doctest::Approx(noam.lr(warmup) / 2).epsilon(1e-13));
  const double peak = noam.lr(warmup);
  CHECK(peak == doctest::Approx(factor / std::sqrt(static_cast<double>(d_model * warmup))).epsilon(1e-13));
  for (std::size_t s = 1; s <= 3 * warmup; s += 37) CHECK(noam.lr(s) <= peak);
  CHECK(noam.lr(warmup - 1) < peak);
  CHECK(noam.lr(warmup + 1) < peak);

  check_throws_naming<headlab::ValueError>([] { headlab::NoamSchedule(512, 0); }, "warmup");
  check_throws_naming<headlab::ValueError>([] { headlab::NoamSchedule(0, 10); }, "d_model");
  check_throws_naming<headlab::ValueError>([] { headlab::NoamSchedule(512, 10, -1.0); }, "factor");
  CHECK_THROWS_AS(noam.lr(0), headlab::ValueError);
}

TEST_CASE("optim: warmup-linear and warmup-constant follow their formulas") {
  const double base = 2e-3, min_lr = 2e-4;
  const std::size_t warmup = 10, total = 110;
  headlab::WarmupLinear linear(base, warmup, total, min_lr);
  CHECK(linear.lr(1) == doctest::Approx(base / warmup).epsilon(1e-15));
  CHECK(linear.lr(warmup) == doctest::Approx(base).epsilon(1e-15));
  CHECK(linear.lr(60) == doctest::Approx((base + min_lr) / 2).epsilon(1e-13));  // halfway down the line
  CHECK(linear.lr(35) == doctest::Approx(base - (base - min_lr) / 4).epsilon(1e-13));
  CHECK(linear.lr(total) == min_lr);
  CHECK(linear.lr(10 * total) == min_lr);
  for (std::size_t s = warmup + 1; s < total; ++s)  // equal steps down: a straight line
    CHECK(linear.lr(s) - linear.lr(s + 1) == doctest::Approx((base - min_lr) / double(total - warmup)).epsilon(1e-9));
  check_throws_naming<headlab::ValueError>([] { headlab::WarmupLinear(1.0, 10, 10); }, "total");
  check_throws_naming<headlab::ValueError>([] { headlab::WarmupLinear(1.0, 1, 10, 2.0); }, "min_lr");
  CHECK_THROWS_AS(linear.lr(0), headlab::ValueError);

  headlab::WarmupConstant constant(0.5, 4);
  CHECK(constant.lr(1) == 0.125);
  CHECK(constant.lr(2) == 0.25);
  CHECK(constant.lr(4) == 0.5);
  CHECK(constant.lr(1000) == 0.5);
  CHECK(headlab::WarmupConstant(0.5, 0).lr(1) == 0.5);
  check_throws_naming<headlab::ValueError>([] { headlab::WarmupConstant(-1.0, 4); }, "base_lr");
}

TEST_CASE("optim: warmup-cosine endpoints, midpoint and monotonicity") {
  const double base = 3e-4, min_lr = 1e-5;
  const std::size_t warmup = 100, total = 1000;
  headlab::WarmupCosine sched(base, warmup, total, min_lr);
  CHECK(sched.lr(warmup) == doctest::Approx(base).epsilon(1e-15));
  CHECK(sched.lr(total) == doctest::Approx(min_lr).epsilon(1e-15));
  CHECK(sched.lr(1) == doctest::Approx(base / warmup).epsilon(1e-15));
  CHECK(sched.lr(5 * total) == min_lr);
  // Halfway through the decay the cosine is 0: lr is the mean of base and min.
  CHECK(sched.lr((warmup + total) / 2) == doctest::Approx((base + min_lr) / 2).epsilon(1e-13));
  // A quarter of the way: cos(pi/4) = sqrt(2)/2.
  const std::size_t quarter = warmup + (total - warmup) / 4;
  CHECK(sched.lr(quarter) ==
        doctest::Approx(min_lr + (base - min_lr) * (1 + std::sqrt(2.0) / 2) / 2).epsilon(1e-13));
  for (std::size_t s = 1; s < warmup; ++s) CHECK(sched.lr(s) < sched.lr(s + 1));
  for (std::size_t s = warmup; s < total; ++s) CHECK(sched.lr(s) >= sched.lr(s + 1));
  for (std::size_t s = 1; s <= total + 10; ++s) {
    CHECK(sched.lr(s) <= base);
    CHECK(sched.lr(s) >= std::min(min_lr, base / warmup));
  }

  headlab::WarmupCosine no_warmup(1.0, 0, 10, 0.0);  // starts already decaying
  CHECK(no_warmup.lr(1) == doctest::Approx(0.5 * (1 + std::cos(std::acos(-1.0) / 10))).epsilon(1e-15));
  check_throws_naming<headlab::ValueError>([] { headlab::WarmupCosine(1.0, 10, 10); }, "total");
  check_throws_naming<headlab::ValueError>([] { headlab::WarmupCosine(1.0, 1, 10, 2.0); }, "min_lr");
  CHECK_THROWS_AS(sched.lr(0), headlab::ValueError);

  headlab::ConstantSchedule constant(0.25);
  CHECK(constant.lr(1) == 0.25);
  CHECK(constant.lr(123456) == 0.25);
  CHECK_THROWS_AS(headlab::ConstantSchedule(-1.0), headlab::ValueError);
}
}  // namespace test_optim
