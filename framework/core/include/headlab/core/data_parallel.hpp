// headlab/core/data_parallel.hpp: a training step's batch cut into parts, each part's forward and
// backward on its own thread with its own graph, the parts' gradients summed in a fixed order.
//
// Why: a small model's ops are too small to split (each would pay a wake-up and a barrier for a
// few microseconds of work), but its batch is not. One part per thread means one wake-up per step.
//
//   rows [0, R) -> P parts, part p = rows [p R / P, (p + 1) R / P)     (P = data_parallel_parts(R))
//   part p, on whichever pool thread takes it (headlab/core/threads.hpp):
//     (loss_p, tokens_p) = part_loss(begin, end, dropout_p)    loss_p: the mean over its tokens
//     backward of tokens_p * loss_p, the parameters' gradients kept in part p's LeafGradients
//   then on the caller, for p = 0 .. P-1 in order: param.grad += kept_p[param]
//   returned: sum_p tokens_p loss_p and sum_p tokens_p
// The parameters' gradients grow by the gradient of the *sum* over the tokens; the caller divides
// by the tokens for the mean (train/training_loop.cpp). Equal to the uncut batch's gradient to
// rounding (the parts' products are summed, not computed as one); the same thread count cuts the
// same parts and sums them in the same order: the same bits, whichever thread ran which part.
// Dropout: part p draws from its own generator, seeded by dropout.next_u64() in part order.
//
// Inside a part, ops run on its thread alone (a parallel_for inside a parallel_for is not split).
// The parameters' nodes are shared by the parts' graphs: forward only reads them, handles and
// reader counts are atomic (Node), and backward on a part's thread adds a parameter's gradient to
// the part's LeafGradients instead of the node (accumulate_grad asks LeafGradients::current()).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "headlab/core/random.hpp"
#include "headlab/core/tensor.hpp"

namespace headlab {

// Gradients of some leaves (the parameters) kept apart from the leaves themselves.
template <typename T>
class LeafGradients {
 public:
  explicit LeafGradients(const std::vector<Tensor<T>>& leaves);
  // While a Scope lives, backward on this thread adds the leaves' gradients here.
  class Scope {
   public:
    explicit Scope(LeafGradients& sink);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    LeafGradients* previous_;
  };
  // The active sink of the calling thread, or nullptr.
  static LeafGradients* current();
  // grad(node) += contribution when node is one of the leaves (true); false otherwise (untouched).
  bool add(const Node<T>* node, Array<T>& contribution);
  // Whether node is one of the leaves; if so, *kept is its gradient here (nullptr: none yet).
  bool find(const Node<T>* node, Array<T>** kept);
  // Each leaf's kept gradient added to its own (accumulate_grad), in the leaves' order; then empty.
  void move_into_leaves();

 private:
  std::vector<std::shared_ptr<Node<T>>> nodes_;  // distinct leaves, first-seen order
  std::unordered_map<const Node<T>*, std::size_t> index_;
  std::vector<Array<T>> grads_;
  std::vector<char> has_grad_;
};

// A part's forward: the mean loss over its target tokens and how many tokens that is.
struct PartLoss {
  Tensor<float> loss;
  std::size_t tokens = 0;
};
using PartLossFn = std::function<PartLoss(std::size_t begin, std::size_t end, Generator* dropout)>;

// How many parts a batch of `rows` rows is cut into: threads() when there are at least 4 rows per
// thread and the caller is not itself inside a parallel loop, otherwise 1 (no cut: the ops split).
std::size_t data_parallel_parts(std::size_t rows);

struct DataParallelResult {
  double loss_sum = 0;    // sum_p tokens_p loss_p
  std::size_t tokens = 0; // sum_p tokens_p
  bool finite = true;     // false: some part's loss was NaN or infinite (then no gradient was added)
};
// The step above over `parts` parts (at least 1, at most rows). dropout may be nullptr (none).
// An exception of a part (the first to be thrown, in time) is rethrown once all parts ended; no
// gradient is added then.
DataParallelResult data_parallel_backward(const std::vector<Tensor<float>>& params, std::size_t rows,
                                          std::size_t parts, const PartLossFn& part_loss, Generator* dropout);

}  // namespace headlab
