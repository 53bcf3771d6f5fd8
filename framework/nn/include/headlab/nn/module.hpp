// headlab/nn/module.hpp: the base of every layer: named parameters, children, train/eval.
//
// Parameter names follow PyTorch: a child registered as "out_proj" with a
// parameter "weight" appears as "out_proj.weight", so a state dict lines up
// with torch's nn.Module.state_dict() key for key.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab {

template <typename T>
class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;  // children are registered by address
  Module& operator=(const Module&) = delete;

  // (name, tensor) for every parameter of this module and its children, in
  // registration order. The tensors are handles: editing their values edits the module.
  // A tied tensor appears under each of its names (as in PyTorch's state_dict).
  std::vector<std::pair<std::string, Tensor<T>>> named_parameters(const std::string& prefix = "") const;
  std::vector<Tensor<T>> parameters() const;  // each tensor once, even when tied
  std::size_t parameter_count() const;        // total number of scalars, tied ones counted once
  // Makes this module's parameter `name` the very tensor `shared` (weight tying);
  // the shapes must agree (ShapeError otherwise).
  void tie_parameter(const std::string& name, const Tensor<T>& shared);
  Tensor<T> parameter(const std::string& name) const;  // throws ValueError listing the names

  // name -> a copy of each parameter's value, in registration order.
  using StateDict = std::vector<std::pair<std::string, Array<T>>>;
  StateDict state_dict() const;
  // Copies values in by name. Strict: every parameter must be given exactly
  // once with its shape and no unknown names may appear; otherwise throws
  // ValueError listing the missing, unexpected and mis-shaped entries, and the
  // module is left untouched.
  void load_state_dict(const StateDict& state);

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad() const;

 protected:
  Tensor<T>& register_parameter(const std::string& name, Tensor<T> value);
  void register_module(const std::string& name, Module<T>& child);

 private:
  std::vector<std::pair<std::string, Tensor<T>>> params_;
  std::vector<std::pair<std::string, Module<T>*>> children_;
  bool training_ = true;
};

}  // namespace headlab
