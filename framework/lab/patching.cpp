// lab/patching.cpp: activation patching (headlab/lab/patching.hpp).
#include "headlab/lab/patching.hpp"

#include <cmath>

#include <xtensor/xview.hpp>

namespace headlab {

namespace {

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

PatchingResult activation_patching(LoadedModel& model, const CircuitProbe& probe, PatchDirection direction) {
  const bool denoise = direction == PatchDirection::denoise;
  // The patched run reads the corrupted rows when denoising, the clean rows when noising; the
  // patches come from the other run.
  const bool patched_is_clean = !denoise;
  auto difference = [&](bool clean, HookPoints<float>* hooks) {
    return mean_logit_difference(probe_logits(model, probe, clean, hooks), probe);
  };
  PatchingResult out;
  HookPoints<float> source;
  source.set_caching(true);
  const double source_difference = difference(!patched_is_clean, &source);
  const double target_difference = difference(patched_is_clean, nullptr);
  out.clean_difference = denoise ? source_difference : target_difference;
  out.corrupted_difference = denoise ? target_difference : source_difference;
  const double span = out.clean_difference - out.corrupted_difference;
  if (!(std::abs(span) >= 1e-6)) {
    throw ValueError("patching: the clean and corrupted runs give the same logit difference (" +
                     std::to_string(out.clean_difference) + "): the model does not tell the answers apart");
  }
  // One row of shares: the activation at `point` patched at index 0, 1, .. of its axis 1 (heads of z,
  // or positions of the stream).
  auto patched_row = [&](const std::string& point) {
    const Array<float>& from = source.cached(point).value();
    std::vector<double> row;
    for (std::size_t i = 0; i < from.shape()[1]; ++i) {
      HookPoints<float> patch;
      patch.set_edit(point, replace_along_axis1(from, i));
      row.push_back((difference(patched_is_clean, &patch) - out.corrupted_difference) / span);
    }
    return row;
  };
  out.modules = attention_modules(model);
  for (const std::string& module : out.modules) out.heads.push_back(patched_row(module + ".hook_z"));
  out.residual_points = stream_points(model);
  for (const std::string& point : out.residual_points) out.residual.push_back(patched_row(point));
  return out;
}

}  // namespace headlab
