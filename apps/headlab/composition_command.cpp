// composition_command.cpp: `headlab composition` (composition_command.hpp): flags and files; the
// scores are headlab/lab/composition.hpp's.
#include "composition_command.hpp"
#include "number_text.hpp"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

#include <CLI/CLI.hpp>

#include "headlab/core/file_writer.hpp"
#include "headlab/lab/composition.hpp"
#include "headlab/report/heatmaps.hpp"
#include "headlab/train/run_dir.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kCompositionFiles = {"composition.csv", "composition_q.svg", "composition_k.svg",
                                                    "composition_v.svg"};

std::string head_label(std::size_t layer, std::size_t head) {
  return std::to_string(layer) + "." + std::to_string(head);
}

// Writer heads (layers 0..L-2) x reader heads (layers 1..L-1); NaN where the reader is not later.
std::string composition_heatmap(const std::vector<CompositionScore>& scores, std::size_t layers, std::size_t heads,
                                double CompositionScore::*kind, const std::string& title, double baseline) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::vector<double>> values((layers - 1) * heads, std::vector<double>((layers - 1) * heads, nan));
  for (const CompositionScore& s : scores)
    values[s.writer_layer * heads + s.writer_head][(s.reader_layer - 1) * heads + s.reader_head] = s.*kind;
  HeatmapOptions o;
  o.title = title;
  o.y_label = "writer head (layer.head)";
  o.x_label = "reader head (layer.head); random baseline " + fixed(baseline, 3);
  for (std::size_t l = 0; l + 1 < layers; ++l)
    for (std::size_t h = 0; h < heads; ++h) {
      o.row_labels.push_back(head_label(l, h));
      o.col_labels.push_back(head_label(l + 1, h));
    }
  o.vmin = 0.0;
  o.vmax = 1.0;
  o.scale_label = "score";
  return svg_heatmap(values, o);
}

}  // namespace

CLI::App* add_composition_command(CLI::App& app, CompositionOptions& o) {
  auto* c = app.add_subcommand("composition", "how the heads of one layer feed those of later layers, from the "
                                              "weights: Q-, K- and V-composition (Elhage et al. 2021)");
  c->add_option("--checkpoint", o.checkpoint, "a decoder-only checkpoint (induction or lm task)")->type_name("FILE")->required();
  c->add_option("--out", o.out, "output directory (default: CHECKPOINT_DIR/composition)")->type_name("DIR");
  c->add_flag("--overwrite", o.overwrite, "replace the files of an earlier composition in the output directory");
  return c;
}

int run_composition(const CompositionOptions& o) {
  LoadedModel m = load_trained_model(o.checkpoint);
  const std::vector<CompositionScore> scores = composition_scores(m);  // refuses a model it is not for
  const AttentionConfig& c = m.lm->layer(0).self_attn.config();
  const std::size_t layers = m.lm->layers(), heads = c.num_heads;
  if (layers < 2) throw ValueError("a 1-layer model has no later layer to compose with");
  const CompositionBaseline base = random_composition_baseline(c.d_model, c.dim_head());
  RunDirSpec spec;
  spec.command = "composition";
  spec.dir_flag = "--out";
  spec.markers = spec.outputs = kCompositionFiles;
  spec.existing = o.overwrite ? ExistingRun::overwrite : ExistingRun::refuse;
  const RunDir out(o.out.empty() ? fs::path(o.checkpoint).parent_path() / "composition" : fs::path(o.out), spec);

  std::ostringstream csv;
  csv << "writer_layer,writer_head,reader_layer,reader_head,q,k,v,baseline_q,baseline_k,baseline_v\n";
  for (const CompositionScore& s : scores)
    csv << s.writer_layer << "," << s.writer_head << "," << s.reader_layer << "," << s.reader_head << "," << fixed(s.q, 6)
        << "," << fixed(s.k, 6) << "," << fixed(s.v, 6) << "," << fixed(base.q, 6) << "," << fixed(base.k, 6) << ","
        << fixed(base.v, 6) << "\n";
  write_file_atomic(out.path() / "composition.csv", csv.str(), "composition");
  const struct {
    const char* name;
    double CompositionScore::*field;
    double baseline;
  } kinds[] = {{"q", &CompositionScore::q, base.q}, {"k", &CompositionScore::k, base.k}, {"v", &CompositionScore::v, base.v}};
  for (const auto& kind : kinds)
    write_file_atomic(out.path() / ("composition_" + std::string(kind.name) + ".svg"),
                      composition_heatmap(scores, layers, heads, kind.field,
                                          std::string(1, char(std::toupper(kind.name[0]))) + "-composition: " +
                                              fs::path(o.checkpoint).filename().string(),
                                          kind.baseline),
                      "composition");

  std::cout << "composition of " << o.checkpoint << " (" << layers << " layers of " << heads << " heads, d_model "
            << c.d_model << ", head size " << c.dim_head() << "); random baseline Q " << fixed(base.q, 3) << ", K "
            << fixed(base.k, 3) << ", V " << fixed(base.v, 3) << "\n";
  std::cout << "reader head: its strongest writer per kind (score, x baseline)\n";
  for (std::size_t r = 1; r < layers; ++r)
    for (std::size_t b = 0; b < heads; ++b) {
      std::cout << "  " << std::left << std::setw(6) << head_label(r, b) << std::right;
      for (const auto& kind : kinds) {
        const CompositionScore* top = nullptr;
        for (const CompositionScore& s : scores)
          if (s.reader_layer == r && s.reader_head == b && (!top || s.*kind.field > top->*kind.field)) top = &s;
        std::cout << "  " << char(std::toupper(kind.name[0])) << " " << head_label(top->writer_layer, top->writer_head)
                  << " " << fixed(top->*kind.field, 3) << " (x" << fixed(top->*kind.field / kind.baseline, 1) << ")";
      }
      std::cout << "\n";
    }
  std::cout << "wrote composition.csv and composition_{q,k,v}.svg in " << out.path().string() << "\n";
  return 0;
}

}  // namespace headlab::cli
