// tensor.cpp: Tensor handle, graph nodes, gradient mode, factories, printing.
#include "headlab/core/tensor.hpp"
#include "headlab/core/data_parallel.hpp"
#include "headlab/core/anomaly.hpp"

#include <cmath>
#include <ostream>

#include <xtensor/xio.hpp>

#include "headlab/core/random.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

// ---- Node -------------------------------------------------------------------
template <typename T>
Node<T>::~Node() {
  // Releasing inputs recursively would recurse once per node of a chain and
  // overflow the stack on deep graphs. Instead, take ownership of every input
  // this node holds last, and free them one at a time from an explicit stack.
  std::vector<std::shared_ptr<Node>> pending = std::move(inputs);
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    if (n && n.use_count() == 1) {
      for (auto& in : n->inputs) pending.push_back(std::move(in));
      n->inputs.clear();
    }
  }  // n is destroyed here with no inputs left, so its destructor does not recurse
}

template <typename T>
Shape Node<T>::shape() const {
  return value_freed ? freed_shape : detail::shape_of(value);
}

template <typename T>
void Node<T>::free_value_if_unused() noexcept {
  if (handles > 0 || value_readers > 0 || backward_reads_value || !backward_fn || value_freed) return;
  try {
    freed_shape = detail::shape_of(value);
    value = Array<T>();  // (a default xarray still holds one element)
  } catch (...) {  // no memory even for that: keep the value (this runs in a destructor)
    return;
  }
  value_freed = true;
}

// ---- Gradient mode --------------------------------------------------------
namespace {
thread_local bool g_grad_enabled = true;
}
bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

// ---- Tensor -----------------------------------------------------------------
template <typename T>
Tensor<T>::Tensor(Array<T> value, bool requires_grad) : node_(std::make_shared<Node<T>>()) {
  node_->value = std::move(value);
  node_->requires_grad = requires_grad;
  add_handle();
}

template <typename T>
Tensor<T> Tensor<T>::from_node(std::shared_ptr<Node<T>> node) {
  Tensor t;
  t.node_ = std::move(node);
  t.add_handle();
  return t;
}

namespace {
template <typename T>
const Node<T>& checked(const std::shared_ptr<Node<T>>& node) {
  if (!node) throw ValueError("Tensor: use of an undefined tensor");
  if (node->value_freed) {
    throw AutogradError("Tensor: the value of op " + node->op + " (shape " + shape_str(node->freed_shape) +
                        ") was freed: no handle held it and no backward reads it");
  }
  return *node;
}
}  // namespace

template <typename T> const Array<T>& Tensor<T>::value() const { return checked(node_).value; }
template <typename T> Array<T>& Tensor<T>::mutable_value() {
  checked(node_);
  return node_->value;
}
template <typename T> bool Tensor<T>::has_grad() const { return checked(node_).has_grad; }
template <typename T> const Array<T>& Tensor<T>::grad() const {
  const Node<T>& n = checked(node_);
  if (!n.has_grad) {
    throw AutogradError("grad: tensor (op " + n.op + ", shape " + shape_str(shape()) +
                        ") has no gradient; " +
                        (n.requires_grad ? "backward has not reached it (or it is a non-leaf without retain_grad)"
                                         : "it does not require grad"));
  }
  return n.grad;
}
template <typename T> Shape Tensor<T>::shape() const { return checked(node_).shape(); }
template <typename T> std::size_t Tensor<T>::dim() const { return checked(node_).value.dimension(); }
template <typename T> std::size_t Tensor<T>::numel() const { return checked(node_).value.size(); }
template <typename T> std::size_t Tensor<T>::size(std::ptrdiff_t axis) const {
  const Shape s = shape();
  return s[detail::normalize_axis(axis, s.size(), "size", s)];
}
template <typename T> T Tensor<T>::item() const {
  const Node<T>& n = checked(node_);
  if (n.value.size() != 1) {
    throw ShapeError("item: tensor of shape " + shape_str(shape()) + " has " + std::to_string(n.value.size()) +
                     " elements, not 1");
  }
  return n.value.data()[0];
}
template <typename T> const std::string& Tensor<T>::op() const { return checked(node_).op; }
template <typename T> bool Tensor<T>::requires_grad() const { return checked(node_).requires_grad; }

template <typename T>
Tensor<T>& Tensor<T>::set_requires_grad(bool flag) {
  checked(node_);
  if (!node_->is_leaf()) {
    throw AutogradError("set_requires_grad: only leaf tensors can change requires_grad (this one comes from op " +
                        node_->op + "); use detach() first");
  }
  node_->requires_grad = flag;
  return *this;
}

template <typename T>
Tensor<T>& Tensor<T>::retain_grad() {
  checked(node_);
  node_->retains_grad = true;
  return *this;
}

template <typename T>
void Tensor<T>::zero_grad() const {
  checked(node_);
  node_->has_grad = false;
  node_->grad = Array<T>();
}

template <typename T>
Tensor<T> Tensor<T>::detach() const {
  Tensor out;
  out.node_ = std::make_shared<Node<T>>();
  out.add_handle();
  out.node_->value = checked(node_).value;
  out.node_->op = "detach";
  return out;
}

// ---- Building op results ----------------------------------------------------
template <typename T>
Tensor<T> make_result(const char* op, Array<T> value, std::vector<Tensor<T>> inputs,
                      std::function<void(Node<T>&)> backward_fn, ValueUse use) {
  if (anomaly_detection_enabled()) detail::check_forward_anomaly(op, value, inputs);
  auto node = std::make_shared<Node<T>>();
  node->value = std::move(value);
  node->op = op;
  bool any = false;
  if (grad_enabled()) {
    for (const auto& in : inputs) any = any || in.requires_grad();
  }
  if (any) {
    node->requires_grad = true;
    node->backward_fn = std::move(backward_fn);
    node->backward_reads_value = use.output;
    node->inputs.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      node->inputs.push_back(inputs[i].node());
      if (i >= 32 || ((use.inputs >> i) & 1u)) ++node->inputs.back()->value_readers;
    }
  }
  return Tensor<T>::from_node(std::move(node));
}

template <typename T>
void accumulate_grad(Node<T>& input, Array<T>&& contribution, const std::string& op) {
  if (!input.requires_grad) return;
  const Shape input_shape = input.shape();
  if (!std::equal(contribution.shape().begin(), contribution.shape().end(), input_shape.begin(), input_shape.end())) {
    throw GradientShapeError(op + " backward: gradient of shape " + shape_str(detail::shape_of(contribution)) +
                             " for an input of shape " + shape_str(input_shape));
  }
  if (LeafGradients<T>* sink = LeafGradients<T>::current(); sink && sink->add(&input, contribution)) return;
  if (!input.has_grad) {
    input.grad = std::move(contribution);
    input.has_grad = true;
  } else {
    T* g = input.grad.data();
    const T* c = contribution.data();
    const std::size_t n = input.grad.size();
    for (std::size_t i = 0; i < n; ++i) g[i] += c[i];
  }
}

template <typename T>
Array<T>* grad_to_add_into(Node<T>& input) {
  if (LeafGradients<T>* sink = LeafGradients<T>::current()) {
    Array<T>* kept = nullptr;
    if (sink->find(&input, &kept)) return kept;
  }
  return input.has_grad ? &input.grad : nullptr;
}

// ---- Factories ------------------------------------------------------------
template <typename T> Tensor<T> zeros(const Shape& shape, bool rg) { return Tensor<T>(xt::zeros<T>(shape), rg); }
template <typename T> Tensor<T> ones(const Shape& shape, bool rg) { return Tensor<T>(xt::ones<T>(shape), rg); }
template <typename T> Tensor<T> full(const Shape& shape, T fill, bool rg) {
  Array<T> a = detail::empty_array<T>(shape);
  a.fill(fill);
  return Tensor<T>(std::move(a), rg);
}
template <typename T> Tensor<T> arange(T stop) { return arange<T>(T(0), stop, T(1)); }
template <typename T> Tensor<T> arange(T start, T stop, T step) {
  if (step == T(0)) throw ValueError("arange: step must not be 0");
  const double count = std::ceil((double(stop) - double(start)) / double(step));
  const std::size_t n = count > 0 ? static_cast<std::size_t>(count) : 0;
  Array<T> a = detail::empty_array<T>({n});
  for (std::size_t i = 0; i < n; ++i) a.data()[i] = start + T(i) * step;
  return Tensor<T>(std::move(a));
}
template <typename T>
Tensor<T> from_data(const std::vector<T>& data, const Shape& shape, bool rg) {
  if (data.size() != detail::numel_of(shape)) {
    throw ShapeError("from_data: " + std::to_string(data.size()) + " values cannot fill shape " + shape_str(shape) +
                     " (" + std::to_string(detail::numel_of(shape)) + " elements)");
  }
  Array<T> a = detail::empty_array<T>(shape);
  std::copy(data.begin(), data.end(), a.data());
  return Tensor<T>(std::move(a), rg);
}
template <typename T>
Tensor<T> uniform(const Shape& shape, T low, T high, Generator& gen, bool rg) {
  Array<T> a = detail::empty_array<T>(shape);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<T>(gen.uniform(low, high));
  return Tensor<T>(std::move(a), rg);
}
template <typename T>
Tensor<T> normal(const Shape& shape, T mean, T stddev, Generator& gen, bool rg) {
  Array<T> a = detail::empty_array<T>(shape);
  for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<T>(mean + stddev * gen.normal());
  return Tensor<T>(std::move(a), rg);
}
template <typename To, typename From>
Tensor<To> cast(const Tensor<From>& x) {
  Array<To> a = xt::cast<To>(x.value());
  return Tensor<To>(std::move(a), x.requires_grad());
}

template <typename T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& t) {
  if (!t.defined()) return os << "Tensor(undefined)";
  os << "Tensor(shape=" << shape_str(t.shape()) << ", op=" << t.op()
     << ", requires_grad=" << (t.requires_grad() ? "true" : "false") << ")\n"
     << t.value();
  return os;
}

// ---- Explicit instantiation ---------------------------------------------------
#define INSTANTIATE(T)                                                                                   \
  template struct Node<T>;                                                                               \
  template class Tensor<T>;                                                                              \
  template Tensor<T> make_result<T>(const char*, Array<T>, std::vector<Tensor<T>>,                       \
                                    std::function<void(Node<T>&)>, ValueUse);                            \
  template void accumulate_grad<T>(Node<T>&, Array<T>&&, const std::string&);                            \
  template Array<T>* grad_to_add_into<T>(Node<T>&);                            \
  template Tensor<T> zeros<T>(const Shape&, bool);                                                       \
  template Tensor<T> ones<T>(const Shape&, bool);                                                        \
  template Tensor<T> full<T>(const Shape&, T, bool);                                                     \
  template Tensor<T> arange<T>(T);                                                                       \
  template Tensor<T> arange<T>(T, T, T);                                                                 \
  template Tensor<T> from_data<T>(const std::vector<T>&, const Shape&, bool);                            \
  template Tensor<T> uniform<T>(const Shape&, T, T, Generator&, bool);                                   \
  template Tensor<T> normal<T>(const Shape&, T, T, Generator&, bool);                                    \
  template std::ostream& operator<< <T>(std::ostream&, const Tensor<T>&);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE
template Tensor<float> cast<float, double>(const Tensor<double>&);
template Tensor<double> cast<double, float>(const Tensor<float>&);
template Tensor<float> cast<float, float>(const Tensor<float>&);
template Tensor<double> cast<double, double>(const Tensor<double>&);

}  // namespace headlab
