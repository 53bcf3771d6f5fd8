// core/data_parallel.cpp: parts of a batch on the pool's threads (headlab/core/data_parallel.hpp).
#include "headlab/core/data_parallel.hpp"

#include <cmath>
#include <exception>

#include "headlab/core/anomaly.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/core/threads.hpp"

namespace headlab {

namespace {
template <typename T>
LeafGradients<T>*& current_sink() {
  thread_local LeafGradients<T>* sink = nullptr;
  return sink;
}
}  // namespace

template <typename T>
LeafGradients<T>::LeafGradients(const std::vector<Tensor<T>>& leaves) {
  for (const Tensor<T>& leaf : leaves) {
    if (!leaf.defined() || !leaf.node()->is_leaf()) throw ValueError("LeafGradients: every tensor must be a leaf");
    if (index_.emplace(leaf.node().get(), nodes_.size()).second) nodes_.push_back(leaf.node());
  }
  grads_.resize(nodes_.size());
  has_grad_.assign(nodes_.size(), 0);
}

template <typename T>
LeafGradients<T>::Scope::Scope(LeafGradients& sink) : previous_(current_sink<T>()) {
  current_sink<T>() = &sink;
}
template <typename T>
LeafGradients<T>::Scope::~Scope() {
  current_sink<T>() = previous_;
}
template <typename T>
LeafGradients<T>* LeafGradients<T>::current() {
  return current_sink<T>();
}

template <typename T>
bool LeafGradients<T>::add(const Node<T>* node, Array<T>& contribution) {
  const auto found = index_.find(node);
  if (found == index_.end()) return false;
  const std::size_t i = found->second;
  if (!has_grad_[i]) {
    grads_[i] = std::move(contribution);
    has_grad_[i] = 1;
  } else {  // g += c (shapes checked by accumulate_grad)
    T* g = grads_[i].data();
    const T* c = contribution.data();
    for (std::size_t k = 0, n = grads_[i].size(); k < n; ++k) g[k] += c[k];
  }
  return true;
}

template <typename T>
bool LeafGradients<T>::find(const Node<T>* node, Array<T>** kept) {
  const auto found = index_.find(node);
  if (found == index_.end()) return false;
  *kept = has_grad_[found->second] ? &grads_[found->second] : nullptr;
  return true;
}

template <typename T>
void LeafGradients<T>::move_into_leaves() {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!has_grad_[i]) continue;
    const bool added = nodes_[i]->has_grad;  // a sum, not a move: an earlier part's (or micro-batch's) is there
    accumulate_grad(*nodes_[i], std::move(grads_[i]), "data-parallel gradient sum");
    grads_[i] = Array<T>();
    has_grad_[i] = 0;
    if (added && anomaly_detection_enabled()) detail::check_gradient_sum_anomaly(nodes_[i]->grad, i);
  }
}

template class LeafGradients<float>;
template class LeafGradients<double>;

std::size_t data_parallel_parts(std::size_t rows) {
  // At least kRowsPerPart rows a part: the parts' sizes then differ by at most 1 row in 4 (below the
  // SlowWorkerGuard's 1.5), and no thread is left without rows; fewer rows: the ops split instead.
  constexpr std::size_t kRowsPerPart = 4;
  const std::size_t T = parallel_chunks(rows, min_parallel_work());  // threads(), or 1 inside a loop
  return T > 1 && rows >= kRowsPerPart * T ? T : 1;
}

DataParallelResult data_parallel_backward(const std::vector<Tensor<float>>& params, std::size_t rows,
                                          std::size_t parts, const PartLossFn& part_loss, Generator* dropout) {
  if (parts < 1 || parts > rows) {
    throw ValueError("data_parallel_backward: " + std::to_string(parts) + " parts for " + std::to_string(rows) +
                     " rows (need 1 <= parts <= rows)");
  }
  struct Part {
    std::unique_ptr<LeafGradients<float>> grads;
    std::unique_ptr<Generator> dropout;
    double loss = 0;
    std::size_t tokens = 0;
  };
  std::vector<Part> state(parts);
  for (Part& part : state) {  // in part order, on the caller: the draws do not depend on timing
    part.grads = std::make_unique<LeafGradients<float>>(params);
    if (dropout) part.dropout = std::make_unique<Generator>(dropout->next_u64());
  }
  parallel_parts(parts, [&](std::size_t p) {
    Part& part = state[p];
    const std::size_t begin = p * rows / parts, end = (p + 1) * rows / parts;
    const typename LeafGradients<float>::Scope scope(*part.grads);
    const PartLoss result = part_loss(begin, end, part.dropout.get());
    part.loss = double(result.loss.item());
    part.tokens = result.tokens;
    if (!std::isfinite(part.loss)) return;  // no backward: the caller reports it
    Array<float> upstream = result.loss.value();  // d(tokens_p loss_p)/d loss_p = tokens_p
    upstream.fill(static_cast<float>(result.tokens));
    result.loss.backward(upstream);
  });
  DataParallelResult total;
  for (const Part& part : state) {
    if (!std::isfinite(part.loss)) total.finite = false;
    total.loss_sum += part.loss * double(part.tokens);
    total.tokens += part.tokens;
  }
  if (!total.finite) return total;
  for (Part& part : state) part.grads->move_into_leaves();
  return total;
}

}  // namespace headlab
