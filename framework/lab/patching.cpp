// lab/patching.cpp: activation patching (headlab/lab/patching.hpp).
#include "headlab/lab/patching.hpp"

#include <cmath>

#include <xtensor/xview.hpp>

#include "headlab/ops/ops.hpp"

namespace headlab {

namespace {

// A forward of `inputs` under `hooks`: the mean logit difference.
double run_difference(DecoderOnlyLM<float>& model, HookPoints<float>& hooks, const IndexArray& inputs,
                      const CircuitProbe& probe) {
  struct Attached {  // the model never keeps a pointer to these hooks, even when the forward throws
    DecoderOnlyLM<float>& model;
    ~Attached() { model.set_hooks(nullptr); }
  } attached{model};
  model.set_hooks(&hooks);
  return mean_logit_difference(model.forward(inputs, nullptr).value(), probe);
}

// An edit that puts source[:, index] (axis 1: a head of z (B, h, L, d), or a position of the
// residual (B, L, D)) into the activation.
HookPoints<float>::Edit replace_along_axis1(const Array<float>& source, std::size_t index) {
  return [&source, index](const Tensor<float>& activation) {
    Array<float> v = activation.value();
    xt::view(v, xt::all(), index) = xt::view(source, xt::all(), index);
    return Tensor<float>(v);
  };
}

}  // namespace

PatchingResult activation_patching(DecoderOnlyLM<float>& model, const CircuitProbe& probe, PatchDirection direction) {
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const bool denoise = direction == PatchDirection::denoise;
  const IndexArray& target_input = denoise ? probe.corrupted : probe.clean;  // the run that is patched
  const IndexArray& source_input = denoise ? probe.clean : probe.corrupted;  // where patches come from

  PatchingResult out;
  HookPoints<float> source;
  source.set_caching(true);
  const double source_difference = run_difference(model, source, source_input, probe);
  HookPoints<float> plain;
  const double target_difference = run_difference(model, plain, target_input, probe);
  out.clean_difference = denoise ? source_difference : target_difference;
  out.corrupted_difference = denoise ? target_difference : source_difference;
  const double span = out.clean_difference - out.corrupted_difference;
  if (!(std::abs(span) >= 1e-6)) {
    model.train(was_training);
    throw ValueError("patching: the clean and corrupted runs give the same logit difference (" +
                     std::to_string(out.clean_difference) + "): the model does not tell the answers apart");
  }
  // One row of shares: the activation at `point` patched at index 0, 1, .. count-1 of its axis 1.
  auto patched_row = [&](const std::string& point, std::size_t count) {
    std::vector<double> row;
    for (std::size_t i = 0; i < count; ++i) {
      HookPoints<float> patch;
      patch.set_edit(point, replace_along_axis1(source.cached(point).value(), i));
      row.push_back((run_difference(model, patch, target_input, probe) - out.corrupted_difference) / span);
    }
    return row;
  };
  const std::size_t layers = model.layers(), heads = model.layer(0).self_attn.config().num_heads;
  for (std::size_t l = 0; l < layers; ++l) out.heads.push_back(patched_row("blocks." + std::to_string(l) + ".attn.hook_z", heads));
  for (std::size_t l = 0; l <= layers; ++l)
    out.residual_points.push_back(l < layers ? "blocks." + std::to_string(l) + ".hook_resid_pre"
                                             : "blocks." + std::to_string(layers - 1) + ".hook_resid_post");
  for (const std::string& point : out.residual_points) out.residual.push_back(patched_row(point, target_input.shape()[1]));
  model.train(was_training);
  return out;
}

}  // namespace headlab
