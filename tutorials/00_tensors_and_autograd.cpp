// tutorials/00_tensors_and_autograd.cpp: tensors, broadcasting and reverse-mode autograd.
//
// Chapter 0 of the course. Like the other tutorials it is meant to be read from
// top to bottom, and it also runs (`tutorial_tensors_autograd`, and the ctest
// `tutorial.tensors_autograd`), printing what it teaches. It covers:
//
//   1. making tensors (the factories) and printing them,
//   2. broadcasting: which shapes combine, and into what,
//   3. a tiny computation, the tanh neuron of Karpathy's micrograd and then a
//      2-layer network, with backward() checked against gradients derived by hand,
//   4. gradient accumulation: a tensor used twice (a "diamond" in the graph)
//      receives the sum of both contributions; so do repeated backward calls,
//   5. switching autograd off: NoGradGuard and detach(),
//   6. drawing the graph with Graphviz (to_dot),
//   7. gradcheck: backward() against central differences.
//
// Usage: tutorial_tensors_autograd [graph.dot]   (default: tensors_and_autograd.dot
// in the current directory). The program exits with status 1 if any of its
// checks fails.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xio.hpp>

#include "headlab/headlab.hpp"
#include "tutorial_threads.hpp"

#include "tutorial_table.hpp"

using namespace headlab;

namespace {

// ---- Printing helpers -----------------------------------------------------

void section(const std::string& title) { std::cout << "\n== " << title << " ==\n\n"; }

// Prints a tensor indented by four spaces (operator<< gives a header line and the values).
template <typename T>
void show(const std::string& name, const Tensor<T>& t) {
  std::ostringstream os;
  os << t;
  std::istringstream lines(os.str());
  std::string line;
  std::cout << "  " << name << " = ";
  bool first = true;
  while (std::getline(lines, line)) {
    std::cout << (first ? "" : "      ") << line << "\n";
    first = false;
  }
}

// A 0-d (scalar) double tensor that requires grad: the micrograd Value.
TensorD scalar(double v) { return from_data<double>({v}, {}, /*requires_grad=*/true); }

// One line "name  received  expected  ok?" for a scalar check; updates ok.
void check_line(bool& ok, const std::string& name, double received, const std::string& formula, double expected,
                double tol = 1e-12) {
  const bool good = std::fabs(received - expected) <= tol;
  std::cout << "  " << std::left << std::setw(10) << name << std::right << std::fixed << std::setprecision(6)
            << std::setw(11) << received << "   by hand: " << std::left << std::setw(24) << formula << std::right
            << std::setw(11) << expected << (good ? "   ok" : "   WRONG") << "\n";
  ok = ok && good;
}

}  // namespace

int main(int argc, char** argv) {
  use_tutorial_threads();
  const std::string dot_path = argc > 1 ? argv[1] : "tensors_and_autograd.dot";
  bool ok = true;

  // ---- 1. Factories and printing ----------------------------------------------
  // A Tensor<T> is a handle to a node holding an xtensor array (row-major)
  // plus what autograd needs. T is float for training and double for checking;
  // TensorF and TensorD are the two spellings. Every random factory takes an
  // explicit, seeded Generator, so a run is reproduced by its seed.
  section("1. Making tensors");
  Generator gen(0);
  show("zeros<float>({2, 3})", zeros<float>({2, 3}));
  show("full<float>({2, 2}, 7)", full<float>({2, 2}, 7.f));
  show("arange<float>(6)", arange<float>(6.f));
  show("from_data({1..6}, {2, 3})", from_data<float>({1, 2, 3, 4, 5, 6}, {2, 3}));
  show("normal({2, 3}, 0, 1, gen, true)", normal<float>({2, 3}, 0.f, 1.f, gen, /*requires_grad=*/true));
  // Shapes are std::vector<std::size_t>; shape_str prints them.
  const TensorF six = reshape(arange<float>(6.f), {2, -1});  // -1: inferred (here 3)
  std::cout << "  reshape(arange(6), {2, -1}).shape() = " << shape_str(six.shape()) << ", numel " << six.numel()
            << ", op \"" << six.op() << "\"\n";
  ok = ok && six.shape() == Shape{2, 3};

  // ---- 2. Broadcasting --------------------------------------------------------
  // The elementwise ops (add, sub, mul, div) follow numpy: align the shapes on
  // the right; two sizes match when they are equal or one of them is 1 (it is
  // then repeated); a missing leading axis counts as 1. This is how a bias
  // (D) is added to every token of a batch (B, T, D).
  section("2. Broadcasting");
  ShapeTable bt;
  const TensorF a23 = ones<float>({2, 3}), row3 = arange<float>(3.f), col21 = from_data<float>({10, 20}, {2, 1});
  bt.add("a", "ones({2, 3})", "(2, 3)", a23.shape());
  bt.add("r", "arange(3)", "(3)", row3.shape());
  bt.add("c", "from_data({10, 20}, {2, 1})", "(2, 1)", col21.shape());
  const TensorF a_plus_r = a23 + row3;
  bt.add("a + r", "r repeated over the 2 rows", "(2, 3)", a_plus_r.shape());
  const TensorF c_times_r = col21 * row3;
  bt.add("c * r", "outer product by broadcasting", "(2, 3)", c_times_r.shape());
  const TensorF tokens = normal<float>({4, 5, 8}, 0.f, 1.f, gen);
  const TensorF bias = zeros<float>({8});
  bt.add("x + b", "(B, T, D) + (D)", "(B, T, D)", (tokens + bias).shape());
  const TensorF row_sums = sum(a_plus_r, {-1}, /*keepdim=*/true);
  bt.add("s", "sum(a + r, {-1}, keepdim)", "(2, 1)", row_sums.shape());
  bt.add("(a + r) / s", "each row / its sum", "(2, 3)", (a_plus_r / row_sums).shape());
  bt.add("mean(x)", "mean over all axes", "()", mean(tokens).shape());
  bt.print();
  show("c * r", c_times_r);
  ok = ok && max_abs_diff(c_times_r.value(), from_data<float>({0, 10, 20, 0, 20, 40}, {2, 3}).value()) == 0;
  // Shapes that do not broadcast throw a ShapeError that names the op and the shapes.
  try {
    (void)(a23 + ones<float>({2}));
    std::cout << "  (2, 3) + (2) did not throw\n";
    ok = false;
  } catch (const ShapeError& e) {
    std::cout << "  (2, 3) + (2) throws ShapeError: " << e.what() << "\n";
  }

  // ---- 3. A tiny computation and its backward ----------------------------------
  // micrograd's neuron: o = tanh(x1 w1 + x2 w2 + b), with Karpathy's numbers
  // (b is chosen so that n = 0.8814 and o = tanh(n) = 1/sqrt(2)).
  // Every op records its inputs, so the result knows how it was computed;
  // o.backward() then walks that graph from o back to the leaves, applying the
  // chain rule: each node adds dL/d(input) = dL/d(node) * d(node)/d(input).
  //
  // By hand, with do/dn = 1 - tanh(n)^2 = 1 - o^2 = 1/2:
  //   do/dx1 = w1 (1 - o^2),  do/dw1 = x1 (1 - o^2),  and the same for x2, w2;  do/db = 1 - o^2.
  section("3. micrograd's neuron, then a 2-layer network");
  const TensorD x1 = scalar(2.0), x2 = scalar(0.0), w1 = scalar(-3.0), w2 = scalar(1.0);
  const TensorD b = scalar(6.8813735870195432);
  const TensorD n = x1 * w1 + x2 * w2 + b;
  const TensorD o = tanh(n);
  o.backward();
  const double dn = 1.0 - o.item() * o.item();
  std::cout << "  n = x1 w1 + x2 w2 + b = " << std::fixed << std::setprecision(6) << n.item()
            << ",  o = tanh(n) = " << o.item() << ",  1 - o^2 = " << dn << "\n\n";
  check_line(ok, "do/dx1", x1.grad()(), "w1 (1 - o^2)", w1.item() * dn);
  check_line(ok, "do/dw1", w1.grad()(), "x1 (1 - o^2)", x1.item() * dn);
  check_line(ok, "do/dx2", x2.grad()(), "w2 (1 - o^2)", w2.item() * dn);
  check_line(ok, "do/dw2", w2.grad()(), "x2 (1 - o^2)", x2.item() * dn);
  check_line(ok, "do/db", b.grad()(), "1 - o^2", dn);
  // n is an intermediate ("non-leaf"): its gradient is used during the pass and
  // then dropped, unless n.retain_grad() was called before backward().
  std::cout << "  n.has_grad() after backward: " << (n.has_grad() ? "true" : "false")
            << " (intermediates keep it only with retain_grad())\n";

  // The same idea with matrices: a 2-layer network on one input row x (1, 2),
  //   h = tanh(x W1^T + b1)   (1, 3)      y = h W2^T + b2   (1, 1)      L = y
  // and by hand (g = 1 - h^2 elementwise):
  //   dL/dW2 = h,   dL/db2 = 1,   dL/dh = W2,   dL/dz = W2 * g  (z = the pre-activation),
  //   dL/dW1 = (dL/dz)^T x  (3, 2),   dL/db1 = dL/dz,   dL/dx = (dL/dz) W1.
  const TensorD x = from_data<double>({0.5, -1.0}, {1, 2}, true);
  const TensorD W1 = from_data<double>({0.1, -0.2, 0.4, 0.3, -0.5, 0.6}, {3, 2}, true);
  const TensorD b1 = from_data<double>({0.0, 0.1, -0.1}, {3}, true);
  const TensorD W2 = from_data<double>({0.7, -0.8, 0.9}, {1, 3}, true);
  const TensorD b2 = from_data<double>({0.05}, {1}, true);
  const TensorD z = linear(x, W1, b1);
  const TensorD hid = tanh(z);
  const TensorD y = linear(hid, W2, b2);
  const TensorD L = sum(y);  // one element; sum makes it a 0-d scalar
  ShapeTable mt;
  mt.add("x", "the input row", "(1, 2)", x.shape());
  mt.add("z", "x W1^T + b1", "(1, 3)", z.shape());
  mt.add("h", "tanh(z)", "(1, 3)", hid.shape());
  mt.add("y", "h W2^T + b2", "(1, 1)", y.shape());
  mt.add("L", "sum(y)", "()", L.shape());
  std::cout << "\n";
  mt.print();

  // The graph, drawn before backward() frees it (section 6 explains the file).
  const std::string dot = to_dot(L);
  L.backward();

  // The hand-derived gradients, computed directly on the arrays.
  const Array<double> h = hid.value();
  const Array<double> g = 1.0 - h * h;
  Array<double> dz = xt::zeros<double>({1, 3});
  for (std::size_t j = 0; j < 3; ++j) dz(0, j) = W2.value()(0, j) * g(0, j);
  Array<double> dW1 = xt::zeros<double>({3, 2}), dx = xt::zeros<double>({1, 2});
  for (std::size_t j = 0; j < 3; ++j)
    for (std::size_t i = 0; i < 2; ++i) {
      dW1(j, i) = dz(0, j) * x.value()(0, i);
      dx(0, i) += dz(0, j) * W1.value()(j, i);
    }
  Array<double> db1 = xt::zeros<double>({3});
  for (std::size_t j = 0; j < 3; ++j) db1(j) = dz(0, j);
  const Array<double> db2 = xt::ones<double>({1});
  std::cout << "\n  " << std::left << std::setw(8) << "grad" << std::setw(8) << "shape"
            << "max |autograd - by hand|\n";
  auto grad_check = [&](const std::string& name, const TensorD& t, const Array<double>& expected) {
    const double d = max_abs_diff(t.grad(), expected);
    std::cout << "  " << std::left << std::setw(8) << name << std::setw(8) << shape_str(t.shape()) << std::scientific
              << std::setprecision(1) << d << (d <= 1e-12 ? "  ok" : "  WRONG") << "\n";
    ok = ok && d <= 1e-12;
  };
  grad_check("dL/dW2", W2, h);
  grad_check("dL/db2", b2, db2);
  grad_check("dL/dW1", W1, dW1);
  grad_check("dL/db1", b1, db1);
  grad_check("dL/dx", x, dx);
  std::cout << "  W1.grad() =\n";
  {
    std::ostringstream os;
    os << W1.grad();
    std::istringstream lines(os.str());
    std::string line;
    while (std::getline(lines, line)) std::cout << "      " << line << "\n";
  }

  // ---- 4. Gradient accumulation -------------------------------------------------
  // A tensor used twice sits at the top of a diamond:  u -> (a = 3u, s = u*u) -> c = a + s.
  // The chain rule sums over paths, dc/du = 3 + 2u, and the engine does exactly
  // that: every backward_fn ADDS (+=) into its inputs' gradients.
  section("4. Gradient accumulation");
  {
    const TensorD u = scalar(2.0);
    const TensorD a = u * 3.0;
    const TensorD s = u * u;  // u twice in one op: the mul backward adds both halves
    const TensorD c = a + s;
    c.backward(/*retain_graph=*/true);
    check_line(ok, "dc/du", u.grad()(), "3 + 2u", 3.0 + 2.0 * u.item());
    // Gradients also accumulate across backward calls: run the same graph again
    // (we kept it with retain_graph) and the gradient doubles. Optimisers call
    // zero_grad() before each step for this reason.
    c.backward();
    check_line(ok, "again", u.grad()(), "2 (3 + 2u)", 2.0 * (3.0 + 2.0 * u.item()));
    u.zero_grad();
    std::cout << "  after u.zero_grad(): has_grad = " << (u.has_grad() ? "true" : "false") << "\n";
    ok = ok && !u.has_grad();
    // The second backward freed the graph: a third one is an error, not a silent zero.
    try {
      c.backward();
      std::cout << "  a third backward did not throw\n";
      ok = false;
    } catch (const AutogradError& e) {
      std::cout << "  a third backward throws AutogradError: " << e.what() << "\n";
    }
  }

  // ---- 5. Switching autograd off ----------------------------------------------
  // NoGradGuard: while it lives, ops record nothing (evaluation, optimiser
  // updates). detach(): the same value as a new leaf without history, so the
  // gradient stops there (a "stop-gradient"). With u's value in both factors,
  //   d/du [ u * u ]          = 2u
  //   d/du [ detach(u) * u ]  = u       (only the second factor is seen)
  section("5. NoGradGuard and detach()");
  {
    const TensorD u = scalar(3.0);
    {
      NoGradGuard no_grad;
      const TensorD inside = u * u;
      std::cout << "  inside NoGradGuard:  (u * u).requires_grad() = " << (inside.requires_grad() ? "true" : "false")
                << "\n";
      ok = ok && !inside.requires_grad();
    }
    const TensorD outside = u * u;
    std::cout << "  after it:            (u * u).requires_grad() = " << (outside.requires_grad() ? "true" : "false")
              << "\n";
    ok = ok && outside.requires_grad();
    const TensorD d = u.detach();
    std::cout << "  u.detach(): op \"" << d.op() << "\", requires_grad " << (d.requires_grad() ? "true" : "false")
              << ", same value " << d.item() << "\n";
    const TensorD p = d * u;
    p.backward();
    check_line(ok, "d/du", u.grad()(), "u (not 2u)", u.item());
  }

  // ---- 6. The graph, as Graphviz DOT ------------------------------------------
  // to_dot(L) writes one box per node (op | shape | "grad" when it requires
  // grad) and an arrow from every input to what was computed from it: the same
  // picture as micrograd's draw_dot. This is the 2-layer network of section 3.
  section("6. The graph of section 3 as Graphviz DOT");
  {
    bool written = dot.rfind("digraph", 0) == 0;
    try {
      write_file_atomic(dot_path, dot, "tutorial 00");  // the checked, atomic writer every command uses
    } catch (const IOError& e) {
      std::cout << "  " << e.what() << "\n";
      written = false;
    }
    const auto edges = std::count(dot.begin(), dot.end(), '>');
    std::cout << "  " << (written ? "wrote " : "could NOT write ") << dot_path << " (" << dot.size() << " bytes, "
              << edges << " edges); it begins:\n";
    std::istringstream lines(dot);
    std::string line;
    for (int i = 0; i < 6 && std::getline(lines, line); ++i) std::cout << "    " << line << "\n";
    std::cout << "    ...\n  render it with:  dot -Tsvg " << dot_path << " -o graph.svg\n";
    // x, W1, b1, W2, b2 -> linear, tanh, linear, sum: 9 nodes, 8 edges.
    ok = ok && written && edges == 8;
  }

  // ---- 7. gradcheck -----------------------------------------------------------
  // Every op's backward is tested against central differences in float64:
  // for a random upstream w, compare d(sum(w * f(x)))/dx[j] from backward()
  // with (L(x[j] + eps) - L(x[j] - eps)) / (2 eps). Here softmax over the last
  // axis, then a deliberately wrong op (x^3 with gradient 2x instead of 3x^2)
  // to see what a failure looks like.
  section("7. gradcheck: backward() against central differences");
  {
    const TensorD in = uniform<double>({2, 4}, -2.0, 2.0, gen, true);
    const GradcheckResult r =
        gradcheck("softmax", [](const std::vector<TensorD>& xs) { return softmax(xs[0], -1); }, {in});
    std::cout << "  softmax on (2, 4): " << (r.ok ? "ok" : "FAILED") << ", max |analytic - numeric| = "
              << std::scientific << std::setprecision(2) << r.max_abs_error << "\n";
    if (!r.ok) std::cout << r.message << "\n";
    ok = ok && r.ok;

    // A custom op: make_result takes the name, the forward value, the inputs and
    // the backward, which reads out.grad and accumulates into each input.
    auto wrong_cube = [](const std::vector<TensorD>& xs) {
      Array<double> v = xs[0].value() * xs[0].value() * xs[0].value();
      return make_result<double>("wrong_cube", std::move(v), {xs[0]}, [](Node<double>& out) {
        accumulate_grad(*out.inputs[0], Array<double>(out.grad * 2.0 * out.inputs[0]->value), "wrong_cube");
      });
    };
    const GradcheckResult bad = gradcheck("wrong_cube", wrong_cube, {uniform<double>({2, 2}, 0.5, 1.0, gen, true)});
    std::cout << "  wrong_cube: " << (bad.ok ? "ok (it should have failed!)" : "FAILED, as it should") << "; it says:\n";
    std::istringstream lines(bad.message);
    std::string line;
    if (std::getline(lines, line)) std::cout << "    " << line << "\n";
    ok = ok && !bad.ok;
  }

  std::cout << "\n" << (ok ? "all checks passed" : "SOME CHECK FAILED") << "\n";
  return ok ? 0 : 1;
}
