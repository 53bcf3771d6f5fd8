// study_common.hpp: what the head-lab studies (chapters 6-9) share: running one
// configuration over several seeds, "mean ± std" cells and the head-role summary
// of a trained run.
#pragma once

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/headlab.hpp"
#include "tutorial_threads.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/lab/sweep.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab::study {

// What every study starts with: one BLAS thread, and its command line [--quick] [OUT_DIR].
struct StudyArgs {
  bool quick = false;
  std::filesystem::path out;
};
inline StudyArgs study_args(int argc, char** argv, const std::string& default_out) {
  use_tutorial_threads();
  tune_allocator();
  StudyArgs a;
  a.out = default_out;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick") a.quick = true;
    else a.out = argv[i];
  }
  std::filesystem::create_directories(a.out);
  return a;
}

// The translation task on the shipped corpus: `headlab train --task translate` defaults
// (d_model 128, 8 heads, ff 512, 2+2 layers, dropout and label smoothing 0.1), evaluated once at the
// end; quick (the test suite's form, also run under the sanitizers) uses batches of at most 256
// tokens and decodes only 16 validation sentences for BLEU.
inline TrainOptions translation_options(const std::string& datasets_dir, std::size_t steps, bool quick) {
  TrainOptions o = TrainOptions::defaults_for(Task::translate);
  o.train_file = datasets_dir + "/de-en/small/train.tsv";
  o.valid_file = datasets_dir + "/de-en/small/valid.tsv";
  o.steps = steps;
  o.eval_every = steps;
  if (quick) {
    o.max_tokens = 256;
    o.eval_sentences = 16;
  }
  return o;
}

// "3.412 ± 0.021" (the sample standard deviation over seeds; "n/a" for a missing value).
inline std::string mean_pm_std(const std::vector<double>& values, int digits = 3) {
  const MetricStats s = mean_std(values);
  if (s.n == 0 || std::isnan(s.mean)) return "n/a";
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << s.mean;
  if (s.n > 1) os << " ± " << s.std;
  return os.str();
}

// Trains `o` once per seed, each in out_dir/<name>-seed<S> (so `headlab heads` and
// `headlab prune` can read the checkpoints afterwards). Prints one line per run.
struct SeedRuns {
  std::string name;
  std::vector<std::string> run_dirs;
  std::vector<TrainResult> results;
};
inline SeedRuns train_seeds(const std::string& name, TrainOptions o, const std::vector<std::uint64_t>& seeds,
                            const std::filesystem::path& out_dir) {
  SeedRuns runs;
  runs.name = name;
  o.progress = "none";
  for (std::uint64_t seed : seeds) {
    o.seed = seed;
    o.run_dir = (out_dir / (name + "-seed" + std::to_string(seed))).string();
    std::filesystem::remove_all(o.run_dir);
    std::ostringstream log;  // the trainer's own lines stay out of the chapter's output
    runs.results.push_back(train(o, log));
    runs.run_dirs.push_back(o.run_dir);
    const TrainResult& r = runs.results.back();
    std::cout << "    " << name << " seed " << seed << ": " << r.steps_done << " steps in " << std::fixed
              << std::setprecision(1) << r.seconds << " s, validation loss " << std::setprecision(3) << r.valid_loss;
    if (o.task == Task::translate) std::cout << ", BLEU " << std::setprecision(2) << r.valid_bleu;
    if (o.task == Task::induction) std::cout << ", repeated-half accuracy " << r.repeated_accuracy;
    std::cout << std::defaultfloat << "\n";
  }
  return runs;
}

// The head roles of a run's checkpoint on the repeated-random-tokens probe.
inline std::vector<HeadRoles> roles_of(const std::string& run_dir, std::size_t probe_sequences = 64) {
  LoadedModel m = load_trained_model((std::filesystem::path(run_dir) / "checkpoint.safetensors").string());
  return head_roles(m, repeated_tokens_probe(m, probe_sequences, 0, 1));
}

}  // namespace headlab::study
