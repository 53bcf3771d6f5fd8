// lab_outputs.hpp: what `headlab heads` and `headlab prune` both write, and where
// (heads_command.cpp, prune_command.cpp): a locked run directory (headlab/train/run_dir.hpp) that
// refuses earlier output unless --overwrite, and heatmaps of one value per (module, head).
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "headlab/lab/heads.hpp"
#include "headlab/report/report.hpp"
#include "headlab/train/run_dir.hpp"

namespace headlab::cli {

// --out, or <the checkpoint's directory>/<name> when --out is empty.
inline std::filesystem::path lab_output_path(const std::string& out, const std::string& checkpoint, const char* name) {
  return out.empty() ? std::filesystem::path(checkpoint).parent_path() / name : std::filesystem::path(out);
}

// The run-directory rules for `command`: `files` are both its markers and its outputs.
inline RunDirSpec lab_output_spec(const char* command, const std::vector<std::string>& files, bool overwrite) {
  RunDirSpec spec;
  spec.command = command;
  spec.dir_flag = "--out";
  spec.markers = files;
  spec.outputs = files;
  spec.existing = overwrite ? ExistingRun::overwrite : ExistingRun::refuse;
  return spec;
}

// "enc 0 self", "dec 1 cross", "layer 0": short row labels for the pictures.
inline std::string site_label(const AttentionSite& s) {
  if (s.kind == "encoder self") return "enc " + std::to_string(s.layer) + " self";
  if (s.kind == "decoder self") return "dec " + std::to_string(s.layer) + " self";
  if (s.kind == "cross") return "dec " + std::to_string(s.layer) + " cross";
  return "layer " + std::to_string(s.layer);
}

// An SVG heatmap of one value per (module, head): values[s][h] for site s; short rows (modules with
// fewer heads) are padded with NaN. The colour scale is fixed at [0, vmax]; a reference (uniform
// attention's score), when given, is marked on the colour bar.
inline std::string site_heatmap(const std::vector<AttentionSite>& sites, std::vector<std::vector<double>> values,
                                const std::string& title, double vmax, const std::string& scale_label,
                                std::optional<double> reference = std::nullopt) {
  HeatmapOptions ho;
  ho.reference = reference;
  ho.reference_label = "uniform attention";
  ho.title = title;
  ho.scale_label = scale_label;
  ho.x_label = "head";
  ho.y_label = "attention module";
  std::size_t max_heads = 0;
  for (const auto& s : sites) {
    ho.row_labels.push_back(site_label(s));
    max_heads = std::max(max_heads, s.heads());
  }
  for (std::size_t h = 0; h < max_heads; ++h) ho.col_labels.push_back("h" + std::to_string(h));
  for (auto& row : values) row.resize(max_heads, std::nan(""));
  ho.vmin = 0.0;
  ho.vmax = vmax;
  return svg_heatmap(values, ho);
}

}  // namespace headlab::cli
