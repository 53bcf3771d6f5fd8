// module.cpp: parameter registry shared by every layer.
#include "headlab/nn/module.hpp"

#include <map>
#include <set>

#include "headlab/core/shape_utils.hpp"

namespace headlab {

template <typename T>
std::vector<std::pair<std::string, Tensor<T>>> Module<T>::named_parameters(const std::string& prefix) const {
  std::vector<std::pair<std::string, Tensor<T>>> out;
  for (const auto& [name, p] : params_) out.emplace_back(prefix + name, p);
  for (const auto& [name, child] : children_) {
    for (auto& entry : child->named_parameters(prefix + name + ".")) out.push_back(std::move(entry));
  }
  return out;
}

template <typename T>
std::vector<Tensor<T>> Module<T>::parameters() const {
  std::vector<Tensor<T>> out;
  std::set<const Node<T>*> seen;
  for (auto& [name, p] : named_parameters())
    if (seen.insert(p.node().get()).second) out.push_back(p);
  return out;
}

template <typename T>
void Module<T>::tie_parameter(const std::string& name, const Tensor<T>& shared) {
  for (auto& [n, p] : params_) {
    if (n != name) continue;
    if (p.shape() != shared.shape()) {
      throw ShapeError("tie_parameter: '" + name + "' has shape " + shape_str(p.shape()) + ", the shared tensor " +
                       shape_str(shared.shape()));
    }
    p = shared;
    return;
  }
  throw ValueError("tie_parameter: this module has no parameter '" + name + "' of its own");
}

template <typename T>
std::size_t Module<T>::parameter_count() const {
  std::size_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

template <typename T>
Tensor<T> Module<T>::parameter(const std::string& name) const {
  std::string known;
  for (auto& [n, p] : named_parameters()) {
    if (n == name) return p;
    known += (known.empty() ? "" : ", ") + n;
  }
  throw ValueError("no parameter named '" + name + "'; this module has: " + known);
}

template <typename T>
typename Module<T>::StateDict Module<T>::state_dict() const {
  StateDict out;
  for (const auto& [name, p] : named_parameters()) out.emplace_back(name, p.value());
  return out;
}

template <typename T>
void Module<T>::load_state_dict(const StateDict& state) {
  auto params = named_parameters();
  std::map<std::string, const Array<T>*> given;
  std::vector<std::string> unexpected, missing, misshaped, repeated;
  for (const auto& [name, value] : state) {
    if (!given.emplace(name, &value).second) repeated.push_back(name);
  }
  std::set<std::string> known;
  for (const auto& [name, p] : params) {
    known.insert(name);
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (detail::shape_of(*it->second) != p.shape()) {
      misshaped.push_back(name + " (expected " + shape_str(p.shape()) + ", got " +
                          shape_str(detail::shape_of(*it->second)) + ")");
    }
  }
  for (const auto& [name, value] : given) {
    if (!known.count(name)) unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !misshaped.empty() || !repeated.empty()) {
    std::string msg = "load_state_dict: the state does not match the module";
    // The first three names of each kind, then a count: a deep model's every tensor would make a
    // message of kilobytes on one line.
    auto list = [&](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      constexpr std::size_t kShown = 3;
      msg += std::string("; ") + what + " (" + std::to_string(names.size()) + "): ";
      for (std::size_t i = 0; i < names.size() && i < kShown; ++i) msg += (i ? ", " : "") + names[i];
      if (names.size() > kShown) msg += " and " + std::to_string(names.size() - kShown) + " more";
    };
    list("missing", missing);
    list("unexpected", unexpected);
    list("wrong shape", misshaped);
    list("repeated", repeated);
    throw ValueError(msg);
  }
  // A tied tensor is given once per name: its values must agree.
  std::map<const Node<T>*, std::string> first_name;
  for (auto& [name, p] : params) {
    auto [it, fresh] = first_name.emplace(p.node().get(), name);
    if (!fresh && *given.at(name) != *given.at(it->second)) {
      throw ValueError("load_state_dict: " + name + " and " + it->second +
                       " are the same (tied) tensor but the state gives them different values");
    }
  }
  for (auto& [name, p] : params) p.mutable_value() = *given.at(name);
}

template <typename T>
void Module<T>::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

template <typename T>
void Module<T>::zero_grad() const {
  for (const auto& p : parameters()) p.zero_grad();
}

template <typename T>
Tensor<T>& Module<T>::register_parameter(const std::string& name, Tensor<T> value) {
  for (const auto& [n, p] : params_) {
    if (n == name) throw ValueError("register_parameter: '" + name + "' registered twice");
  }
  value.set_requires_grad(true);
  params_.emplace_back(name, std::move(value));
  return params_.back().second;
}

template <typename T>
void Module<T>::register_module(const std::string& name, Module<T>& child) {
  children_.emplace_back(name, &child);
}

template class Module<float>;
template class Module<double>;

}  // namespace headlab
