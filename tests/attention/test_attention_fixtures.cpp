// Replays the PyTorch reference cases of tests/fixtures/attention/ (written by
// tests/fixtures/make_attention_fixtures.py with torch 1.13, float64) through
// headlab::MultiHeadAttention and compares, element by element, the output,
// the per-head weights, the gate values (gated cases) and the gradients of
// sum(output * G) with respect to the inputs, every parameter and the head mask:
//   float64: |received - expected| <= 1e-10 + 1e-8 |expected|
//   float32: |received - expected| <= 1e-5  + 1e-5 |expected|   (same fixture, inputs cast to float)
// One TEST_CASE per case, named "pytorch attention fixture: <case>". A missing
// fixture directory or file fails (never skips). Regenerate the fixtures with
//   /usr/bin/python3 tests/fixtures/make_attention_fixtures.py
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <xtensor/xnpy.hpp>

#include "headlab/attention/attention.hpp"
#include "headlab/headlab.hpp"

namespace test_attention_fixtures {

#ifndef HEADLAB_FIXTURE_DIR
#error "HEADLAB_FIXTURE_DIR must be defined (tests/CMakeLists.txt)"
#endif

namespace {

using headlab::Array;
using headlab::MaskArray;
using headlab::Shape;
using json = nlohmann::json;

const std::string kAttentionDir = std::string(HEADLAB_FIXTURE_DIR) + "/attention";
const char* const kRegenerate = " (regenerate with /usr/bin/python3 tests/fixtures/make_attention_fixtures.py)";
constexpr int kMaxReportedMismatches = 5;  // per tensor; the count of the rest is reported

// The cases this file runs, one TEST_CASE each (see the bottom); cases.json must list exactly these.
const std::vector<std::string> kCases = {
    "self", "causal", "cross_padding", "attn_mask", "one_head", "head_dim_1", "batch_1", "batch_3",  // nn.MHA
    "gqa", "mqa", "decoupled_head_dim", "gate_headwise", "gate_elementwise", "head_mask", "window_sinks",
    "gqa_gate_causal"};  // plain-torch reference

bool file_exists(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return static_cast<bool>(in);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path + kRegenerate);
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot parse " + path + ": " + std::string(e.what()));
  }
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

template <typename A>
Shape shape_of(const A& a) {
  return Shape(a.shape().begin(), a.shape().end());
}

// One case's directory: loads its arrays by name ("x" -> <dir>/x.npy).
struct CaseFiles {
  std::string name, dir;

  std::string path(const std::string& file) const { return dir + "/" + file + ".npy"; }
  bool has(const std::string& file) const { return file_exists(path(file)); }

  Array<double> load(const std::string& file) const {
    const std::string p = path(file);
    if (!file_exists(p)) throw std::runtime_error("missing fixture file " + p + kRegenerate);
    Array<double> a = xt::load_npy<double>(p);  // throws unless the file is '<f8'
    return a;
  }
  template <typename T>
  Array<T> load_as(const std::string& file) const {
    const Array<double> a = load(file);
    Array<T> out = Array<T>::from_shape(shape_of(a));
    std::transform(a.data(), a.data() + a.size(), out.data(), [](double v) { return static_cast<T>(v); });
    return out;
  }
  MaskArray load_mask(const std::string& file) const {
    const std::string p = path(file);
    if (!file_exists(p)) throw std::runtime_error("missing fixture file " + p + kRegenerate);
    const auto raw = xt::load_npy<std::uint8_t>(p);  // uint8 0/1, 1 = not allowed
    MaskArray m = MaskArray::from_shape(Shape(raw.shape().begin(), raw.shape().end()));
    for (std::size_t i = 0; i < m.size(); ++i) m.data()[i] = raw.data()[i] != 0;
    return m;
  }
};

// Compares `received` with the fixture array `file`; failures name the case, tensor, flat index and values.
template <typename T>
bool compare(const std::string& label, const CaseFiles& files, const std::string& what, const Array<T>& received,
             double atol, double rtol) {
  const Array<double> expected = files.load(what);
  const Shape exp_shape = shape_of(expected);
  const Shape got_shape = shape_of(received);
  if (got_shape != exp_shape) {
    FAIL_CHECK("case ", label, ": ", what, " has shape ", shape_str(got_shape), ", PyTorch gives ",
               shape_str(exp_shape));
    return false;
  }
  int mismatches = 0;
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double r = static_cast<double>(received.data()[i]);
    const double e = expected.data()[i];
    if (std::fabs(r - e) <= atol + rtol * std::fabs(e)) continue;  // false for NaN
    ++mismatches;
    worst = std::max(worst, std::isnan(r) ? HUGE_VAL : std::fabs(r - e));
    if (mismatches <= kMaxReportedMismatches) {
      FAIL_CHECK("case ", label, ": ", what, " [flat index ", i, "] expected ", fmt(e), " (PyTorch), received ",
                 fmt(r), " (headlab), |diff| = ", fmt(std::fabs(r - e)));
    }
  }
  if (mismatches > kMaxReportedMismatches) {
    FAIL_CHECK("case ", label, ": ", what, ": ", mismatches, " of ", expected.size(),
               " elements disagree in all, largest |diff| = ", fmt(worst));
  }
  return mismatches == 0;
}

template <typename T>
void compare_grad(const std::string& label, const CaseFiles& files, const std::string& what,
                  const headlab::Tensor<T>& t, double atol, double rtol) {
  if (!t.has_grad()) {
    FAIL_CHECK("case ", label, ": ", what, " was not reached by backward");
    return;
  }
  compare(label, files, "grad_" + what, t.grad(), atol, rtol);
}

std::string join(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string file_name_of(std::string param) {  // "out_proj.weight" -> "out_proj_weight"
  std::replace(param.begin(), param.end(), '.', '_');
  return param;
}

headlab::AttentionConfig config_of(const json& meta) {
  headlab::AttentionConfig cfg;
  cfg.d_model = meta.at("D").get<std::size_t>();
  cfg.num_heads = meta.at("h").get<std::size_t>();
  cfg.num_kv_heads = meta.at("h_kv").get<std::size_t>();
  cfg.head_dim = meta.at("head_dim").get<std::size_t>();
  cfg.gate = headlab::parse_gate(meta.at("gate").get<std::string>());
  cfg.gate_bias = true;
  cfg.bias = true;
  cfg.dropout = 0.0;
  cfg.window = meta.at("window").get<std::size_t>();
  cfg.sinks = meta.at("sinks").get<std::size_t>();
  return cfg;
}

template <typename T>
void run_dtype(const CaseFiles& files, const json& meta, const std::string& dtype, double atol, double rtol) {
  const std::string label = files.name + " (" + dtype + ")";
  try {
    const bool cross = meta.at("kind").get<std::string>() == "cross";
    headlab::Generator gen(1234);
    headlab::MultiHeadAttention<T> mha(config_of(meta), gen);
    mha.eval();

    // The module's parameters must be exactly the fixture's, same names and shapes.
    std::set<std::string> expected_names;
    for (const auto& p : meta.at("params")) expected_names.insert(p.get<std::string>());
    std::set<std::string> module_names;
    const auto named = mha.named_parameters();
    for (const auto& [pname, tensor] : named) module_names.insert(pname);
    CHECK_MESSAGE(module_names == expected_names, "case ", label, ": module parameters [", join(module_names),
                  "] differ from the fixture's [", join(expected_names), "]");
    bool shapes_ok = true;
    for (const auto& [pname, tensor] : named) {
      if (!expected_names.count(pname)) continue;
      Array<T> value = files.load_as<T>(file_name_of(pname));
      headlab::Tensor<T> handle = tensor;
      if (shape_of(handle.value()) != shape_of(value)) {
        FAIL_CHECK("case ", label, ": parameter ", pname, " has shape ", shape_str(shape_of(handle.value())),
                   ", PyTorch's is ", shape_str(shape_of(value)));
        shapes_ok = false;
        continue;
      }
      handle.mutable_value() = value;
    }
    if (!shapes_ok || module_names != expected_names) return;

    headlab::Tensor<T> x(files.load_as<T>("x"), true);
    headlab::Tensor<T> memory;
    if (cross) memory = headlab::Tensor<T>(files.load_as<T>("memory"), true);

    headlab::AttentionCall<T> call;
    call.causal = meta.at("causal").get<bool>();
    if (meta.at("key_padding_mask").get<bool>()) call.key_padding_mask = files.load_mask("key_padding_mask");
    if (meta.at("attn_mask").get<bool>()) call.attn_mask = files.load_mask("attn_mask");
    if (meta.at("head_mask").get<bool>()) call.head_mask = headlab::Tensor<T>(files.load_as<T>("head_mask"), true);
    call.need_weights = true;

    const headlab::AttentionOutput<T> out = cross ? mha.forward(x, memory, call) : mha.forward(x, call);

    REQUIRE_MESSAGE(out.output.defined(), "case ", label, ": forward returned no output");
    compare(label, files, "output", out.output.value(), atol, rtol);
    if (out.weights.defined()) {
      compare(label, files, "weights", out.weights.value(), atol, rtol);
    } else {
      FAIL_CHECK("case ", label, ": need_weights is set but forward returned no weights");
    }
    if (meta.at("gate").get<std::string>() != "none") {
      if (out.gate.defined()) {
        compare(label, files, "gate", out.gate.value(), atol, rtol);
      } else {
        FAIL_CHECK("case ", label, ": gated, but forward returned no gate values");
      }
    }

    out.output.backward(files.load_as<T>("upstream"));
    compare_grad(label, files, "x", x, atol, rtol);
    if (cross) compare_grad(label, files, "memory", memory, atol, rtol);
    for (const auto& [pname, tensor] : named) compare_grad(label, files, file_name_of(pname), tensor, atol, rtol);
    if (call.head_mask.defined()) compare_grad(label, files, "head_mask", call.head_mask, atol, rtol);
  } catch (const std::exception& e) {
    FAIL_CHECK("case ", label, ": threw: ", std::string(e.what()));
  }
}

void run_case(const std::string& name) {
  const CaseFiles files{name, kAttentionDir + "/" + name};
  json meta;
  try {
    meta = read_json(files.dir + "/meta.json");
  } catch (const std::exception& e) {
    FAIL("case ", name, ": ", std::string(e.what()));
  }
  REQUIRE_MESSAGE(meta.value("case", std::string()) == name, "case ", name, ": meta.json names case \"",
                  meta.value("case", std::string()), "\"");
  run_dtype<double>(files, meta, "float64", 1e-10, 1e-8);
  run_dtype<float>(files, meta, "float32", 1e-5, 1e-5);
}

}  // namespace

TEST_CASE("pytorch attention fixture: directory is present and lists exactly the cases run here") {
  json index;
  try {
    index = read_json(kAttentionDir + "/cases.json");
  } catch (const std::exception& e) {
    FAIL(std::string(e.what()));
  }
  REQUIRE_MESSAGE(index.contains("cases"), kAttentionDir, "/cases.json has no \"cases\" list", kRegenerate);
  std::set<std::string> listed;
  for (const auto& c : index.at("cases")) listed.insert(c.get<std::string>());
  const std::set<std::string> run_here(kCases.begin(), kCases.end());
  for (const auto& c : listed) {
    CHECK_MESSAGE(run_here.count(c) == 1, "fixture case ", c, " has no TEST_CASE in test_attention_fixtures.cpp");
  }
  for (const auto& c : run_here) {
    CHECK_MESSAGE(listed.count(c) == 1, "case ", c, " is not in ", kAttentionDir, "/cases.json", kRegenerate);
  }
}

#define HEADLAB_ATTENTION_FIXTURE(NAME) \
  TEST_CASE("pytorch attention fixture: " NAME) { run_case(NAME); }

HEADLAB_ATTENTION_FIXTURE("self")
HEADLAB_ATTENTION_FIXTURE("causal")
HEADLAB_ATTENTION_FIXTURE("cross_padding")
HEADLAB_ATTENTION_FIXTURE("attn_mask")
HEADLAB_ATTENTION_FIXTURE("one_head")
HEADLAB_ATTENTION_FIXTURE("head_dim_1")
HEADLAB_ATTENTION_FIXTURE("batch_1")
HEADLAB_ATTENTION_FIXTURE("batch_3")
HEADLAB_ATTENTION_FIXTURE("gqa")
HEADLAB_ATTENTION_FIXTURE("mqa")
HEADLAB_ATTENTION_FIXTURE("decoupled_head_dim")
HEADLAB_ATTENTION_FIXTURE("gate_headwise")
HEADLAB_ATTENTION_FIXTURE("gate_elementwise")
HEADLAB_ATTENTION_FIXTURE("head_mask")
HEADLAB_ATTENTION_FIXTURE("window_sinks")
HEADLAB_ATTENTION_FIXTURE("gqa_gate_causal")
#undef HEADLAB_ATTENTION_FIXTURE  // the unity build compiles the next test file in the same unit
}  // namespace test_attention_fixtures
