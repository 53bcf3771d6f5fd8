// Bad input: every op with a shape rule throws ShapeError (or IndexError /
// ValueError for values) whose message names the op and the shapes involved.
#include <doctest/doctest.h>

#include "headlab/headlab.hpp"

namespace test_bad_input {

using namespace headlab;

namespace {

struct BadCase {
  std::string label;
  std::function<void()> call;
  std::vector<std::string> must_mention;  // op name and shapes
};

TensorD t(const Shape& shape) { return zeros<double>(shape, true); }
IndexArray idx(std::vector<std::int64_t> v, const Shape& shape) {
  IndexArray a = IndexArray::from_shape(shape);
  std::copy(v.begin(), v.end(), a.data());
  return a;
}

template <typename E>
void check_throws(const BadCase& c) {
  CAPTURE(c.label);
  bool thrown = false;
  try {
    c.call();
  } catch (const E& e) {
    thrown = true;
    const std::string msg = e.what();
    for (const auto& s : c.must_mention)
      CHECK_MESSAGE(msg.find(s) != std::string::npos, c.label << ": message '" << msg << "' lacks '" << s << "'");
  } catch (const std::exception& e) {
    FAIL_CHECK(c.label << ": wrong exception type: " << e.what());
    thrown = true;
  }
  CHECK_MESSAGE(thrown, c.label << ": no exception");
}

}  // namespace

TEST_CASE("bad input: incompatible shapes throw ShapeError naming op and shapes") {
  std::vector<BadCase> cases = {
      {"add", [] { add(t({2, 3}), t({4, 3})); }, {"add", "[2, 3]", "[4, 3]"}},
      {"sub", [] { sub(t({2, 3}), t({2})); }, {"sub", "[2, 3]", "[2]"}},
      {"mul", [] { mul(t({5}), t({4})); }, {"mul", "[5]", "[4]"}},
      {"div", [] { div(t({2, 2, 3}), t({3, 2})); }, {"div", "[2, 2, 3]", "[3, 2]"}},
      {"sum axis", [] { sum(t({2, 3}), {2}); }, {"sum", "axis 2", "[2, 3]"}},
      {"sum repeated axis", [] { sum(t({2, 3}), {1, -1}); }, {"sum", "repeated", "[2, 3]"}},
      {"mean axis", [] { mean(t({2, 3}), {-3}); }, {"mean", "[2, 3]"}},
      {"max axis", [] { max(t({2, 3}), {5}); }, {"max", "[2, 3]"}},
      {"max empty", [] { max(t({2, 0}), {1}); }, {"max", "[2, 0]"}},
      {"matmul inner", [] { matmul(t({2, 3}), t({4, 5})); }, {"matmul", "[2, 3]", "[4, 5]"}},
      {"matmul 1-D", [] { matmul(t({3}), t({3, 2})); }, {"matmul", "[3]", "[3, 2]"}},
      {"matmul batch", [] { matmul(t({2, 3, 4}), t({3, 4, 5})); }, {"matmul", "[2, 3, 4]", "[3, 4, 5]"}},
      {"linear in", [] { linear(t({2, 3}), t({4, 5})); }, {"linear", "[2, 3]", "[4, 5]"}},
      {"linear bias", [] { linear(t({2, 3}), t({4, 3}), t({5})); }, {"linear", "[5]", "[4, 3]"}},
      {"reshape count", [] { reshape(t({2, 3}), {4, 2}); }, {"reshape", "[2, 3]", "[4, 2]"}},
      {"reshape infer", [] { reshape(t({2, 3}), {4, -1}); }, {"reshape", "[2, 3]"}},
      {"transpose axis", [] { transpose(t({2, 3}), 0, 2); }, {"transpose", "[2, 3]"}},
      {"permute length", [] { permute(t({2, 3}), {0}); }, {"permute", "[2, 3]"}},
      {"permute repeat", [] { permute(t({2, 3}), {0, 0}); }, {"permute", "[2, 3]"}},
      {"narrow range", [] { narrow(t({2, 3}), 1, 2, 2); }, {"narrow", "[2, 4)", "[2, 3]"}},
      {"split sizes", [] { split(t({2, 3}), {1, 1}, 1); }, {"split", "[2, 3]"}},
      {"concat shapes", [] { concat<double>({t({2, 3}), t({3, 2})}, 0); }, {"concat", "[3, 2]", "[2, 3]"}},
      {"concat empty", [] { concat<double>({}, 0); }, {"concat"}},
      {"stack shapes", [] { stack<double>({t({2, 3}), t({2, 4})}, 0); }, {"stack", "[2, 4]", "[2, 3]"}},
      {"embedding weight", [] { embedding(t({2, 3, 4}), idx({0}, {1})); }, {"embedding", "[2, 3, 4]"}},
      {"gather rank", [] { gather(t({2, 3}), 1, idx({0, 1}, {2})); }, {"gather", "[2]", "[2, 3]"}},
      {"masked_fill mask", [] { masked_fill(t({2, 3}), MaskArray::from_shape({2}), 0.0); },
       {"masked_fill", "[2]", "[2, 3]"}},
      {"where", [] { headlab::where(MaskArray::from_shape({2, 3}), t({4, 3}), t({3})); }, {"where", "[2, 3]", "[4, 3]"}},
      {"softmax axis", [] { softmax(t({2, 3}), 2); }, {"softmax", "[2, 3]"}},
      {"log_softmax axis", [] { log_softmax(t({2, 3}), -3); }, {"log_softmax", "[2, 3]"}},
      {"cross_entropy shapes", [] { cross_entropy(t({4, 3}), idx({0, 1, 2}, {3})); },
       {"cross_entropy", "[4, 3]", "[3]"}},
      {"cross_entropy rank", [] { cross_entropy(t({2, 4, 3}), idx({0, 1}, {2})); }, {"cross_entropy", "[2, 4, 3]"}},
      {"layer_norm weight", [] { layer_norm(t({2, 3}), t({4}), TensorD()); }, {"layer_norm", "[4]", "[2, 3]"}},
      {"layer_norm bias", [] { layer_norm(t({2, 3}), t({3}), t({2})); }, {"layer_norm", "[2]", "[2, 3]"}},
      {"from_data count", [] { from_data<double>({1, 2, 3}, {2, 2}); }, {"from_data", "[2, 2]"}},
      {"item", [] { t({2}).item(); }, {"item", "[2]"}},
  };
  for (const auto& c : cases) check_throws<ShapeError>(c);
}

TEST_CASE("bad input: indices outside their range throw IndexError") {
  std::vector<BadCase> cases = {
      {"embedding id", [] { embedding(t({5, 2}), idx({1, 5}, {2})); }, {"embedding", "id 5", "[0, 5)"}},
      {"embedding negative", [] { embedding(t({5, 2}), idx({-1}, {1})); }, {"embedding", "id -1"}},
      {"gather value", [] { gather(t({2, 3}), 1, idx({0, 3}, {2, 1})); }, {"gather", "3", "[2, 3]"}},
      {"cross_entropy target", [] { cross_entropy(t({2, 3}), idx({0, 3}, {2})); }, {"cross_entropy", "target 3"}},
  };
  for (const auto& c : cases) check_throws<IndexError>(c);
}

TEST_CASE("bad input: bad argument values throw ValueError") {
  Generator gen(1);
  std::vector<BadCase> cases = {
      {"dropout p", [&] { dropout(t({2}), 1.5, gen, true); }, {"dropout", "1.5"}},
      {"dropout negative", [&] { dropout(t({2}), -0.1, gen, true); }, {"dropout"}},
      {"cross_entropy smoothing", [] { cross_entropy(t({2, 3}), idx({0, 1}, {2}), -100, 1.5); },
       {"cross_entropy", "label_smoothing"}},
      {"arange step", [] { arange<double>(0.0, 1.0, 0.0); }, {"arange"}},
      {"undefined tensor", [] { TensorD().value(); }, {"undefined"}},
  };
  for (const auto& c : cases) check_throws<ValueError>(c);
}

TEST_CASE("bad input: every headlab exception derives from headlab::Error") {
  CHECK_THROWS_AS(add(t({2}), t({3})), Error);
  CHECK_THROWS_AS(embedding(t({2, 2}), idx({9}, {1})), Error);
  CHECK_THROWS_AS(TensorD().shape(), Error);
}
}  // namespace test_bad_input
