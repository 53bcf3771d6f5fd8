// mlp_demo.cpp: the smoke job. A 2 -> H -> 2 tanh MLP learns two interleaved
// spirals with full-batch gradient descent, all through the autograd engine.
//   h = tanh(x W1 + b1)   x (N, 2), W1 (2, H), b1 (H) -> h (N, H)
//   logits = h W2 + b2    W2 (H, 2), b2 (2)         -> (N, 2)
//   loss = cross_entropy(logits, labels)
#include <cmath>
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "headlab/headlab.hpp"

namespace headlab::cli {

int run_mlp_demo(const MlpDemoOptions& opt) {
  Generator gen(opt.seed);
  const std::size_t N = static_cast<std::size_t>(opt.points), H = static_cast<std::size_t>(opt.hidden);
  // An earlier graph of this demo is written again; any other file is kept.
  check_replaces_only_own(
      opt.dot_path, [](std::string_view head) { return head.rfind("digraph headlab {", 0) == 0; }, "mlp-demo --dot",
      "a graph headlab wrote");

  // Two spirals: class c's point i sits at angle t + c*pi, radius t, plus noise.
  std::vector<float> xy(N * 2);
  IndexArray labels = IndexArray::from_shape({N});
  for (std::size_t i = 0; i < N; ++i) {
    const int cls = static_cast<int>(i % 2);
    const double t = 0.5 + 2.5 * static_cast<double>(i / 2) / static_cast<double>(N / 2);
    const double angle = 1.8 * t + cls * 3.14159265358979;
    xy[2 * i] = static_cast<float>(t * std::cos(angle) / 3.0 + 0.02 * gen.normal());
    xy[2 * i + 1] = static_cast<float>(t * std::sin(angle) / 3.0 + 0.02 * gen.normal());
    labels(i) = cls;
  }
  const TensorF x = from_data<float>(xy, {N, 2});

  // PyTorch-style init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  const float b1 = 1.0f / std::sqrt(2.0f), b2 = 1.0f / std::sqrt(static_cast<float>(H));
  TensorF W1 = uniform<float>({2, H}, -b1, b1, gen, true);
  TensorF c1 = uniform<float>({H}, -b1, b1, gen, true);
  TensorF W2 = uniform<float>({H, 2}, -b2, b2, gen, true);
  TensorF c2 = uniform<float>({2}, -b2, b2, gen, true);
  std::vector<TensorF*> params{&W1, &c1, &W2, &c2};

  std::cout << "mlp-demo: two spirals, " << N << " points, 2 -> " << H << " -> 2 tanh MLP, seed " << opt.seed
            << ", lr " << opt.lr << "\n";
  float first = 0, last = 0;
  for (int step = 1; step <= opt.steps; ++step) {
    const TensorF h = tanh(matmul(x, W1) + c1);
    const TensorF logits = matmul(h, W2) + c2;
    const TensorF loss = cross_entropy(logits, labels);
    if (step == 1 && !opt.dot_path.empty()) {
      write_file_atomic(opt.dot_path, to_dot(loss), "mlp-demo --dot");
      std::cout << "wrote the graph of one step to " << opt.dot_path << "\n";
    }
    for (auto* p : params) p->zero_grad();
    loss.backward();
    {
      NoGradGuard no_grad;  // plain gradient descent: p <- p - lr * dL/dp
      for (auto* p : params) p->mutable_value() -= static_cast<float>(opt.lr) * p->grad();
    }
    last = loss.item();
    if (step == 1) first = last;
    if (!std::isfinite(last)) {
      std::cerr << "mlp-demo: loss became " << last << " at step " << step << "; lower --lr\n";
      return 1;
    }
    if (step == 1 || step % opt.log_every == 0 || step == opt.steps) {
      // Accuracy on the training points.
      std::size_t correct = 0;
      for (std::size_t i = 0; i < N; ++i) {
        const int pred = logits.value()(i, 1) > logits.value()(i, 0) ? 1 : 0;
        correct += pred == labels(i);
      }
      std::cout << "step " << std::setw(5) << step << "  loss " << std::fixed << std::setprecision(4) << last
                << "  accuracy " << std::setprecision(3) << static_cast<double>(correct) / N << "\n";
    }
  }
  std::cout << "loss " << first << " -> " << last << (last < first ? " (falling)" : " (NOT falling)") << "\n";
  return last < first ? 0 : 1;
}

}  // namespace headlab::cli
