// headlab/nn/hooks.hpp: named activation points, as TransformerLens names them, for reading a
// forward pass (a cache) and changing it (an edit that replaces an activation).
//
// A model given a HookPoints (set_hooks) calls at(name, activation) at each of its points:
//   activation -> edit(activation)  when an edit is set for that name (same shape, or ShapeError)
//   cache[name] = the activation it goes on with (detached)  when caching is on
// and goes on with what at() returns. A model without HookPoints (the default) skips every point:
// one null-pointer test each, nothing computed or copied. The names and shapes of the points are
// in docs/circuits.md.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab {

template <typename T>
class HookPoints {
 public:
  // activation (any shape) -> its replacement, of the same shape.
  using Edit = std::function<Tensor<T>(const Tensor<T>& activation)>;

  // Replaces the activation at `name` in every later forward (one edit per name; a second replaces it).
  void set_edit(const std::string& name, Edit edit);
  void clear_edits() { edits_.clear(); }
  // Keeps a detached copy of every point's activation (after its edit) in cache().
  void set_caching(bool on) { caching_ = on; }
  void clear_cache() {
    cache_.clear();
    seen_.clear();
    seen_set_.clear();
  }

  const std::map<std::string, Tensor<T>>& cache() const { return cache_; }
  // The cached activation at `name`; ValueError naming it (and a few names cached) when absent.
  const Tensor<T>& cached(const std::string& name) const;
  // Every name a forward has passed since the last clear_cache(), in the order first passed.
  const std::vector<std::string>& names_seen() const { return seen_; }
  // True when this forward must produce the activation at `name`: caching is on or an edit is set.
  // (Points that cost work to compute, hook_result and hook_pattern, are computed only then.)
  bool wants(const std::string& name) const { return caching_ || edits_.count(name) > 0; }

  bool has_edit(const std::string& name) const { return edits_.count(name) > 0; }

  // Called by the model at each point: the activation to go on with.
  Tensor<T> at(const std::string& name, const Tensor<T>& activation);

 private:
  std::map<std::string, Edit> edits_;
  std::map<std::string, Tensor<T>> cache_;
  std::vector<std::string> seen_;
  std::set<std::string> seen_set_;
  bool caching_ = false;
};

}  // namespace headlab
