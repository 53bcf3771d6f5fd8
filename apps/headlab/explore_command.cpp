// explore_command.cpp: `headlab explore` (explore_command.hpp).
#include "explore_command.hpp"
#include "head_lab_commands.hpp"
#include "cli_values.hpp"
#include "model_input.hpp"
#include "token_ids.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <xtensor/xview.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/data/text.hpp"
#include "headlab/lab/explorer.hpp"
#include "headlab/report/explorer_page.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/train/translate_task.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

namespace {

// --align-data: a pair as the model reads it under teacher forcing: source pieces + </s>, and the
// decoder's input <s> + the reference's pieces (ValueError naming FILE:LINE when it is too long).
ExplorerInput pair_input(const LoadedModel& m, const ParallelPair& pair, const std::string& file) {
  const EncodedPair e = encode_evaluation_pairs(m.src_vocab, m.tgt_vocab, {pair}, m.options.max_len, file).at(0);
  return {one_row(e.source), one_row(std::vector<std::int64_t>(e.target.begin(), e.target.end() - 1))};
}

// An existing file at `path` without --overwrite is a usage error naming the flag.
void check_output(const std::string& path, const char* flag, bool overwrite) {
  std::error_code ec;
  if (path.empty()) return;
  if (fs::is_directory(path, ec)) throw ValueError(std::string(flag) + ": " + path + " is a directory, not a file");
  if (fs::exists(path, ec) && !overwrite)
    throw ValueError(std::string(flag) + ": " + path + " exists; give --overwrite to replace it");
}

}  // namespace

CLI::App* add_explore_command(CLI::App& app, ExploreOptions& o) {
  auto* explore = app.add_subcommand("explore", "the head explorer: one self-contained HTML page of a checkpoint's "
                                                "attention patterns, head scores and its run's curves");
  explore->add_option("--checkpoint", o.checkpoint, "a checkpoint of the copy, translate, induction, lm or recall task")->type_name("FILE")->required();
  explore->add_option("--out", o.out, "the HTML file to write")->type_name("FILE")->required();
  explore->add_option("--input", o.input, "input of the attention patterns: token ids \"1 4 2 9\"; translate: a "
                                          "source sentence; lm: a text (default: the first probe sequence)");
  explore->add_option("--probe-sequences", o.probe_sequences, "repeated-random-token sequences scored (as heads)")
      ->check(whole_number(1, 100000))->capture_default_str();
  explore->add_option("--block", o.block, "their repeated block T (0 = the model's own, or the largest that fits, "
                                          "at most 16)")
      ->check(whole_number(0, 1000000000))->capture_default_str();
  explore->add_option("--seed", o.seed, "seed of the probe")->check(whole_number())->capture_default_str();
  add_window_flags(explore, o.window);
  explore->add_option("--dump-json", o.dump_json, "also write the page's data as JSON to this file")->type_name("FILE");
  explore->add_flag("--overwrite", o.overwrite, "replace an existing --out (and --dump-json) file");
  explore->add_option("--max-memory", o.max_memory, "refuse a probe whose memory estimate is above this: 4G, "
                                                    "512M or bytes (default: the available memory)");
  auto* align = explore->add_option("--align-data", o.align_data,
                                    "translate: a TSV with gold links (source<TAB>target<TAB>\"0-0 1-2\"): one of its "
                                    "pairs is the input, its gold links are drawn on the cross-attention maps and "
                                    "each head's AER is in the scores table")->type_name("FILE");
  align->excludes("--input");
  explore->add_option("--align-pair", o.align_pair, "--align-data: the pair shown (1 = the first)")
      ->check(whole_number(1, 1000000000))->capture_default_str()->needs(align);
  explore->add_option("--align-count", o.align_count, "--align-data: the first N pairs scored for AER (0 = all)")
      ->check(whole_number(0, 1000000000))->capture_default_str()->needs(align);
  return explore;
}

int run_explore(const ExploreOptions& o) {
  check_output_location(o.out, "--out");
  if (!o.dump_json.empty()) check_output_location(o.dump_json, "--dump-json");
  check_output_file(o.out, {o.checkpoint, o.dump_json, o.align_data}, "--out");
  check_output_file(o.dump_json, {o.checkpoint, o.align_data}, "--dump-json");
  if (!o.dump_json.empty() && fs::path(o.out).lexically_normal() == fs::path(o.dump_json).lexically_normal())
    throw ValueError("--dump-json: the same file as --out");
  check_output(o.out, "--out", o.overwrite);
  check_output(o.dump_json, "--dump-json", o.overwrite);
  LoadedModel m = load_trained_model(o.checkpoint);
  const std::string window = apply_window_override(m, o.window);
  const Probe probe = repeated_tokens_probe(m, o.probe_sequences, o.block, o.seed);
  check_probe_memory(m.options, output_vocabulary(m), o.probe_sequences,
                     probe.sequences.shape()[1], o.max_memory, "explore");
  std::vector<ParallelPair> gold;  // --align-data: the pairs scored; the shown one is gold_shown
  ParallelPair gold_shown;
  if (!o.align_data.empty()) {
    if (m.options.task != Task::translate)
      throw ValueError("--align-data: gold links are for translation checkpoints; this one is '" +
                       task_name(m.options.task) + "'");
    gold = read_parallel_tsv(o.align_data);
    if (o.align_pair > gold.size())
      throw ValueError("--align-pair: " + o.align_data + " has " + std::to_string(gold.size()) + " pairs, not " +
                       std::to_string(o.align_pair));
    if (o.align_count && o.align_pair > o.align_count)
      throw ValueError("--align-pair " + std::to_string(o.align_pair) + " is past the first " +
                       std::to_string(o.align_count) + " pairs that --align-count scores");
    gold_shown = gold[o.align_pair - 1];
    if (o.align_count && o.align_count < gold.size()) gold.resize(o.align_count);
  }
  const ExplorerInput input = o.align_data.empty() ? explorer_input(m, o.input, probe) : pair_input(m, gold_shown, o.align_data);
  ExplorerData data = collect_explorer_data(m, input, probe, o.probe_sequences, o.seed);
  if (!o.align_data.empty()) add_gold_alignment(data, m, gold_shown, gold, QueryStep::predict, o.align_data);
  const fs::path checkpoint(o.checkpoint);
  const fs::path run_dir = checkpoint.parent_path().empty() ? fs::path(".") : checkpoint.parent_path();
  // The run directory's name and the file, never the absolute path.
  data.title = fs::absolute(run_dir).lexically_normal().filename().string();
  if (data.title.empty()) data.title = fs::absolute(run_dir).lexically_normal().parent_path().filename().string();
  data.title += "/" + checkpoint.filename().string();
  if (!window.empty()) data.title += " [" + window + "]";
  add_run_results(data, run_dir);
  const std::string no_circuits = add_circuits(data, m);  // 64 rows, seed 1: as `headlab patch` and `attribute`
  const std::string json = explorer_json(data);
  if (!o.dump_json.empty()) write_file_atomic(o.dump_json, json, "explore");
  write_file_atomic(o.out, explorer_page(json, "head explorer: " + data.title), "explore");
  std::size_t heads = 0;
  for (const auto& s : data.sites) heads += s.weights.shape()[0];
  std::cout << "wrote " << o.out << ": " << data.sites.size() << " attention modules, " << heads << " heads, "
            << input.target.shape()[1] << " tokens" << (data.prune.empty() ? "" : ", pruning curves")
            << (data.curves.empty() ? "" : ", training curves")
            << (data.circuits ? data.circuits->attributed ? ", patching and attribution" : ", patching" : "") << "\n";
  if (!no_circuits.empty()) std::cout << "no circuits view: " << no_circuits << "\n";
  return 0;
}

}  // namespace headlab::cli
