// nn/hooks.cpp: named activation points (headlab/nn/hooks.hpp).
#include "headlab/nn/hooks.hpp"

#include "headlab/core/errors.hpp"
#include "headlab/core/shape_utils.hpp"

namespace headlab {

template <typename T>
void HookPoints<T>::set_edit(const std::string& name, Edit edit) {
  if (!edit) throw ValueError("hooks: the edit for " + name + " is empty");
  edits_[name] = std::move(edit);
}

template <typename T>
const Tensor<T>& HookPoints<T>::cached(const std::string& name) const {
  const auto it = cache_.find(name);
  if (it != cache_.end()) return it->second;
  std::string some;
  std::size_t listed = 0;
  for (const auto& [n, _] : cache_) {
    if (listed++ == 4) break;
    some += (some.empty() ? "" : ", ") + n;
  }
  throw ValueError("hooks: no cached activation '" + name + "'" +
                   (cache_.empty() ? " (nothing cached: caching off, or no forward yet)"
                                   : " (cached: " + some + (cache_.size() > 4 ? ", ..." : "") + ")"));
}

template <typename T>
Tensor<T> HookPoints<T>::at(const std::string& name, const Tensor<T>& activation) {
  if (seen_set_.insert(name).second) seen_.push_back(name);
  Tensor<T> out = activation;
  if (const auto it = edits_.find(name); it != edits_.end()) {
    out = it->second(activation);
    if (!out.defined() || out.shape() != activation.shape()) {
      throw ShapeError("hooks: the edit at " + name + " returned " +
                       (out.defined() ? shape_str(out.shape()) : std::string("nothing")) + " for an activation " +
                       shape_str(activation.shape()));
    }
  }
  if (caching_) cache_[name] = out.detach();
  return out;
}

template class HookPoints<float>;
template class HookPoints<double>;

}  // namespace headlab
