// anomaly.cpp: anomaly detection (see headlab/core/anomaly.hpp).
#include "headlab/core/anomaly.hpp"

#include <cmath>
#include <cstring>
#include <string>

#include "headlab/core/shape_utils.hpp"

namespace headlab {

namespace {
bool g_anomaly_detection = false;

// Which non-finite kinds an array holds, and the first element of each.
struct NonFinite {
  bool nan = false, pos_inf = false, neg_inf = false;
  std::size_t first = 0;
  bool any() const { return nan || pos_inf || neg_inf; }
};

template <typename T>
NonFinite scan(const Array<T>& a) {
  NonFinite k;
  const T* p = a.data();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isfinite(p[i])) continue;
    if (!k.any()) k.first = i;
    if (std::isnan(p[i])) k.nan = true;
    else if (p[i] > 0) k.pos_inf = true;
    else k.neg_inf = true;
  }
  return k;
}

std::string kinds(bool nan, bool pos, bool neg) {
  std::string s;
  auto add = [&](const char* what) { s += (s.empty() ? "" : " and ") + std::string(what); };
  if (nan) add("NaN");
  if (pos) add("+inf");
  if (neg) add("-inf");
  return s;
}

template <typename T>
std::string shapes_of(const std::vector<Tensor<T>>& inputs) {
  std::string s;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    s += (i ? ", " : "") + (inputs[i].defined() ? shape_str(inputs[i].shape()) : std::string("undefined"));
  return "[" + s + "]";
}
}  // namespace

void set_anomaly_detection(bool on) { g_anomaly_detection = on; }
bool anomaly_detection_enabled() { return g_anomaly_detection; }
AnomalyGuard::AnomalyGuard() : previous_(g_anomaly_detection) { g_anomaly_detection = true; }
AnomalyGuard::~AnomalyGuard() { g_anomaly_detection = previous_; }

namespace detail {

template <typename T>
void check_forward_anomaly(const char* op, const Array<T>& output, const std::vector<Tensor<T>>& inputs) {
  const NonFinite out = scan(output);
  if (!out.any()) return;
  NonFinite in;
  for (const auto& x : inputs) {
    if (!x.defined()) continue;
    const NonFinite k = scan(x.value());
    in.nan |= k.nan;
    in.pos_inf |= k.pos_inf;
    in.neg_inf |= k.neg_inf;
  }
  const bool fills_masks = std::strcmp(op, "masked_fill") == 0 || std::strcmp(op, "where") == 0;
  const bool new_nan = out.nan && !in.nan;
  const bool new_pos = out.pos_inf && !in.pos_inf && !fills_masks;
  const bool new_neg = out.neg_inf && !in.neg_inf && !fills_masks;
  if (!(new_nan || new_pos || new_neg)) return;
  throw NumericalError("anomaly detection: the forward of '" + std::string(op) + "' produced " +
                       kinds(new_nan, new_pos, new_neg) + " (first non-finite output element " +
                       std::to_string(out.first) + " of shape " + shape_str(detail::shape_of(output)) +
                       ") from finite inputs of shapes " + shapes_of(inputs));
}

// The inputs' gradients after the op's backward: where backward adds them, which for a leaf inside a
// data-parallel part is that part's LeafGradients, not the leaf (grad_to_add_into finds either).
template <typename T>
void check_backward_anomaly(const Node<T>& node) {
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const Array<T>* grad = grad_to_add_into(*node.inputs[i]);
    if (!grad) continue;
    const NonFinite k = scan(*grad);
    if (!k.any()) continue;
    std::string shapes;
    for (std::size_t j = 0; j < node.inputs.size(); ++j)
      shapes += (j ? ", " : "") + shape_str(node.inputs[j]->shape());
    throw NumericalError("anomaly detection: the backward of '" + node.op + "' produced " +
                         kinds(k.nan, k.pos_inf, k.neg_inf) + " in the gradient of its input " + std::to_string(i) +
                         " (element " + std::to_string(k.first) + "); the op's inputs have shapes [" + shapes +
                         "], its output " + shape_str(node.shape()));
  }
}

template <typename T>
void check_gradient_sum_anomaly(const Array<T>& sum, std::size_t leaf) {
  const NonFinite k = scan(sum);
  if (!k.any()) return;
  throw NumericalError("anomaly detection: the data-parallel sum of the parts' gradients produced " +
                       kinds(k.nan, k.pos_inf, k.neg_inf) + " in the gradient of parameter " + std::to_string(leaf) +
                       " (element " + std::to_string(k.first) + " of shape " + shape_str(detail::shape_of(sum)) +
                       "), adding a finite part to what the parameter held (earlier parts, or earlier "
                       "micro-batches with --grad-accum)");
}

#define INSTANTIATE(T)                                                                                  \
  template void check_forward_anomaly<T>(const char*, const Array<T>&, const std::vector<Tensor<T>>&); \
  template void check_backward_anomaly<T>(const Node<T>&);                                              \
  template void check_gradient_sum_anomaly<T>(const Array<T>&, std::size_t);
HEADLAB_INSTANTIATE(INSTANTIATE)
#undef INSTANTIATE

}  // namespace detail
}  // namespace headlab
