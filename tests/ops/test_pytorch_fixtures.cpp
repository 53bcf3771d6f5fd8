// Replays the PyTorch reference cases of tests/fixtures/ops_float64.json
// (written by tests/fixtures/make_op_fixtures.py with torch 1.13, float64) through
// headlab and compares outputs and input gradients element by element:
//   |received - expected| <= 1e-12 + 1e-10 * |expected|.
// Each case records inputs, non-differentiable args, the output, an upstream
// gradient G and d sum(output * G) / d input for every input. There is one
// TEST_CASE per op family, named "pytorch fixture: <family>". A missing or
// unreadable fixture file fails every one of them.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "headlab/headlab.hpp"

namespace test_pytorch_fixtures {

#ifndef HEADLAB_FIXTURE_DIR
#error "HEADLAB_FIXTURE_DIR must be defined (tests/CMakeLists.txt)"
#endif

namespace {

using headlab::Array;
using headlab::Axes;
using headlab::IndexArray;
using headlab::MaskArray;
using headlab::Shape;
using headlab::TensorD;
using json = nlohmann::json;

constexpr double kAbsTol = 1e-12;
constexpr double kRelTol = 1e-10;
constexpr int kMaxReportedMismatches = 5;  // per tensor; the count of the rest is reported

const std::string kFixturePath = std::string(HEADLAB_FIXTURE_DIR) + "/ops_float64.json";

// The parsed file, or the reason it could not be read. Loaded once.
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
                " (regenerate it with /usr/bin/python3 tests/fixtures/make_op_fixtures.py)";
      return f;
    }
    try {
      f.doc = json::parse(in);
    } catch (const std::exception& e) {
      f.error = "cannot parse fixture file " + kFixturePath + ": " + e.what();
      return f;
    }
    if (!f.doc.is_object() || !f.doc.contains("cases") || !f.doc["cases"].is_array() || f.doc["cases"].empty()) {
      f.error = "fixture file " + kFixturePath + " has no \"cases\" array";
    }
    return f;
  }();
  return loaded;
}

// ---- Decoding -------------------------------------------------------------

Shape shape_of(const json& j) {
  Shape s;
  for (const auto& d : j.at("shape")) s.push_back(d.get<std::size_t>());
  return s;
}

std::size_t numel(const Shape& s) {
  std::size_t n = 1;
  for (std::size_t d : s) n *= d;
  return n;
}

// Floats are JSON numbers, except the non-finite ones, written as strings.
double float_of(const json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string s = v.get<std::string>();
  if (s == "inf") return HUGE_VAL;
  if (s == "-inf") return -HUGE_VAL;
  if (s == "nan") return std::nan("");
  throw std::runtime_error("fixture: bad float literal \"" + s + "\"");
}

std::vector<double> floats_of(const json& j) {
  std::vector<double> out;
  for (const auto& v : j.at("data")) out.push_back(float_of(v));
  if (out.size() != numel(shape_of(j))) throw std::runtime_error("fixture: data length does not match its shape");
  return out;
}

Array<double> array_of(const json& j) {
  const Shape s = shape_of(j);
  const std::vector<double> data = floats_of(j);
  Array<double> a = Array<double>::from_shape(s);
  std::copy(data.begin(), data.end(), a.data());
  return a;
}

IndexArray index_of(const json& j) {
  const Shape s = shape_of(j);
  IndexArray a = IndexArray::from_shape(s);
  const json& data = j.at("data");
  if (data.size() != a.size()) throw std::runtime_error("fixture: index data length does not match its shape");
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = data[i].get<std::int64_t>();
  return a;
}

MaskArray mask_of(const json& j) {
  const Shape s = shape_of(j);
  MaskArray a = MaskArray::from_shape(s);
  const json& data = j.at("data");
  if (data.size() != a.size()) throw std::runtime_error("fixture: mask data length does not match its shape");
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = data[i].get<int>() != 0;
  return a;
}

Axes axes_of(const json& j) {
  Axes a;
  for (const auto& v : j) a.push_back(v.get<std::ptrdiff_t>());
  return a;
}

// ---- Running one case -----------------------------------------------------

using OpFn = std::function<TensorD(const std::vector<TensorD>&, const json&)>;

const TensorD& only(const std::vector<TensorD>& in, std::size_t n_expected, std::size_t i) {
  if (in.size() != n_expected) throw std::runtime_error("fixture: wrong number of inputs for this op");
  return in[i];
}

const std::map<std::string, OpFn>& op_table() {
  static const std::map<std::string, OpFn> table = {
      {"add", [](const auto& in, const json&) { return headlab::add(only(in, 2, 0), in[1]); }},
      {"sub", [](const auto& in, const json&) { return headlab::sub(only(in, 2, 0), in[1]); }},
      {"mul", [](const auto& in, const json&) { return headlab::mul(only(in, 2, 0), in[1]); }},
      {"div", [](const auto& in, const json&) { return headlab::div(only(in, 2, 0), in[1]); }},
      {"pow", [](const auto& in, const json& a) { return headlab::pow(only(in, 1, 0), a.at("exponent").get<double>()); }},
      {"exp", [](const auto& in, const json&) { return headlab::exp(only(in, 1, 0)); }},
      {"log", [](const auto& in, const json&) { return headlab::log(only(in, 1, 0)); }},
      {"sqrt", [](const auto& in, const json&) { return headlab::sqrt(only(in, 1, 0)); }},
      {"tanh", [](const auto& in, const json&) { return headlab::tanh(only(in, 1, 0)); }},
      {"sigmoid", [](const auto& in, const json&) { return headlab::sigmoid(only(in, 1, 0)); }},
      {"relu", [](const auto& in, const json&) { return headlab::relu(only(in, 1, 0)); }},
      {"gelu", [](const auto& in, const json&) { return headlab::gelu(only(in, 1, 0)); }},
      {"sum",
       [](const auto& in, const json& a) {
         return headlab::sum(only(in, 1, 0), axes_of(a.at("axes")), a.at("keepdim").get<bool>());
       }},
      {"mean",
       [](const auto& in, const json& a) {
         return headlab::mean(only(in, 1, 0), axes_of(a.at("axes")), a.at("keepdim").get<bool>());
       }},
      {"max",
       [](const auto& in, const json& a) {
         return headlab::max(only(in, 1, 0), axes_of(a.at("axes")), a.at("keepdim").get<bool>());
       }},
      {"matmul", [](const auto& in, const json&) { return headlab::matmul(only(in, 2, 0), in[1]); }},
      {"transpose",
       [](const auto& in, const json& a) {
         return headlab::transpose(only(in, 1, 0), a.at("axis0").get<std::ptrdiff_t>(),
                                   a.at("axis1").get<std::ptrdiff_t>());
       }},
      {"permute", [](const auto& in, const json& a) { return headlab::permute(only(in, 1, 0), axes_of(a.at("order"))); }},
      {"narrow",
       [](const auto& in, const json& a) {
         return headlab::narrow(only(in, 1, 0), a.at("axis").get<std::ptrdiff_t>(), a.at("start").get<std::size_t>(),
                                a.at("length").get<std::size_t>());
       }},
      {"concat", [](const auto& in, const json& a) { return headlab::concat(in, a.at("axis").get<std::ptrdiff_t>()); }},
      {"stack", [](const auto& in, const json& a) { return headlab::stack(in, a.at("axis").get<std::ptrdiff_t>()); }},
      {"embedding", [](const auto& in, const json& a) { return headlab::embedding(only(in, 1, 0), index_of(a.at("ids"))); }},
      {"gather",
       [](const auto& in, const json& a) {
         return headlab::gather(only(in, 1, 0), a.at("axis").get<std::ptrdiff_t>(), index_of(a.at("index")));
       }},
      {"masked_fill",
       [](const auto& in, const json& a) {
         return headlab::masked_fill(only(in, 1, 0), mask_of(a.at("mask")), float_of(a.at("value")));
       }},
      {"where", [](const auto& in, const json& a) { return headlab::where(mask_of(a.at("cond")), only(in, 2, 0), in[1]); }},
      {"softmax", [](const auto& in, const json& a) { return headlab::softmax(only(in, 1, 0), a.at("axis").get<std::ptrdiff_t>()); }},
      {"log_softmax",
       [](const auto& in, const json& a) { return headlab::log_softmax(only(in, 1, 0), a.at("axis").get<std::ptrdiff_t>()); }},
      {"cross_entropy",
       [](const auto& in, const json& a) {
         return headlab::cross_entropy(only(in, 1, 0), index_of(a.at("targets")), a.at("ignore_index").get<std::int64_t>(),
                                       a.at("label_smoothing").get<double>());
       }},
      {"layer_norm",
       [](const auto& in, const json& a) { return headlab::layer_norm(only(in, 3, 0), in[1], in[2], a.at("eps").get<double>()); }},
  };
  return table;
}

// The families the file must contain, each run by its own TEST_CASE below.
const std::set<std::string> kFamilies = {"binary",      "unary", "reduce",  "matmul",        "shape",     "embedding",
                                         "gather",      "masked_fill", "where", "softmax", "cross_entropy", "layer_norm"};

bool close(double received, double expected) {
  if (!std::isfinite(expected)) {
    return std::isnan(expected) ? std::isnan(received) : received == expected;
  }
  return std::fabs(received - expected) <= kAbsTol + kRelTol * std::fabs(expected);  // false for NaN received
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// Compares `received` with the fixture tensor `expected_json`; returns true when they agree.
bool compare(const std::string& case_name, const std::string& what, const Array<double>& received,
             const json& expected_json) {
  const Shape exp_shape = shape_of(expected_json);
  const Shape got_shape(received.shape().begin(), received.shape().end());
  CHECK_MESSAGE(got_shape == exp_shape, "case ", case_name, ": ", what, " has shape ", headlab::shape_str(got_shape),
                ", PyTorch gives ", headlab::shape_str(exp_shape));
  if (got_shape != exp_shape) return false;
  const std::vector<double> expected = floats_of(expected_json);
  int mismatches = 0;
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double r = received.data()[i];
    const double e = expected[i];
    if (close(r, e)) continue;
    ++mismatches;
    worst = std::max(worst, std::isnan(r) ? HUGE_VAL : std::fabs(r - e));
    if (mismatches <= kMaxReportedMismatches) {
      FAIL_CHECK("case ", case_name, ": ", what, " [flat index ", i, "] expected ", fmt(e), " (PyTorch), received ",
                 fmt(r), " (headlab), |diff| = ", fmt(std::fabs(r - e)));
    }
  }
  if (mismatches > kMaxReportedMismatches) {
    FAIL_CHECK("case ", case_name, ": ", what, ": ", mismatches, " of ", expected.size(),
               " elements disagree in all, largest |diff| = ", fmt(worst));
  }
  return mismatches == 0;
}

void run_case(const json& c) {
  const std::string name = c.at("name").get<std::string>();
  const std::string op = c.at("op").get<std::string>();
  INFO("fixture case ", name, " (op ", op, ")");
  const auto it = op_table().find(op);
  if (it == op_table().end()) {
    FAIL_CHECK("case ", name, ": unknown op \"", op, "\" in the fixture file");
    return;
  }
  try {
    std::vector<TensorD> inputs;
    for (const auto& in : c.at("inputs")) inputs.emplace_back(array_of(in), /*requires_grad=*/true);
    const json& args = c.contains("args") ? c.at("args") : json::object();
    const TensorD out = it->second(inputs, args);
    compare(name, "output", out.value(), c.at("output"));

    out.backward(array_of(c.at("upstream")));
    const json& grads = c.at("grads");
    REQUIRE_MESSAGE(grads.size() == inputs.size(), "case ", name, ": fixture has ", grads.size(), " gradients for ",
                    inputs.size(), " inputs");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string what = "grad of input " + std::to_string(i);
      if (!inputs[i].has_grad()) {
        FAIL_CHECK("case ", name, ": ", what, " was not reached by backward");
        continue;
      }
      compare(name, what, inputs[i].grad(), grads[i]);
    }
  } catch (const std::exception& e) {
    FAIL_CHECK("case ", name, ": threw: ", std::string(e.what()));
  }
}

// Runs every case of `family`; fails if the file is missing or holds none.
void run_family(const std::string& family) {
  const Fixtures& f = fixtures();
  REQUIRE_MESSAGE(f.error.empty(), f.error);
  int count = 0;
  for (const auto& c : f.doc.at("cases")) {
    if (c.value("family", std::string()) != family) continue;
    ++count;
    run_case(c);
  }
  CHECK_MESSAGE(count > 0, "no fixture case of family \"", family, "\" in ", kFixturePath);
}

}  // namespace

TEST_CASE("pytorch fixture: file is present and every case is runnable") {
  const Fixtures& f = fixtures();
  REQUIRE_MESSAGE(f.error.empty(), f.error);
  std::set<std::string> names;
  for (const auto& c : f.doc.at("cases")) {
    const std::string name = c.value("name", std::string("<unnamed>"));
    CHECK_MESSAGE(names.insert(name).second, "duplicate fixture case name ", name);
    const std::string family = c.value("family", std::string());
    CHECK_MESSAGE(kFamilies.count(family) == 1, "case ", name, " has family \"", family,
                  "\" that no TEST_CASE runs");
    const std::string op = c.value("op", std::string());
    CHECK_MESSAGE(op_table().count(op) == 1, "case ", name, " has unknown op \"", op, "\"");
  }
}

TEST_CASE("pytorch fixture: binary") { run_family("binary"); }
TEST_CASE("pytorch fixture: unary") { run_family("unary"); }
TEST_CASE("pytorch fixture: reduce") { run_family("reduce"); }
TEST_CASE("pytorch fixture: matmul") { run_family("matmul"); }
TEST_CASE("pytorch fixture: shape") { run_family("shape"); }
TEST_CASE("pytorch fixture: embedding") { run_family("embedding"); }
TEST_CASE("pytorch fixture: gather") { run_family("gather"); }
TEST_CASE("pytorch fixture: masked_fill") { run_family("masked_fill"); }
TEST_CASE("pytorch fixture: where") { run_family("where"); }
TEST_CASE("pytorch fixture: softmax") { run_family("softmax"); }
TEST_CASE("pytorch fixture: cross_entropy") { run_family("cross_entropy"); }
TEST_CASE("pytorch fixture: layer_norm") { run_family("layer_norm"); }
}  // namespace test_pytorch_fixtures
