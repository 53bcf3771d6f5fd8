// align_command.cpp: `headlab align` (align_command.hpp).
#include "align_command.hpp"
#include "cli_values.hpp"
#include "number_text.hpp"

#include <filesystem>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "headlab/core/file_writer.hpp"
#include "headlab/data/text.hpp"
#include "headlab/lab/alignment.hpp"
#include "headlab/report/text_table.hpp"
#include "headlab/train/checkpoint.hpp"
#include "headlab/train/run_dir.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kAlignFiles = {"alignment.csv", "alignment.md"};

std::string head_label(const HeadAlignment& r) { return r.head < 0 ? "mean" : std::to_string(r.head); }

}  // namespace

CLI::App* add_align_command(CLI::App& app, AlignOptions& o) {
  auto* align = app.add_subcommand("align", "word alignments from each cross-attention head of a translation "
                                            "checkpoint, scored against gold links: precision, recall, AER");
  align->add_option("--checkpoint", o.checkpoint, "a checkpoint of the translate task")->type_name("FILE")->required();
  align->add_option("--data", o.data, "a TSV of source<TAB>target<TAB>gold links (Pharaoh \"0-0 1-2\")")->type_name("FILE")->required();
  align->add_option("--count", o.count, "score the first N pairs (0 = all)")
      ->check(whole_number(0, 1000000000))->capture_default_str();
  align->add_option("--query-step", o.query_step, "the decoder row read for a target word: predict (the step "
                                                  "that outputs it) or read (the step that takes it as input)")
      ->check(CLI::IsMember({"predict", "read"}))->capture_default_str();
  align->add_option("--out", o.out, "output directory (default: CHECKPOINT_DIR/align)")->type_name("DIR");
  align->add_flag("--overwrite", o.overwrite, "replace the files of an earlier align in the output directory");
  return align;
}

int run_align(const AlignOptions& o) {
  const QueryStep step = query_step_from_name(o.query_step);
  std::vector<ParallelPair> pairs = read_parallel_tsv(o.data);
  if (o.count && o.count < pairs.size()) pairs.resize(o.count);
  LoadedModel m = load_trained_model(o.checkpoint);
  check_alignment_inputs(m, pairs, o.data);  // before the output directory and the forward passes
  RunDirSpec spec;
  spec.command = "align";
  spec.dir_flag = "--out";
  spec.markers = kAlignFiles;
  spec.outputs = kAlignFiles;
  spec.existing = o.overwrite ? ExistingRun::overwrite : ExistingRun::refuse;
  const RunDir out(o.out.empty() ? fs::path(o.checkpoint).parent_path() / "align" : fs::path(o.out), spec);
  const std::vector<HeadAlignment> rows = align_heads(m, pairs, step, o.data);

  std::ostringstream csv;
  csv << "site,layer,head,pairs,query_step,predicted,gold,matched,precision,recall,aer\n";
  TextTable table({"cross-attention", "head", "precision", "recall", "AER"});
  for (const HeadAlignment& r : rows) {
    csv << r.site << "," << r.layer << "," << head_label(r) << "," << pairs.size() << "," << query_step_name(step) << ","
        << r.counts.predicted << "," << r.counts.gold << "," << r.counts.matched << "," << fixed(r.counts.precision(), 6)
        << "," << fixed(r.counts.recall(), 6) << "," << fixed(r.counts.aer(), 6) << "\n";
    table.add_row({"decoder layer " + std::to_string(r.layer), head_label(r), fixed(r.counts.precision()),
                   fixed(r.counts.recall()), fixed(r.counts.aer())});
  }
  const HeadAlignment* best = best_head(rows);
  std::ostringstream md;
  md << "Alignment error rate of each cross-attention head of " << markdown_inline(fs::path(o.checkpoint).filename().string())
     << " (step " << m.step << ") on the first " << pairs.size() << " pairs of "
     << markdown_inline(fs::path(o.data).filename().string())
     << "; one link per target word, the argmax source word at the decoder step that "
     << (step == QueryStep::predict ? "predicts" : "reads") << " it (AER = 1 - 2|A∩S| / (|A| + |S|)).\n\n"
     << table.markdown();
  if (best)
    md << "\nBest head: decoder layer " << best->layer << " head " << best->head << ", AER " << fixed(best->counts.aer())
       << " (precision " << fixed(best->counts.precision()) << ", recall " << fixed(best->counts.recall()) << ").\n";
  std::cout << md.str();
  write_file_atomic(out.file("alignment.csv"), csv.str(), "align");
  write_file_atomic(out.file("alignment.md"), md.str(), "align");
  std::cout << "wrote alignment.csv and alignment.md in " << out.path().string() << "\n";
  return 0;
}

}  // namespace headlab::cli
