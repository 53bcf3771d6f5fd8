// heads_command.cpp: `headlab heads` (head roles, attention maps) on a trained checkpoint;
// `headlab prune` is in prune_command.cpp.
// The measurements live in headlab/lab/heads.hpp; this file reads flags, writes files.
#include "checkpoint_name.hpp"
#include "head_lab_commands.hpp"
#include "lab_outputs.hpp"
#include "recall_keys_report.hpp"
#include "token_ids.hpp"
#include "number_text.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include <xtensor/xview.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/report/report.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/memory_estimate.hpp"
#include "headlab/train/run_dir.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab::cli {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kHeadsFiles = {"heads.csv",
                                              "attention_maps.svg",
                                              "heatmap_entropy.svg",
                                              "heatmap_sink_mass.svg",
                                              "heatmap_previous_token.svg",
                                              "heatmap_induction.svg",
                                              "heatmap_gate_mean.svg",
                                              "recall_keys.csv",
                                              "recall_share.csv"};

IndexArray row_of(const std::vector<std::int64_t>& ids) {
  IndexArray a = IndexArray::from_shape({1, ids.size()});
  for (std::size_t i = 0; i < ids.size(); ++i) a(0, i) = ids[i];
  return a;
}

// The tokens of a row of ids as text: a translation model's words, a language model's
// characters (a space as "␣"), the copy and induction tasks' numbered symbols; the specials as
// <pad>, <s>, </s>, <unk> (the copy task's start symbol 1 is <s> only at position 0: later it is
// an ordinary symbol).
std::vector<std::string> labels_of(const IndexArray& row, const LoadedModel& m, const Vocabulary* words) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < row.shape()[1]; ++i) {
    const std::int64_t id = row(0, i);
    std::string label = std::to_string(id);
    if (words) {
      label = words->token(id);
    } else if (m.options.task == Task::lm) {
      label = m.lm_vocab.token(id);
      if (label == " ") label = "\xE2\x90\xA3";  // U+2423 OPEN BOX
    } else if (id == Vocabulary::pad) {
      label = "<pad>";
    } else if (id == Vocabulary::bos && (i == 0 || m.options.task != Task::copy)) {
      label = "<s>";
    }
    out.push_back(label);
  }
  return out;
}

// A panel's title: the head and its role with its score, "head 2: induction 0.91" (the strongest
// score when it is > 0.4, Olsson et al.'s convention), "head 2 (no role)" when every score is at
// most 0.4, or "head 2" when no score was computed.
std::string panel_title(std::size_t head, const HeadRoles* roles) {
  std::string title = "head " + std::to_string(head);
  if (!roles) return title;
  const std::pair<const char*, double> scores[] = {
      {"induction", roles->induction}, {"prev-token", roles->previous_token}, {"sink", roles->sink_mass}};
  const auto* best = &scores[0];
  for (const auto& s : scores)
    if (s.second > best->second) best = &s;
  return best->second > 0.4 ? title + ": " + best->first + " " + fixed(best->second, 2) : title + " (no role)";
}

// The attention maps' input: the first probe sequence, or --input (checked here, before the
// output directory is touched).
struct MapInput {
  IndexArray source, target;
};

MapInput attention_input(LoadedModel& m, const HeadsOptions& o, const Probe& probe) {
  IndexArray source, target;
  const TrainOptions& opt = m.options;
  if (o.input.empty()) {
    source = target = xt::view(probe.sequences, xt::range(0, 1), xt::all());
  } else if (opt.task == Task::translate) {
    const std::vector<std::int64_t> src = [&] {
      std::vector<std::int64_t> ids = m.src_vocab.encode(tokenize(o.input));
      ids.push_back(Vocabulary::eos);
      return ids;
    }();
    if (src.size() > opt.max_len)
      throw ValueError("--input has " + std::to_string(src.size()) + " ids with </s>; the model takes at most " +
                       std::to_string(opt.max_len));
    source = row_of(src);
    DecodeOptions d;
    d.beam = 1;
    const auto words = translate_sentences(*m.model, m.src_vocab, m.tgt_vocab, {o.input}, d).at(0);
    std::vector<std::int64_t> tgt{Vocabulary::bos};
    for (std::int64_t id : m.tgt_vocab.encode(words)) tgt.push_back(id);
    if (tgt.size() > opt.max_len) tgt.resize(opt.max_len);
    target = row_of(tgt);
  } else if (opt.task == Task::lm) {  // a text, in the model's characters or words
    const std::vector<std::int64_t> ids = m.lm_vocab.encode_prompt(o.input);
    if (std::count(ids.begin(), ids.end(), LmVocabulary::unk) > 0)
      throw ValueError("--input: " + quote_clipped(o.input, 40) + " holds tokens the model's vocabulary lacks");
    if (ids.empty() || ids.size() > m.lm->config().max_len)
      throw ValueError("--input: give a text of 1 to " + std::to_string(m.lm->config().max_len) + " tokens (the model's context), got " +
                       std::to_string(ids.size()));
    source = target = row_of(ids);
  } else {
    const std::size_t max_len = opt.task == Task::copy ? opt.length : 2 * opt.length + 1;  // induction, recall: 2 n + 1
    const std::vector<std::int64_t> ids = parse_token_ids(o.input, m.lm ? m.lm->config().tgt_vocab : opt.vocab, "--input");
    if (ids.empty() || ids.size() > max_len)
      throw ValueError("--input: give 1 to " + std::to_string(max_len) + " token ids (the model's length)");
    source = target = row_of(ids);
  }
  return {source, target};
}

// The attention-map picture: one row of panels per site, one panel per head.
// `roles` are head_roles' rows (site order, heads within), for the panel titles.
void write_attention_maps(LoadedModel& m, const HeadsOptions& o, const MapInput& input,
                          const std::vector<HeadRoles>& roles, const fs::path& path) {
  const IndexArray& source = input.source;
  const IndexArray& target = input.target;
  const bool words = m.options.task == Task::translate;  // the probe's ids are words of both vocabularies
  const std::vector<std::string> src_labels = labels_of(source, m, words ? &m.src_vocab : nullptr);
  const std::vector<std::string> tgt_labels = labels_of(target, m, words ? &m.tgt_vocab : nullptr);
  std::vector<AttentionSite> sites = attention_sites(m);
  const std::vector<Array<float>> maps = attention_maps(m, source, target);
  std::vector<std::vector<AttentionPanel>> panels;
  AttentionGridOptions grid;
  grid.title = "attention maps: " + checkpoint_name(o.checkpoint) + " (" + task_name(m.options.task) + ", step " +
               std::to_string(m.step) + ")";
  std::size_t role_row = 0;
  for (std::size_t s = 0; s < sites.size(); ++s) {
    const Array<float>& w = maps[s];  // (h, L, S)
    const bool encoder = sites[s].kind == "encoder self", cross = sites[s].kind == "cross";
    std::vector<AttentionPanel> row;
    for (std::size_t h = 0; h < w.shape()[0]; ++h) {
      AttentionPanel p;
      p.title = panel_title(h, role_row < roles.size() ? &roles[role_row] : nullptr);
      ++role_row;
      p.weights.assign(w.shape()[1], std::vector<double>(w.shape()[2]));
      for (std::size_t i = 0; i < w.shape()[1]; ++i)
        for (std::size_t j = 0; j < w.shape()[2]; ++j) p.weights[i][j] = double(w(h, i, j));
      p.query_labels = encoder ? src_labels : tgt_labels;
      p.key_labels = (encoder || cross) ? src_labels : tgt_labels;
      row.push_back(std::move(p));
    }
    panels.push_back(std::move(row));
    grid.row_titles.push_back(sites[s].name);
  }
  grid.cell = source.shape()[1] > 24 || target.shape()[1] > 24 ? 9 : 14;
  write_file_atomic(path, svg_attention_grid(panels, grid), "heads");
}

}  // namespace

std::size_t output_vocabulary(const LoadedModel& m) {
  return m.lm ? m.lm->config().tgt_vocab : m.model->config().tgt_vocab;
}

void check_probe_memory(const TrainOptions& options, std::size_t vocab, std::size_t sequences, std::size_t length,
                        const std::string& max_memory, const std::string& command) {
  double limit = 0;
  try {
    limit = max_memory.empty() ? available_memory() : parse_memory_size(max_memory);
  } catch (const ValueError& e) {
    throw ValueError("--max-memory: " + std::string(e.what()));
  }
  try {
    check_memory(estimate_probe_memory(options, vocab, sequences, length), limit,
                 command + " --probe-sequences " + std::to_string(sequences),
                 "lower --probe-sequences" + std::string(max_memory.empty() ? "" : " (or raise --max-memory)"));
  } catch (const OutOfMemory& e) {  // asked of the user's values, before anything ran: a usage error (exit 2)
    throw ValueError(e.what());
  }
}

// heads --text: windows of the file, encoded with the model's vocabulary (a language model only).
static Probe text_probe_of(const LoadedModel& m, const HeadsOptions& o) {
  if (m.options.task != Task::lm)
    throw ValueError("--text: a text probe is for language-model checkpoints (task lm), this one is '" +
                     task_name(m.options.task) + "'");
  const std::string text = read_text_file(o.text, "heads --text", kMaxTextFileBytes);
  std::vector<std::int64_t> ids;
  try {
    ids = m.lm_vocab.encode(text);
  } catch (const ValueError& e) {  // invalid UTF-8: a bad file, named
    throw FormatError("heads --text: " + o.text + ": " + e.what());
  }
  return text_probe(m, ids, o.probe_sequences, o.seed);
}

int run_heads(const HeadsOptions& o) {
  check_output_location(lab_output_path(o.out, o.checkpoint, "heads"), "--out", /*made_with_parents=*/true);
  LoadedModel m = load_trained_model(o.checkpoint);
  const std::string window = apply_window_override(m, o.window);  // before the probe: it reads the model's window
  const Probe probe = o.text.empty() ? repeated_tokens_probe(m, o.probe_sequences, o.block, o.seed) : text_probe_of(m, o);
  const QueryRange sink_queries = parse_query_range(o.sink_queries, probe.block);
  check_probe_memory(m.options, output_vocabulary(m), o.probe_sequences,
                     probe.sequences.shape()[1], o.max_memory, "heads");
  const MapInput input = attention_input(m, o, probe);  // a bad --input leaves the directory alone
  const std::vector<HeadRoles> rows = head_roles(m, probe, sink_queries);  // an empty --sink-queries range too
  // recall models: also where each head looks among the keys of held-out queries (the run's own)
  const std::vector<RecallKeyMass> recall_rows =
      m.options.task == Task::recall ? recall_key_mass(m, held_out_recall_sequences(m.options, o.probe_sequences))
                                     : std::vector<RecallKeyMass>{};
  const RunDir out(lab_output_path(o.out, o.checkpoint, "heads"), lab_output_spec("heads", kHeadsFiles, o.overwrite));
  const fs::path& dir = out.path();
  std::vector<AttentionSite> sites = attention_sites(m);
  const bool gated = m.options.gate != GateKind::none;

  std::cout << "head roles of " << o.checkpoint << " (" << task_name(m.options.task) << " task, step " << m.step << ") on "
            << o.probe_sequences;
  if (o.text.empty()) std::cout << " repeated random blocks of " << probe.block << " tokens\n";
  else std::cout << " windows of " << probe.sequences.shape()[1] << " tokens of " << o.text << "\n";
  const bool text = !o.text.empty();
  if (!window.empty()) std::cout << window << "\n";
  std::ostringstream csv;
  csv << "site,kind,layer,head,entropy,sink_mass,previous_token,induction,gate_mean,max_abs_output,sink_uniform,"
         "sink_queries,max_logit,max_residual,delimiter,delimiter_uniform,gate_queries,previous_token_uniform,"
         "induction_uniform\n";
  std::cout << std::left << std::setw(34) << "site" << std::right << std::setw(5) << "head" << std::setw(9) << "entropy"
            << std::setw(7) << "sink" << std::setw(7) << "prev" << std::setw(7) << "induct" << std::setw(9) << "logit"
            << (gated ? "   gate" : "") << (text ? "  delim" : "") << "   role\n";
  for (const auto& r : rows) {
    csv << r.site << "," << r.kind << "," << r.layer << "," << r.head << "," << fixed(r.entropy, 6) << ","
        << fixed(r.sink_mass, 6) << "," << fixed(r.previous_token, 6) << "," << fixed(r.induction, 6) << ","
        << fixed(r.gate_mean, 6) << "," << fixed(r.max_abs_output, 6) << "," << fixed(r.sink_uniform, 6) << ","
        << r.sink_queries << "," << fixed(r.max_logit, 6) << "," << fixed(r.max_residual, 6) << ","
        << fixed(r.delimiter, 6) << "," << fixed(r.delimiter_uniform, 6) << "," << fixed(r.gate_queries, 6) << ","
        << fixed(r.previous_token_uniform, 6) << "," << fixed(r.induction_uniform, 6) << "\n";
    std::string role;  // the > 0.4 convention of Olsson et al.
    if (r.induction > 0.4) role += " induction";
    if (r.previous_token > 0.4) role += " previous-token";
    if (r.sink_mass > 0.4) role += " sink";
    if (r.delimiter > 0.4) role += " delimiter";
    std::cout << std::left << std::setw(34) << r.site << std::right << std::setw(5) << r.head << std::setw(9)
              << fixed(r.entropy, 2) << std::setw(7) << fixed(r.sink_mass, 2) << std::setw(7)
              << fixed(r.previous_token, 2) << std::setw(7) << fixed(r.induction, 2) << std::setw(9)
              << fixed(r.max_logit, 2) << (gated ? "  " + fixed(r.gate_mean, 3) : "")
              << (text ? "  " + fixed(r.delimiter, 3) : "") << "  " << role << "\n";
  }

  // The sink beside its baseline: per module the largest and the mean sink mass over the heads, and
  // what uniform attention over the same visible keys gives on the same queries; then Qiu et al.'s
  // two statistics, the largest attention logit (its head) and the largest residual activation.
  std::cout << "sink mass on queries " << (rows.empty() ? "" : rows[0].sink_queries)
            << " per module (max over heads, mean; uniform attention's baseline):\n";
  for (std::size_t k = 0; k < rows.size();) {
    std::size_t end = k, top = k, top_logit = k;
    double sum = 0;
    for (; end < rows.size() && rows[end].site == rows[k].site; ++end) {
      sum += rows[end].sink_mass;
      if (rows[end].sink_mass > rows[top].sink_mass) top = end;
      if (rows[end].max_logit > rows[top_logit].max_logit) top_logit = end;
    }
    const double uniform = rows[k].sink_uniform;
    std::cout << "  " << std::left << std::setw(34) << rows[k].site << std::right << " max " << fixed(rows[top].sink_mass)
              << " (head " << rows[top].head << ", "
              << (uniform > 0 ? fixed(rows[top].sink_mass / uniform, 1) + "x uniform" : "key 0 hidden from these queries")
              << "), mean "
              << fixed(sum / double(end - k)) << "; uniform " << fixed(uniform) << "; max logit "
              << fixed(rows[top_logit].max_logit, 2) << " (head " << rows[top_logit].head << "); max |residual| "
              << fixed(rows[k].max_residual, 2) << "\n";
    k = end;
  }
  write_file_atomic(dir / "heads.csv", csv.str(), "heads");

  // One heatmap per score over (site, head).
  // Fixed scales: entropy from 0 (one key) to ln S (uniform over the probe's S keys), the
  // weights and gates from 0 to 1.
  const std::size_t keys = probe.sequences.shape()[1];
  struct Score {
    const char* key;
    std::string title;
    double HeadRoles::*field;
    double vmax;
    const char* scale;
    double HeadRoles::*uniform = nullptr;  // uniform attention's score, marked when every module has the same
  };
  const std::string name = checkpoint_name(o.checkpoint);
  std::vector<Score> scores = {
      {"entropy", "attention entropy: " + name, &HeadRoles::entropy, std::log(double(keys)),
       "nats (max ln S)"},
      {"sink_mass", "sink mass (weight on position 0): " + name, &HeadRoles::sink_mass, 1.0, "weight",
       &HeadRoles::sink_uniform},
      {"previous_token", "previous-token score: " + name, &HeadRoles::previous_token, 1.0, "weight",
       &HeadRoles::previous_token_uniform},
      {"induction", "induction score: " + name, &HeadRoles::induction, 1.0, "weight", &HeadRoles::induction_uniform}};
  if (gated) scores.push_back({"gate_mean", "mean gate value: " + name, &HeadRoles::gate_mean, 1.0, "gate"});
  for (const auto& score : scores) {
    std::vector<std::vector<double>> values(sites.size());
    std::size_t k = 0;  // rows are in site order, heads within
    for (std::size_t s = 0; s < sites.size(); ++s)
      for (std::size_t h = 0; h < sites[s].heads(); ++h) values[s].push_back(rows[k++].*score.field);
    std::optional<double> reference;  // one line on the colour bar only when it holds for every module
    if (score.uniform && !rows.empty() && std::isfinite(rows[0].*score.uniform) &&
        std::all_of(rows.begin(), rows.end(), [&](const HeadRoles& r) { return r.*score.uniform == rows[0].*score.uniform; }))
      reference = rows[0].*score.uniform;
    write_file_atomic(dir / ("heatmap_" + std::string(score.key) + ".svg"),
                      site_heatmap(sites, values, score.title, score.vmax, score.scale, reference), "heads");
  }
  write_attention_maps(m, o, input, rows, dir / "attention_maps.svg");
  report_recall_keys(recall_rows, dir);
  std::cout << "wrote " << (dir / "heads.csv").string() << ", attention_maps.svg"
            << (recall_rows.empty() ? "" : ", recall_keys.csv, recall_share.csv") << " and heatmap_*.svg in "
            << dir.string() << "\n";
  return 0;
}

}  // namespace headlab::cli
