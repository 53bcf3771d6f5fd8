// circuits_command.cpp: `headlab patch` and `headlab attribute` (circuits_command.hpp): flags and
// files; the methods are headlab/lab/patching.hpp's and headlab/lab/logit_attribution.hpp's.
#include "checkpoint_name.hpp"
#include "circuits_command.hpp"
#include "cli_values.hpp"
#include "model_input.hpp"
#include "number_text.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "headlab/core/file_writer.hpp"
#include "headlab/core/shape_utils.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/lab/explorer.hpp"
#include "headlab/lab/logit_attribution.hpp"
#include "headlab/lab/patching.hpp"
#include "headlab/report/heatmaps.hpp"
#include "headlab/train/recall_task.hpp"
#include "headlab/train/run_dir.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxRows = 4096;

void add_probe_flags(CLI::App* c, CircuitOptions& o) {
  c->add_option("--checkpoint", o.checkpoint, "a checkpoint of the induction, recall, copy or translate task")->type_name("FILE")->required();
  c->add_option("--rows", o.rows, "probe rows, clean and corrupted, 1 to " + std::to_string(kMaxRows) + " (default 64)")
      ->check(whole_number(1, kMaxRows));
  c->add_option("--seed", o.seed, "the probe's random seed (default 1)")->check(whole_number());
  c->add_option("--slot", o.slot, "recall: which of the last query's keys gets a new value, from 0 (default 0)")
      ->check(whole_number(0, 64));
  c->add_option("--data", o.data, "translate: a TSV with gold alignments in its third column (default: the run's "
                                  "--valid file); its pairs are taken in file order (--seed does not apply)")->type_name("FILE");
  c->add_option("--out", o.out, "output directory (default: CHECKPOINT_DIR/patch or CHECKPOINT_DIR/attribute)")->type_name("DIR");
  c->add_flag("--overwrite", o.overwrite, "replace the files of an earlier run of this command in the output directory");
}

struct Probed {
  LoadedModel model;
  CircuitProbe probe;
};

Probed load_and_probe(const CircuitOptions& o) {
  Probed p{load_trained_model(o.checkpoint), {}};
  const Task task = p.model.options.task;
  if (o.slot != 0 && task != Task::recall) throw ValueError("--slot is for recall checkpoints; this one is " + task_name(task));
  if (!o.data.empty() && task != Task::translate) {
    throw ValueError("--data is for translate checkpoints; this one is " + task_name(task));
  }
  CircuitProbeOptions po;
  po.count = o.rows;
  po.seed = o.seed;
  po.slot = o.slot;
  po.data = o.data;
  p.probe = make_circuit_probe(p.model, po);
  return p;
}

// A token as the logit lens prints it: recall's "=v3,v7", else as the explorer shows tokens (words,
// characters, ids).
std::string lens_token(const LoadedModel& m, std::int64_t id) {
  if (m.options.task == Task::recall) return recall_layout(m.options).token_text(id);
  return token_text(m, id, false);
}

std::string read_at(const CircuitProbe& probe) {
  return probe.row_positions.empty() ? "answer read at position " + std::to_string(probe.position)
                                     : std::string("each row's answer read where the decoder predicts it");
}

RunDir open_output(const CircuitOptions& o, const std::string& command, const std::vector<std::string>& files) {
  RunDirSpec spec;
  spec.command = command;
  spec.dir_flag = "--out";
  spec.markers = spec.outputs = files;
  spec.existing = o.overwrite ? ExistingRun::overwrite : ExistingRun::refuse;
  return RunDir(o.out.empty() ? fs::path(o.checkpoint).parent_path() / command : fs::path(o.out), spec);
}

std::vector<std::string> head_labels(std::size_t heads) {
  std::vector<std::string> out;
  for (std::size_t h = 0; h < heads; ++h) out.push_back("h" + std::to_string(h));
  return out;
}

// "blocks.0.attn" -> "0 attn", "decoder.1.cross_attn" -> "dec 1 cross", "encoder.0.hook_resid_pre" -> "enc 0".
std::string short_label(const std::string& name) {
  std::string label = name;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"blocks.", "layer "}, {"encoder.", "enc "}, {"decoder.", "dec "},
                                 {".cross_attn", " cross"}, {".attn", " self"}, {".hook_resid_pre", ""},
                                 {".hook_resid_post", " out"}})
    if (const auto at = label.find(from); at != std::string::npos) label.replace(at, from.size(), to);
  return label;
}

std::vector<std::string> short_labels(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) out.push_back(short_label(n));
  return out;
}

// Rows of unequal length (encoder and decoder positions) padded with NaN ("n/a" in the heatmap).
std::vector<std::vector<double>> padded(std::vector<std::vector<double>> rows) {
  std::size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.size());
  for (auto& r : rows) r.resize(width, std::nan(""));
  return rows;
}

}  // namespace

CLI::App* add_cache_command(CLI::App& app, CacheOptions& o) {
  auto* c = app.add_subcommand("cache", "run_with_cache: every hook point's activation on one input, written as "
                                        "safetensors (names as TransformerLens's)");
  c->add_option("--checkpoint", o.checkpoint, "a checkpoint of any task")->type_name("FILE")->required();
  c->add_option("--input", o.input, "ids, a sentence (translate) or a text (lm); default: the first probe sequence");
  c->add_option("--points", o.points, "keep only the points whose name holds this text (e.g. hook_pattern)");
  c->add_option("--out", o.out, "the .safetensors file to write (default: CHECKPOINT_DIR/cache.safetensors)")->type_name("FILE");
  c->add_flag("--overwrite", o.overwrite, "replace an existing file");
  return c;
}

int run_cache(const CacheOptions& o) {
  const fs::path out = o.out.empty() ? fs::path(o.checkpoint).parent_path() / "cache.safetensors" : fs::path(o.out);
  std::error_code ec;
  if (fs::is_directory(out, ec)) throw ValueError("--out: " + out.string() + " is a directory, not a file");
  if (fs::exists(out, ec) && !o.overwrite) throw ValueError("--out: " + out.string() + " exists; give --overwrite to replace it");
  LoadedModel m = load_trained_model(o.checkpoint);
  const ExplorerInput input = explorer_input(m, o.input, repeated_tokens_probe(m, 1, 0, 1));
  HookPoints<float> hooks;
  hooks.set_caching(true);
  {
    NoGradGuard no_grad;
    struct Attached {  // no pointer to the hooks left in the model, even when the forward throws
      LoadedModel& m;
      ~Attached() { m.lm ? m.lm->set_hooks(nullptr) : m.model->set_hooks(nullptr); }
    } attached{m};
    if (m.lm) {
      m.lm->eval();
      m.lm->set_hooks(&hooks);
      m.lm->forward(input.target, nullptr);
    } else {
      m.model->eval();
      m.model->set_hooks(&hooks);
      m.model->forward(input.source, input.target, Masks{}, nullptr);
    }
  }
  TensorFile file;
  auto tokens = [&](const IndexArray& ids, bool source) {
    std::string text;
    for (std::size_t i = 0; i < ids.shape()[1]; ++i) text += (i ? " " : "") + token_text(m, ids(0, i), source);
    return text;
  };
  file.metadata["checkpoint"] = checkpoint_name(o.checkpoint);
  file.metadata["tokens"] = tokens(input.target, false);
  if (!m.lm) file.metadata["source_tokens"] = tokens(input.source, true);
  for (const std::string& name : hooks.names_seen()) {
    if (!o.points.empty() && name.find(o.points) == std::string::npos) continue;
    const Array<float>& value = hooks.cached(name).value();
    file.add(name, value);
    std::cout << "  " << std::left << std::setw(36) << name << std::right << " " << shape_str(Shape(value.shape().begin(), value.shape().end())) << "\n";
  }
  if (file.size() == 0) throw ValueError("--points: no hook point's name holds '" + o.points + "'");
  save_safetensors(out.string(), file);
  std::cout << "wrote " << file.size() << " activations of " << input.target.shape()[1] << " tokens to " << out.string()
            << "\n";
  return 0;
}

CLI::App* add_patch_command(CLI::App& app, CircuitOptions& o) {
  auto* c = app.add_subcommand("patch", "activation patching: which heads and which positions of the stream carry "
                                        "the answer, from clean and corrupted inputs made by rule");
  add_probe_flags(c, o);
  c->add_flag("--noise", o.noise, "patch corrupted activations into the clean run (default: clean into corrupted)");
  return c;
}

CLI::App* add_attribute_command(CLI::App& app, CircuitOptions& o) {
  auto* c = app.add_subcommand("attribute", "direct logit attribution (each head's term of the answer's logit) and "
                                            "the logit lens (the answer's rank after each layer)");
  add_probe_flags(c, o);
  return c;
}

int run_patch(const CircuitOptions& o) {
  Probed p = load_and_probe(o);
  const std::vector<std::string> files = {"patch_heads.csv", "patch_residual.csv", "patch_heads.svg", "patch_residual.svg"};
  const RunDir out = open_output(o, "patch", files);  // refused before the work when it holds an earlier run
  const PatchingResult r = activation_patching(p.model, p.probe, o.noise ? PatchDirection::noise : PatchDirection::denoise);
  const std::size_t heads = r.heads.at(0).size();
  std::size_t positions = 0;
  for (const auto& row : r.residual) positions = std::max(positions, row.size());

  std::ostringstream csv;
  csv << "module,head,recovered\n";
  for (std::size_t m = 0; m < r.modules.size(); ++m)
    for (std::size_t h = 0; h < heads; ++h) csv << r.modules[m] << "," << h << "," << fixed(r.heads[m][h], 6) << "\n";
  write_file_atomic(out.file("patch_heads.csv"), csv.str(), "patch");
  std::ostringstream res;
  res << "point,position,recovered\n";
  for (std::size_t i = 0; i < r.residual.size(); ++i)
    for (std::size_t t = 0; t < r.residual[i].size(); ++t)
      res << r.residual_points[i] << "," << t << "," << fixed(r.residual[i][t], 6) << "\n";
  write_file_atomic(out.file("patch_residual.csv"), res.str(), "patch");

  const std::string how = o.noise ? "noising (corrupted into clean)" : "denoising (clean into corrupted)";
  HeatmapOptions hh;
  hh.title = "patching each head's output, " + how + ": " + checkpoint_name(o.checkpoint);
  hh.x_label = "head";
  hh.y_label = "attention module";
  hh.col_labels = head_labels(heads);
  hh.row_labels = short_labels(r.modules);
  hh.vmin = 0.0;
  hh.vmax = 1.0;
  hh.scale_label = "recovered share";
  write_file_atomic(out.file("patch_heads.svg"), svg_heatmap(r.heads, hh), "patch");
  HeatmapOptions hr = hh;
  hr.title = "patching the residual stream at one position, " + how + ": " + checkpoint_name(o.checkpoint);
  hr.x_label = p.probe.row_positions.empty() ? "position (the answer is read at " + std::to_string(p.probe.position) + ")"
                                             : "position (each row read at its own)";
  hr.y_label = "stream entering layer (out: leaving the last)";
  hr.col_labels.clear();
  hr.row_labels = short_labels(r.residual_points);
  hr.annotate = positions <= 40;
  hr.cell = positions <= 40 ? 40 : 12;
  write_file_atomic(out.file("patch_residual.svg"), svg_heatmap(padded(r.residual), hr), "patch");

  std::cout << "patching " << o.checkpoint << ", " << how << "\n"
            << "probe: " << p.probe.rule << "; " << p.probe.clean_answer.size() << " rows, seed " << o.seed << ", "
            << read_at(p.probe) << "\n"
            << "logit difference (clean answer - corrupted answer): clean " << fixed(r.clean_difference, 3)
            << ", corrupted " << fixed(r.corrupted_difference, 3) << "\n"
            << "recovered share per head (1 = as the clean run, 0 = as the corrupted run):\n";
  for (std::size_t m = 0; m < r.modules.size(); ++m) {
    std::cout << "  " << std::left << std::setw(12) << short_label(r.modules[m]) << std::right;
    for (std::size_t h = 0; h < heads; ++h) std::cout << "  h" << h << " " << fixed(r.heads[m][h], 2);
    std::cout << "\n";
  }
  std::cout << "positions of the stream with a share above 0.5: ";
  bool any = false;
  for (std::size_t i = 0; i < r.residual.size(); ++i)
    for (std::size_t t = 0; t < r.residual[i].size(); ++t)
      if (r.residual[i][t] > 0.5) {
        std::cout << (any ? ", " : "") << r.residual_points[i] << " at " << t;
        any = true;
      }
  std::cout << (any ? "" : "none") << "\nwrote patch_heads.csv, patch_residual.csv and their .svg in " << out.path().string() << "\n";
  return 0;
}

int run_attribute(const CircuitOptions& o) {
  Probed p = load_and_probe(o);
  const bool norm_first = p.model.lm ? p.model.lm->config().norm_first : p.model.model->config().norm_first;
  if (!norm_first) {
    throw ValueError("direct logit attribution needs a pre-LN model (its stream a sum of components); this one is post-LN");
  }
  const RunDir out = open_output(o, "attribute", {"attribution.csv", "logit_lens.csv", "attribution.svg"});
  const LogitAttribution a = direct_logit_attribution(p.model, p.probe);
  const std::vector<LensLayer> lens = logit_lens(p.model, p.probe);
  // The heatmap's rows: the modules whose heads write into the stream that is read (the decoder's).
  std::vector<std::string> modules;
  std::vector<std::vector<double>> grid;
  std::size_t heads = 0;
  for (const LogitComponent& c : a.components) {
    if (c.head < 0) continue;
    const std::string module = c.name.substr(0, c.name.rfind(".head"));
    if (modules.empty() || modules.back() != module) {
      modules.push_back(module);
      grid.emplace_back();
    }
    grid.back().push_back(c.mean);
    heads = std::max(heads, grid.back().size());
  }

  std::ostringstream csv;
  csv << "component,layer,head,mean,sd\n";
  for (const LogitComponent& c : a.components) {
    double var = 0;
    for (double v : c.per_row) var += (v - c.mean) * (v - c.mean);
    const double sd = c.per_row.size() > 1 ? std::sqrt(var / double(c.per_row.size() - 1)) : 0.0;
    csv << c.name << "," << c.layer << "," << c.head << "," << fixed(c.mean, 6) << "," << fixed(sd, 6) << "\n";
  }
  double constant = 0, logit = 0;
  for (std::size_t b = 0; b < a.logit.size(); ++b) {
    constant += a.constant[b] / double(a.logit.size());
    logit += a.logit[b] / double(a.logit.size());
  }
  csv << "constant,-1,-1," << fixed(constant, 6) << ",\n";
  csv << "logit,-1,-1," << fixed(logit, 6) << ",\n";  // the model's own: the sum of every row above
  write_file_atomic(out.file("attribution.csv"), csv.str(), "attribute");
  std::ostringstream lcsv;
  lcsv << "point,mean_rank,top1,top_tokens\n";
  for (const LensLayer& l : lens) {
    lcsv << l.point << "," << fixed(l.mean_rank, 3) << "," << fixed(l.top1, 4) << ",";
    for (std::size_t i = 0; i < l.top_tokens.size(); ++i) lcsv << (i ? " " : "") << l.top_tokens[i];
    lcsv << "\n";
  }
  write_file_atomic(out.file("logit_lens.csv"), lcsv.str(), "attribute");
  double largest = 0;
  for (const auto& row : grid)
    for (double v : row) largest = std::max(largest, std::abs(v));
  HeatmapOptions ho;
  ho.title = "each head's direct term of the answer's logit: " + checkpoint_name(o.checkpoint);
  ho.x_label = "head";
  ho.y_label = "attention module";
  ho.col_labels = head_labels(heads);
  ho.row_labels = short_labels(modules);
  ho.vmin = -largest;
  ho.vmax = largest > 0 ? largest : 1.0;
  ho.scale_label = "logit";
  write_file_atomic(out.file("attribution.svg"), svg_heatmap(padded(grid), ho), "attribute");

  std::cout << "direct logit attribution of " << o.checkpoint << "\n"
            << "probe: clean rows of " << p.probe.rule << "; " << p.probe.clean_answer.size() << " rows, seed " << o.seed
            << ", " << read_at(p.probe) << "\n"
            << "the answer's logit " << fixed(logit, 3) << " = the terms below + constant " << fixed(constant, 3)
            << " (largest gap over the rows " << std::scientific << std::setprecision(1) << a.max_sum_error
            << std::defaultfloat << "; the final norm's scale frozen per row)\n";
  std::vector<const LogitComponent*> order;
  for (const LogitComponent& c : a.components) order.push_back(&c);
  std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return std::abs(x->mean) > std::abs(y->mean); });
  for (std::size_t i = 0; i < std::min<std::size_t>(order.size(), 8); ++i)
    std::cout << "  " << std::left << std::setw(30) << order[i]->name << std::right << " " << fixed(order[i]->mean, 3) << "\n";
  std::cout << "logit lens (the stream read through the final norm and the unembedding):\n";
  for (const LensLayer& l : lens) {
    std::cout << "  " << std::left << std::setw(30) << l.point << std::right << " answer rank " << fixed(l.mean_rank, 2)
              << ", top-1 " << fixed(l.top1, 2) << "; row 0's top:";
    for (std::int64_t t : l.top_tokens) std::cout << " " << lens_token(p.model, t);
    std::cout << "\n";
  }
  std::cout << "wrote attribution.csv, logit_lens.csv and attribution.svg in " << out.path().string() << "\n";
  return 0;
}

}  // namespace headlab::cli
