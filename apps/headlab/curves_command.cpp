// curves_command.cpp: `headlab curves --run-dir D [--log-y] [--out FILE]`, a run's loss.svg drawn
// again from D/metrics.jsonl (headlab/train/run_curves.hpp).
//
// The task comes from D/config.ini (written when the run starts), the rows from D/metrics.jsonl,
// so a killed run (no loss.svg) or a run still going can be drawn. --log-y puts the loss panels on
// a log10 axis; a loss <= 0 cannot sit on it and is skipped, with a note on stderr. --out defaults
// to D/loss.svg; an existing --out that is not a chart headlab drew is kept (a usage error). A
// missing or bad file: a message naming it and exit status 1.
#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/train/config_file.hpp"
#include "headlab/train/run_curves.hpp"

namespace headlab::cli {

namespace {

// The task of the run whose config.ini is at `path` (a bad file is an IOError: exit status 1).
Task task_of_run(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw IOError("curves: " + path + " is missing: is --run-dir a directory `headlab train` wrote?");
  std::vector<ConfigEntry> entries;
  try {
    entries = read_config_file(path);
  } catch (const ValueError& e) {
    throw FormatError(std::string("curves: ") + e.what());
  }
  for (const ConfigEntry& entry : entries) {
    if (entry.key != "task") continue;
    try {
      return parse_task(entry.value);
    } catch (const ValueError& e) {
      throw FormatError("curves: " + entry.where + ": task: " + e.what());
    }
  }
  throw FormatError("curves: " + path + " has no task= line");
}

}  // namespace

int run_curves(const CurvesCommandOptions& options) {
  const std::filesystem::path dir(options.run_dir);
  const std::string out = options.out.empty() ? (dir / "loss.svg").string() : options.out;
  // An earlier chart (headlab's SVG starts so) is drawn again; any other file is kept, the run's
  // own files above all.
  check_replaces_only_own(
      out, [](std::string_view head) { return head.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" ", 0) == 0; },
      "curves --out", "a chart headlab drew",
      {dir / "config.ini", dir / "metrics.jsonl", dir / "checkpoint.safetensors", dir / "best.safetensors",
       dir / "summary.json"});
  const Task task = task_of_run((dir / "config.ini").string());
  const std::vector<MetricRow> rows = read_metrics(dir / "metrics.jsonl");
  CurvesOptions curves;
  curves.log_y = options.log_y;
  RunCurves drawn;
  try {
    drawn = run_curves(rows, task, curves);
  } catch (const FormatError& e) {  // "metrics row N: 'loss' is not a number: 'low'"
    throw FormatError("curves: " + (dir / "metrics.jsonl").string() + ": " + e.what());
  }
  write_file_atomic(out, drawn.svg, "curves");
  if (drawn.skipped_on_log > 0)
    std::cerr << "headlab curves: " << drawn.skipped_on_log
              << " loss values <= 0 cannot sit on the log axis and are left out\n";
  std::cout << "wrote " << out << " (" << rows.size() << " metrics rows, task " << task_name(task)
            << (options.log_y ? ", log loss axis" : "") << ")\n";
  return 0;
}

}  // namespace headlab::cli
