// examples/mlp_classifier: a two-layer perceptron learns a 3-class spiral, trained by a
// hand-written loop with headlab's tensors, ops, nn::Linear and the Adam optimiser.
//
// Data: for class c = 0, 1, 2 and t uniform in [0, 1), a point of the spiral arm c,
//     r = t,   theta = 4 t + 2 pi c / 3 + noise,   x = (r cos theta, r sin theta).
// No straight line separates the arms, so a linear model is stuck near 1/3 .. 1/2 accuracy.
//
// Model (N points at a time):
//     h      = relu(x W1^T + b1)      x (N, 2),  W1 (H, 2),  h (N, H)
//     logits = h W2^T + b2            W2 (3, H),  logits (N, 3)
//     loss   = mean_n -log softmax(logits_n)[y_n]          (cross entropy)
//
// The program exits 1 unless the loss falls to under a quarter of where it started and the
// accuracy on fresh test points from the same spiral reaches 90%.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "headlab/core/random.hpp"
#include "headlab/core/tensor.hpp"
#include "headlab/nn/layers.hpp"
#include "headlab/nn/module.hpp"
#include "headlab/ops/ops.hpp"
#include "headlab/optim/optim.hpp"

using namespace headlab;

namespace {

constexpr std::size_t kClasses = 3;

struct Dataset {
  TensorF x;         // (N, 2) points
  IndexArray y;      // (N) class ids
};

// n points per class along the three spiral arms, drawn from gen.
Dataset make_spiral(std::size_t n, Generator& gen) {
  const double pi = std::acos(-1.0);
  std::vector<float> xy;
  IndexArray y = IndexArray::from_shape({n * kClasses});
  for (std::size_t c = 0; c < kClasses; ++c) {
    for (std::size_t i = 0; i < n; ++i) {
      const double t = gen.uniform01();
      const double theta = 4.0 * t + 2.0 * pi * double(c) / kClasses + 0.2 * gen.normal();
      xy.push_back(float(t * std::cos(theta)));
      xy.push_back(float(t * std::sin(theta)));
      y(c * n + i) = std::int64_t(c);
    }
  }
  return {from_data<float>(xy, {n * kClasses, 2}), y};
}

// A Module registers its children, so model.parameters() lists W1, b1, W2, b2 for the optimiser.
class MLP : public Module<float> {
 public:
  MLP(std::size_t hidden, Generator& gen) : fc1_(2, hidden, true, gen), fc2_(hidden, kClasses, true, gen) {
    register_module("fc1", fc1_);
    register_module("fc2", fc2_);
  }
  TensorF forward(const TensorF& x) const { return fc2_.forward(relu(fc1_.forward(x))); }  // (N, 2) -> (N, 3)

 private:
  Linear<float> fc1_, fc2_;
};

// Fraction of rows whose largest logit is the true class.
double accuracy(const TensorF& logits, const IndexArray& y) {
  const Array<float>& v = logits.value();  // (N, 3)
  std::size_t right = 0;
  for (std::size_t n = 0; n < y.size(); ++n) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < kClasses; ++c) {
      if (v(n, c) > v(n, best)) best = c;
    }
    right += std::int64_t(best) == y(n);
  }
  return double(right) / double(y.size());
}

}  // namespace

int main() {
  Generator gen(42);  // one seed: the same data, initial weights and result every run
  const Dataset train = make_spiral(100, gen), test = make_spiral(100, gen);
  MLP model(64, gen);
  std::printf("spiral: train x %s, test x %s; MLP 2 -> 64 -> 3 with %zu parameters\n",
              shape_str(train.x.shape()).c_str(), shape_str(test.x.shape()).c_str(), model.parameter_count());

  AdamOptions adam;
  adam.lr = 0.02;
  Adam<float> opt(model.parameters(), adam);

  // The training loop: full batch (all 300 points) each step.
  const std::size_t steps = 400;
  double first_loss = 0, last_loss = 0;
  for (std::size_t step = 1; step <= steps; ++step) {
    opt.zero_grad();                                     // gradients accumulate: clear them first
    const TensorF logits = model.forward(train.x);       // (300, 3)
    const TensorF loss = cross_entropy(logits, train.y); // 0-d tensor
    loss.backward();                                     // fills p.grad() for W1, b1, W2, b2
    opt.step();                                          // p <- p - Adam update
    last_loss = loss.item();
    if (step == 1) first_loss = last_loss;
    if (step == 1 || step % 100 == 0) std::printf("  step %3zu  loss %.4f\n", step, last_loss);
  }

  // Evaluation needs no graph: NoGradGuard turns recording off.
  NoGradGuard no_grad;
  const double train_acc = accuracy(model.forward(train.x), train.y);
  const double test_acc = accuracy(model.forward(test.x), test.y);
  std::printf("loss %.4f -> %.4f, accuracy train %.1f%%, test %.1f%%\n", first_loss, last_loss, 100 * train_acc,
              100 * test_acc);

  const bool ok = last_loss < 0.25 * first_loss && test_acc >= 0.90;
  std::printf("%s\n", ok ? "OK: the loss fell below a quarter and test accuracy >= 90%"
                         : "FAILED: expected loss < first/4 and test accuracy >= 90%");
  return ok ? 0 : 1;
}
