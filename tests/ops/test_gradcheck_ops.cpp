// Every op through gradcheck (float64 central differences), from one table.
//
// Each row names the op, the input shapes, and how to call it. The test draws
// inputs from a seeded generator (kept away from kinks and domain edges where
// the row says so), checks the output's recorded op name, then runs gradcheck,
// which also checks that every gradient has its input's exact shape.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <set>

#include "headlab/headlab.hpp"

namespace test_gradcheck_ops {

using namespace headlab;

namespace {

enum class Domain { any, positive, away_from_zero };

struct OpCase {
  std::string label;             // shown on failure
  std::string op;                // the op name the output node must carry
  std::vector<Shape> shapes;     // differentiable inputs
  std::function<TensorD(const std::vector<TensorD>&)> fn;
  Domain domain = Domain::any;
};

TensorD random_input(const Shape& shape, Domain domain, Generator& gen) {
  TensorD t = uniform<double>(shape, -1.0, 1.0, gen, true);
  for (std::size_t i = 0; i < t.numel(); ++i) {
    double& v = t.mutable_value().data()[i];
    if (domain == Domain::positive) v = 0.5 + std::abs(v);                 // in [0.5, 1.5]
    if (domain == Domain::away_from_zero) v = (v < 0 ? -0.1 : 0.1) + v;   // |v| >= 0.1
  }
  return t;
}

IndexArray ids(std::vector<std::int64_t> values, const Shape& shape) {
  IndexArray a = IndexArray::from_shape(shape);
  std::copy(values.begin(), values.end(), a.data());
  return a;
}

MaskArray mask(std::vector<int> values, const Shape& shape) {
  MaskArray m = MaskArray::from_shape(shape);
  for (std::size_t i = 0; i < values.size(); ++i) m.data()[i] = values[i] != 0;
  return m;
}

const double kNegInf = -std::numeric_limits<double>::infinity();

using In = const std::vector<TensorD>&;

std::vector<OpCase> op_table() {
  std::vector<OpCase> t;
  // Elementwise binary with broadcasting: same shape, trailing, size-1, rank-extending, empty.
  for (auto [a, b] : std::vector<std::pair<Shape, Shape>>{
           {{2, 3}, {2, 3}}, {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}}, {{1}, {2, 3}}, {{2, 0, 3}, {3}}, {{}, {2, 2}}}) {
    t.push_back({"add", "add", {a, b}, [](In x) { return add(x[0], x[1]); }});
    t.push_back({"sub", "sub", {a, b}, [](In x) { return sub(x[0], x[1]); }});
    t.push_back({"mul", "mul", {a, b}, [](In x) { return mul(x[0], x[1]); }});
    t.push_back({"div", "div", {a, b}, [](In x) { return div(x[0], x[1]); }, Domain::positive});
  }
  // Unary and scalar ops.
  const Shape u{2, 3, 4};
  t.push_back({"neg", "neg", {u}, [](In x) { return neg(x[0]); }});
  t.push_back({"add_scalar", "add_scalar", {u}, [](In x) { return x[0] + 2.5; }});
  t.push_back({"mul_scalar", "mul_scalar", {u}, [](In x) { return x[0] * -1.5; }});
  t.push_back({"rsub_scalar", "rsub_scalar", {u}, [](In x) { return 3.0 - x[0]; }});
  t.push_back({"rdiv_scalar", "rdiv_scalar", {u}, [](In x) { return 2.0 / x[0]; }, Domain::positive});
  t.push_back({"pow 2.5", "pow", {u}, [](In x) { return pow(x[0], 2.5); }, Domain::positive});
  t.push_back({"pow 3", "pow", {u}, [](In x) { return pow(x[0], 3.0); }});
  t.push_back({"exp", "exp", {u}, [](In x) { return exp(x[0]); }});
  t.push_back({"log", "log", {u}, [](In x) { return log(x[0]); }, Domain::positive});
  t.push_back({"sqrt", "sqrt", {u}, [](In x) { return sqrt(x[0]); }, Domain::positive});
  t.push_back({"tanh", "tanh", {u}, [](In x) { return tanh(x[0]); }});
  t.push_back({"sigmoid", "sigmoid", {u}, [](In x) { return sigmoid(x[0]); }});
  t.push_back({"relu", "relu", {u}, [](In x) { return relu(x[0]); }, Domain::away_from_zero});
  t.push_back({"gelu", "gelu", {u}, [](In x) { return gelu(x[0]); }});
  t.push_back({"unary on size-1", "exp", {{1, 1}}, [](In x) { return exp(x[0]); }});
  // Reductions, with and without keepdim.
  for (bool keep : {false, true}) {
    t.push_back({"sum all", "sum", {u}, [keep](In x) { return sum(x[0], {}, keep); }});
    t.push_back({"sum axis 1", "sum", {u}, [keep](In x) { return sum(x[0], {1}, keep); }});
    t.push_back({"sum axes 0,2", "sum", {u}, [keep](In x) { return sum(x[0], {0, -1}, keep); }});
    t.push_back({"sum size-1 axis", "sum", {{2, 1, 3}}, [keep](In x) { return sum(x[0], {1}, keep); }});
    t.push_back({"mean all", "mean", {u}, [keep](In x) { return mean(x[0], {}, keep); }});
    t.push_back({"mean axis -1", "mean", {u}, [keep](In x) { return mean(x[0], {-1}, keep); }});
    t.push_back({"mean axes 0,1", "mean", {u}, [keep](In x) { return mean(x[0], {0, 1}, keep); }});
    t.push_back({"max axis 1", "max", {u}, [keep](In x) { return max(x[0], {1}, keep); }});
    t.push_back({"max all", "max", {u}, [keep](In x) { return max(x[0], {}, keep); }});
    t.push_back({"max axes 0,2", "max", {u}, [keep](In x) { return max(x[0], {0, 2}, keep); }});
  }
  // Matrix products: 2-D, batched with a weight, broadcast batch dims, 2-D @ batched.
  for (auto [a, b] : std::vector<std::pair<Shape, Shape>>{{{3, 4}, {4, 5}},
                                                          {{2, 3, 4}, {4, 5}},
                                                          {{2, 1, 3, 4}, {3, 4, 2}},
                                                          {{3, 4}, {2, 4, 5}},
                                                          {{1, 4}, {4, 1}},
                                                          {{2, 3, 4}, {2, 4, 3}}}) {
    t.push_back({"matmul", "matmul", {a, b}, [](In x) { return matmul(x[0], x[1]); }});
  }
  t.push_back({"linear", "linear", {{2, 3, 4}, {5, 4}, {5}}, [](In x) { return linear(x[0], x[1], x[2]); }});
  t.push_back({"linear no bias", "linear", {{3, 4}, {2, 4}}, [](In x) { return linear(x[0], x[1]); }});
  t.push_back({"linear empty rows", "linear", {{0, 4}, {2, 4}, {2}}, [](In x) { return linear(x[0], x[1], x[2]); }});
  // Shape ops.
  t.push_back({"reshape -1", "reshape", {u}, [](In x) { return reshape(x[0], {-1}); }});
  t.push_back({"reshape 4,-1", "reshape", {u}, [](In x) { return reshape(x[0], {4, -1}); }});
  t.push_back({"view", "reshape", {u}, [](In x) { return view(x[0], {2, 12}); }});
  t.push_back({"transpose 0,2", "transpose", {u}, [](In x) { return transpose(x[0], 0, 2); }});
  t.push_back({"transpose -1,-2", "transpose", {u}, [](In x) { return transpose(x[0], -1, -2); }});
  t.push_back({"permute 2,0,1", "permute", {u}, [](In x) { return permute(x[0], {2, 0, 1}); }});
  t.push_back({"permute 0,2,1,3 (head split: rows move whole)", "permute", {{2, 3, 4, 2}},
               [](In x) { return permute(x[0], {0, 2, 1, 3}); }});
  t.push_back({"permute 1,0,2 (rows move whole, 3-D)", "permute", {u}, [](In x) { return permute(x[0], {1, 0, 2}); }});
  t.push_back({"narrow", "narrow", {u}, [](In x) { return narrow(x[0], 1, 1, 2); }});
  t.push_back({"narrow last axis", "narrow", {u}, [](In x) { return narrow(x[0], -1, 0, 3); }});
  t.push_back({"split", "concat", {u}, [](In x) {
                 auto p = split(x[0], {1, 2, 1}, -1);
                 return concat<double>({p[2] * 2.0, p[0], p[1]}, -1);  // every piece used
               }});
  t.push_back({"concat axis 1", "concat", {{2, 1, 4}, {2, 3, 4}, {2, 2, 4}},
               [](In x) { return concat<double>({x[0], x[1], x[2]}, 1); }});
  t.push_back({"concat axis 0", "concat", {{1, 3}, {2, 3}}, [](In x) { return concat<double>({x[0], x[1]}, 0); }});
  t.push_back({"stack axis 0", "stack", {{2, 3}, {2, 3}}, [](In x) { return stack<double>({x[0], x[1]}, 0); }});
  t.push_back({"stack axis -1", "stack", {{2, 3}, {2, 3}, {2, 3}},
               [](In x) { return stack<double>({x[0], x[1], x[2]}, -1); }});
  // Indexing.
  t.push_back({"embedding (repeated ids)", "embedding", {{5, 3}},
               [](In x) { return embedding(x[0], ids({0, 4, 4, 2, 0, 1}, {2, 3})); }});
  t.push_back({"gather axis 1", "gather", {u},
               [](In x) { return gather(x[0], 1, ids({0, 2, 2, 1, 1, 0, 0, 0, 2, 1, 0, 2, 1, 1, 2, 0}, {2, 2, 4})); }});
  t.push_back({"gather axis -1", "gather", {{3, 5}}, [](In x) { return gather(x[0], -1, ids({4, 0, 1, 1, 3, 3}, {3, 2})); }});
  t.push_back({"masked_fill broadcast", "masked_fill", {u},
               [](In x) { return masked_fill(x[0], mask({1, 0, 1}, {3, 1}), 7.0); }});
  t.push_back({"where broadcast", "where", {u, {4}},
               [](In x) { return headlab::where(mask({1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 0}, {3, 4}), x[0], x[1]); }});
  // Softmax family, over the last and a middle axis, with masked entries and a fully masked row.
  t.push_back({"softmax -1", "softmax", {u}, [](In x) { return softmax(x[0], -1); }});
  t.push_back({"softmax axis 1", "softmax", {u}, [](In x) { return softmax(x[0], 1); }});
  t.push_back({"log_softmax -1", "log_softmax", {u}, [](In x) { return log_softmax(x[0], -1); }});
  t.push_back({"log_softmax axis 0", "log_softmax", {u}, [](In x) { return log_softmax(x[0], 0); }});
  t.push_back({"softmax masked rows", "softmax", {{3, 4}}, [](In x) {
                 return softmax(masked_fill(x[0], mask({0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1}, {3, 4}), kNegInf), -1);
               }});
  t.push_back({"log_softmax fully masked row", "masked_fill", {{3, 4}}, [](In x) {
                 // Masked entries are -inf in log space; fill them with 0 so that sum(w * y) is finite.
                 const MaskArray m = mask({0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1}, {3, 4});
                 return masked_fill(log_softmax(masked_fill(x[0], m, kNegInf), -1), m, 0.0);
               }});
  // masked_softmax over (B, h, L, S) scores: each mask source alone, all three with a fully hidden
  // row, and a broadcast (1, h, 1, S) mask. The masks are made inside the call: read there only.
  t.push_back({"masked_softmax positions", "masked_softmax", {{2, 2, 3, 4}}, [](In x) {
                 const MaskArray pos = mask({0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1}, {3, 4});
                 return masked_softmax(x[0], ScoreMask{&pos, nullptr, nullptr});
               }});
  t.push_back({"masked_softmax padding", "masked_softmax", {{2, 2, 3, 4}}, [](In x) {
                 const MaskArray pad = mask({0, 0, 0, 1, 0, 1, 1, 0}, {2, 4});
                 return masked_softmax(x[0], ScoreMask{nullptr, &pad, nullptr});
               }});
  t.push_back({"masked_softmax all three, a hidden row", "masked_softmax", {{2, 2, 3, 4}}, [](In x) {
                 const MaskArray pos = mask({0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1}, {3, 4});
                 const MaskArray pad = mask({0, 0, 0, 1, 1, 0, 0, 0}, {2, 4});
                 const MaskArray any = mask({0, 0, 1, 0, 1, 0, 0, 0}, {1, 2, 1, 4});  // hides row (b 1, head 0, query 0)
                 return masked_softmax(x[0], ScoreMask{&pos, &pad, &any});
               }});
  // Losses and normalisation.
  t.push_back({"cross_entropy", "cross_entropy", {{5, 4}},
               [](In x) { return cross_entropy(x[0], ids({0, 3, 1, 2, 3}, {5})); }});
  t.push_back({"cross_entropy ignore_index", "cross_entropy", {{5, 4}},
               [](In x) { return cross_entropy(x[0], ids({0, -100, 1, -100, 3}, {5})); }});
  t.push_back({"cross_entropy smoothing + ignore 0", "cross_entropy", {{6, 3}},
               [](In x) { return cross_entropy(x[0], ids({0, 2, 1, 0, 2, 1}, {6}), 0, 0.1); }});
  t.push_back({"layer_norm affine", "layer_norm", {{2, 3, 8}, {8}, {8}},
               [](In x) { return layer_norm(x[0], x[1], x[2]); }});
  t.push_back({"layer_norm plain", "layer_norm", {{4, 5}}, [](In x) { return layer_norm(x[0], TensorD(), TensorD()); }});
  t.push_back({"dropout", "dropout", {u}, [](In x) {
                 Generator g(7);  // the same mask on every call
                 return dropout(x[0], 0.3, g, true);
               }});
  return t;
}

}  // namespace

TEST_CASE("gradcheck: every op, float64 central differences") {
  Generator gen(42);
  std::set<std::string> ops_covered;
  for (const OpCase& c : op_table()) {
    std::vector<TensorD> inputs;
    for (const Shape& s : c.shapes) inputs.push_back(random_input(s, c.domain, gen));
    CAPTURE(c.label);
    const TensorD y = c.fn(inputs);
    CHECK_MESSAGE(y.op() == c.op, c.label << ": output op is " << y.op() << ", expected " << c.op);
    const GradcheckResult r = gradcheck(c.label, c.fn, inputs);
    CHECK_MESSAGE(r.ok, r.message);
    ops_covered.insert(c.label.substr(0, c.label.find(' ')));
  }
  // The table must keep covering the whole op list of the foundation issue.
  for (const char* op : {"add", "sub", "mul", "div", "neg", "add_scalar", "mul_scalar", "pow", "exp", "log", "sqrt",
                         "tanh", "sigmoid", "relu", "gelu", "sum", "mean", "max", "matmul", "linear", "reshape", "view",
                         "transpose", "permute", "narrow", "split", "concat", "stack", "embedding", "gather",
                         "masked_fill", "where", "softmax", "log_softmax", "masked_softmax", "cross_entropy", "layer_norm",
                         "dropout"}) {
    CHECK_MESSAGE(ops_covered.count(op) == 1, "no gradcheck row for op " << op);
  }
}

TEST_CASE("gradcheck: reports a wrong backward with op, input, index, expected and received") {
  // An op whose backward is deliberately wrong (gradient 2x instead of 3x^2).
  auto wrong_cube = [](In x) {
    Array<double> y = x[0].value() * x[0].value() * x[0].value();
    return make_result<double>("wrong_cube", std::move(y), {x[0]}, [](Node<double>& out) {
      accumulate_grad(*out.inputs[0], Array<double>(out.grad * 2.0 * out.inputs[0]->value), "wrong_cube");
    });
  };
  Generator gen(3);
  const GradcheckResult r = gradcheck("wrong_cube", wrong_cube, {uniform<double>({2, 2}, 0.5, 1.0, gen, true)});
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("wrong_cube") != std::string::npos);
  CHECK(r.message.find("input 0") != std::string::npos);
  CHECK(r.message.find("element (0, 0)") != std::string::npos);
  CHECK(r.message.find("expected") != std::string::npos);
  CHECK(r.message.find("received") != std::string::npos);
}

TEST_CASE("gradcheck: a backward that returns the wrong shape is caught") {
  auto bad_shape = [](In x) {
    return make_result<double>("bad_shape", Array<double>(x[0].value()), {x[0]}, [](Node<double>& out) {
      accumulate_grad(*out.inputs[0], Array<double>(xt::zeros<double>({7})), "bad_shape");
    });
  };
  Generator gen(3);
  CHECK_THROWS_AS(gradcheck("bad_shape", bad_shape, {uniform<double>({2, 2}, 0.5, 1.0, gen, true)}),
                  GradientShapeError);
}
}  // namespace test_gradcheck_ops
