// fuzz_run_dir: a run directory's files as bytes, driving `train --resume`.
//
// The input holds two files, cut at the first "\n--8<--\n":
//   metrics.jsonl           (the log a resume cuts back to the checkpoint's step)
//   checkpoint.safetensors  (what a resume loads: options, step, losses, generators, weights, Adam)
// They are written into a fresh run directory, and a tiny copy-task run is resumed from it for at
// most two more steps. A kill, a full disk or a hostile edit can leave such files; whatever they
// hold, resuming must either refuse with a headlab::Error or continue, and a run that continued must
// leave a metrics.jsonl with exactly one line for each step it trained and none past its last
// (what the input's log held before the checkpoint's step is the input's). Anything else (another exception, a
// sanitizer report, a duplicated step) is a crash. Seeds: fuzz/corpus/fuzz_run_dir/ (made by
// fuzz/make_fuzz_run_dir_seeds.sh from a real run).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/report/metrics.hpp"
#include "headlab/train/trainer.hpp"

namespace fs = std::filesystem;

namespace {

// The options the seeds were trained with (fuzz/make_fuzz_run_dir_seeds.sh); a checkpoint whose
// saved options differ is refused by the resume, which is one of the paths fuzzed.
headlab::TrainOptions tiny_copy_run(const fs::path& dir, std::size_t steps) {
  headlab::TrainOptions o = headlab::TrainOptions::defaults_for(headlab::Task::copy);
  o.d_model = 8;
  o.heads = 2;
  o.ff_dim = 16;
  o.layers = 1;
  o.batch = 2;
  o.steps = steps;
  o.eval_every = 1000;
  o.eval_sequences = 2;
  o.stop_at_perfect = false;
  o.progress = "none";
  o.run_dir = dir.string();
  o.resume = true;
  return o;
}

// The steps of a metrics.jsonl, in order (empty when it cannot be read: the run refused it).
std::multiset<double> logged_steps(const fs::path& file) {
  std::multiset<double> steps;
  for (const headlab::MetricRow& row : headlab::read_metrics(file))
    if (row.has("step")) steps.insert(row.number("step"));
  return steps;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string cut = "\n--8<--\n";
  const std::size_t at = input.find(cut);
  const std::string metrics = at == std::string::npos ? std::string() : input.substr(0, at);
  const std::string checkpoint = at == std::string::npos ? input : input.substr(at + cut.size());

  static const fs::path dir = fs::temp_directory_path() / ("fuzz_run_dir." + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  headlab::write_file_atomic(dir / "metrics.jsonl", metrics, "fuzz_run_dir");
  headlab::write_file_atomic(dir / "checkpoint.safetensors", checkpoint, "fuzz_run_dir");

  // Resume up to step 6 (the seeds stop at step 4); a checkpoint past it just finishes.
  headlab::TrainResult result;
  std::ostringstream log;
  try {
    result = headlab::train(tiny_copy_run(dir, 6), log);
  } catch (const headlab::Error&) {
    return 0;  // refused, naming the file: fine
  }

  // It continued from the checkpoint's step ("resumed from FILE at step N"): each step after it is
  // logged exactly once, and nothing past the last step.
  const std::string said = log.str();
  const std::size_t resumed = said.find("resumed from ");
  const std::size_t from = resumed == std::string::npos ? resumed : said.find(" at step ", resumed);
  const std::size_t resumed_at = from == std::string::npos ? 0 : std::stoul(said.substr(from + 9));
  const std::multiset<double> steps = logged_steps(dir / "metrics.jsonl");
  bool one_per_step = steps.empty() || *steps.rbegin() <= double(result.steps_done);
  for (std::size_t s = resumed_at + 1; one_per_step && s <= result.steps_done; ++s)
    one_per_step = steps.count(double(s)) == 1;
  if (!one_per_step) {
    std::fprintf(stderr, "fuzz_run_dir: resumed at step %zu and trained to step %zu; metrics.jsonl holds:\n",
                 resumed_at, result.steps_done);
    std::ifstream in(dir / "metrics.jsonl");
    std::fprintf(stderr, "%s\n", std::string(std::istreambuf_iterator<char>(in), {}).c_str());
    std::abort();
  }
  return 0;
}
