// Study 2: how many heads? German -> English at fixed compute, and at fixed head size.
//
// Vaswani et al. 2017, Table 3 rows (A): with d_model fixed, splitting it into h heads of
// d_k = d_model / h keeps the parameters (4 D^2 per attention) and almost the FLOPs fixed;
// on WMT EN-DE one head was 0.9 BLEU below the best (h = 8, 16) and 32 heads fell back.
// Here the same sweep runs at toy scale: d_model 64, 2+2 layers, 600 steps on the small
// corpus (datasets/de-en/small), h in {1, 2, 4, 8, 16}, three seeds each:
//   fixed compute    d_k = 64 / h            (64, 32, 16, 8, 4)
//   fixed head size  d_k = 16 for every h    (attention width 16 h: parameters grow with h)
// Reported: validation loss (token NLL; perplexity = e^loss), greedy validation BLEU,
// parameters, forward FLOPs per target token, training seconds; mean ± std over seeds.
//
// usage: tutorial_head_count [--quick] [OUT_DIR]
//   full: 27 runs of ~35 s (about 19 minutes on one core); --quick: d_model 32, h in {1, 4}, 1 seed,
//   5 steps of at most 256 tokens (for the test suite).
#include <filesystem>
#include <iostream>
#include <map>

#include "headlab/headlab.hpp"
#include "headlab/report/report.hpp"
#include "study_common.hpp"

using namespace headlab;
namespace fs = std::filesystem;

int main(int argc, char** argv) {
  const study::StudyArgs args = study::study_args(argc, argv, "head_count_runs");
  const bool quick = args.quick;  // plain names, not a structured binding: lambdas below take them
  const std::filesystem::path& out = args.out;
  TrainOptions o = study::translation_options(HEADLAB_DATASETS_DIR, quick ? 5 : 600, quick);
  o.d_model = quick ? 32 : 64;
  o.ff_dim = quick ? 64 : 256;
  o.warmup = 200;
  const std::vector<std::uint64_t> seeds = quick ? std::vector<std::uint64_t>{1} : std::vector<std::uint64_t>{1, 2, 3};
  const std::vector<std::size_t> head_counts = quick ? std::vector<std::size_t>{1, 4} : std::vector<std::size_t>{1, 2, 4, 8, 16};
  const std::size_t fixed_head_size = 16;
  std::cout << "Head count on German -> English: d_model " << o.d_model << ", ff " << o.ff_dim << ", " << o.layers << "+"
            << o.layers << " layers, " << o.steps << " steps, seeds";
  for (auto s : seeds) std::cout << " " << s;
  std::cout << "\n";

  struct Row {
    std::string variant;
    std::size_t heads, head_dim;
    study::SeedRuns runs;
  };
  std::vector<Row> rows;
  std::map<std::size_t, std::size_t> same_as;  // fixed head size rows that equal a fixed-compute row
  for (const std::string variant : {"fixed compute", "fixed head size"}) {
    for (std::size_t h : head_counts) {
      const std::size_t d = variant == "fixed compute" ? o.d_model / h : fixed_head_size;
      if (variant == "fixed head size" && d * h == o.d_model) {  // identical to the fixed-compute model: reuse it
        for (const Row& r : rows)
          if (r.heads == h) rows.push_back({variant, h, d, r.runs});
        continue;
      }
      TrainOptions m = o;
      m.heads = h;
      m.head_dim = variant == "fixed compute" ? 0 : d;
      const std::string name = (variant == "fixed compute" ? "compute-h" : "size16-h") + std::to_string(h);
      rows.push_back({variant, h, d, study::train_seeds(name, m, seeds, out)});
    }
  }

  std::cout << "\n| variant | h | d_k | validation loss | perplexity | greedy BLEU | parameters | FLOPs/token | seconds |\n"
            << "|---|---|---|---|---|---|---|---|---|\n";
  std::map<std::string, ChartSeries> loss_series, bleu_series;
  for (const Row& r : rows) {
    std::vector<double> loss, ppl, bleu, secs;
    for (const auto& t : r.runs.results) {
      loss.push_back(t.valid_loss);
      ppl.push_back(std::exp(t.valid_loss));
      bleu.push_back(t.valid_bleu);
      secs.push_back(t.train_seconds);
    }
    // Parameters and FLOPs per token from the first run's summary.json (the same for every seed).
    auto summary = run_summary_numbers(r.runs.run_dirs[0]);
    std::cout << "| " << r.variant << " | " << r.heads << " | " << r.head_dim << " | " << study::mean_pm_std(loss) << " | "
              << study::mean_pm_std(ppl, 1) << " | " << study::mean_pm_std(bleu, 2) << " | " << std::llround(summary["parameters"])
              << " | " << std::llround(summary["flops_per_token"]) << " | " << study::mean_pm_std(secs, 1) << " |\n";
    const MetricStats l = mean_std(loss), b = mean_std(bleu);
    for (auto* series : {&loss_series, &bleu_series}) {
      ChartSeries& s = (*series)[r.variant];
      s.name = r.variant == "fixed compute" ? "fixed compute (d_k = 64/h)" : "fixed head size (d_k = 16)";
      s.x.push_back(double(r.heads));
      const MetricStats& m = series == &loss_series ? l : b;
      s.y.push_back(m.mean);
      s.error.push_back(m.n > 1 ? m.std : 0.0);
    }
  }
  auto chart = [&](std::map<std::string, ChartSeries>& series, const std::string& y, const std::string& file) {
    std::vector<ChartSeries> list;
    for (auto& [name, s] : series) list.push_back(s);
    ChartOptions co;
    co.title = y + " against the number of heads (mean ± std over seeds)";
    co.x_label = "heads h";
    co.y_label = y;
    write_file_atomic(out / file, svg_line_chart(list, co), "tutorial 07");
  };
  chart(loss_series, "validation loss", "head_count_loss.svg");
  chart(bleu_series, "greedy validation BLEU", "head_count_bleu.svg");
  std::cout << "\ncharts: " << (out / "head_count_loss.svg").string() << ", " << (out / "head_count_bleu.svg").string()
            << "\n(docs/studies/head-count.md compares the shape with Vaswani et al.'s Table 3 rows (A).)\n";
  return 0;
}
