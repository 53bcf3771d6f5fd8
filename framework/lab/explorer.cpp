// explorer.cpp: the head explorer's data and its JSON (headlab/lab/explorer.hpp).
#include "headlab/lab/explorer.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/report/metrics.hpp"

namespace headlab {

namespace fs = std::filesystem;

std::string token_text(const LoadedModel& m, std::int64_t id, bool source) {
  static const char* const specials[] = {"<pad>", "<s>", "</s>", "<unk>"};
  if (m.options.task == Task::translate) return (source ? m.src_vocab : m.tgt_vocab).token(id);
  if (m.options.task == Task::lm) return m.lm_vocab.token(id);
  if (m.options.task == Task::recall) return recall_layout(m.options).token_text(id);  // "k3=v5", "?k3,k7"
  return id < 2 ? specials[id] : std::to_string(id);  // copy / induction: 0 <pad>, 1 <s>, symbols from 2
}

ExplorerData collect_explorer_data(LoadedModel& m, const ExplorerInput& input, const Probe& probe,
                                   std::size_t probe_sequences, std::uint64_t probe_seed) {
  ExplorerData d;
  d.task = m.options.task;
  d.step = m.step;
  d.gated = m.options.gate != GateKind::none;
  d.probe_sequences = probe_sequences;
  d.probe_block = probe.block;
  d.probe_seed = probe_seed;
  auto texts = [&](const IndexArray& row, bool source) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < row.shape()[1]; ++i) out.push_back(token_text(m, row(0, i), source));
    return out;
  };
  const std::vector<std::string> source = texts(input.source, true), target = texts(input.target, false);
  const std::vector<AttentionSite> sites = attention_sites(m);
  std::vector<Array<float>> maps = attention_maps(m, input.source, input.target);  // (h, L, S) per site
  for (std::size_t s = 0; s < sites.size(); ++s) {
    ExplorerSite site;
    site.name = sites[s].name;
    site.kind = sites[s].kind;
    site.layer = sites[s].layer;
    const bool encoder = site.kind == "encoder self", cross = site.kind == "cross";
    site.query_tokens = encoder ? source : target;
    site.key_tokens = (encoder || cross) ? source : target;
    site.weights = std::move(maps[s]);
    d.sites.push_back(std::move(site));
  }
  d.scores = head_roles(m, probe);
  return d;
}

void add_gold_alignment(ExplorerData& d, LoadedModel& m, const ParallelPair& shown,
                        const std::vector<ParallelPair>& scored, QueryStep step, const std::string& file) {
  const std::vector<HeadAlignment> rows = align_heads(m, scored, step, file);  // refuses a non-translate model
  if (shown.alignment.empty())
    throw ValueError("explore: " + file + ":" + std::to_string(shown.line) + ": no gold alignment to draw");
  const std::vector<std::size_t> source_words = word_of_pieces(m.src_vocab.pieces(tokenize(shown.source)));
  const std::vector<std::size_t> target_words = word_of_pieces(m.tgt_vocab.pieces(tokenize(shown.target)));
  d.aer.assign(d.sites.size(), {});
  for (std::size_t s = 0; s < d.sites.size(); ++s) {
    ExplorerSite& site = d.sites[s];
    d.aer[s].assign(site.weights.shape()[0], std::numeric_limits<double>::quiet_NaN());
    if (site.kind != "cross") continue;
    // weights (h, L, S): L >= n + 1 decoder rows for n target pieces, S >= m source pieces
    if (site.weights.shape()[1] < target_words.size() + 1 || site.weights.shape()[2] < source_words.size())
      throw ValueError("explore: the maps were not computed on " + file + ":" + std::to_string(shown.line));
    site.gold = gold_cells(shown.alignment, source_words, target_words, step);
    for (const HeadAlignment& r : rows)
      if (r.site == site.name && r.head >= 0) d.aer[s][std::size_t(r.head)] = r.counts.aer();
  }
  d.alignment_pairs = scored.size();
  d.alignment_file = fs::path(file).filename().string();
  d.alignment_step = query_step_name(step);
}

// ---- The run's files ----------------------------------------------------------------------------
namespace {

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

// The data lines of a CSV file whose header starts with `header`, split at commas, each with
// at least `columns` cells; `where` of each line is "FILE:N".
struct CsvLine {
  std::string where;
  std::vector<std::string> cells;
};
std::vector<CsvLine> read_csv(const fs::path& path, const std::string& header, std::size_t columns) {
  std::istringstream in(read_regular_file(path.string(), "explore"));
  std::string line;
  std::vector<CsvLine> out;
  if (!std::getline(in, line) || line.rfind(header, 0) != 0)
    throw FormatError(path.string() + ":1: the header should start with " + header);
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    CsvLine l{path.string() + ":" + std::to_string(n), split_commas(line)};
    if (l.cells.size() < columns)
      throw FormatError(l.where + ": " + std::to_string(l.cells.size()) + " fields, expected " + std::to_string(columns));
    out.push_back(std::move(l));
  }
  return out;
}

double number_cell(const CsvLine& l, std::size_t i, const char* column) {
  try {
    return parse_real_number(l.cells[i]);
  } catch (const ValueError&) {
    throw FormatError(l.where + ": " + column + " " + quote_clipped(l.cells[i], 40) + " is not a number");
  }
}

std::size_t count_cell(const CsvLine& l, std::size_t i, const char* column) {
  try {
    return static_cast<std::size_t>(parse_whole_number(l.cells[i]));
  } catch (const ValueError&) {
    throw FormatError(l.where + ": " + column + " " + quote_clipped(l.cells[i], 40) + " is not a whole number");
  }
}

}  // namespace

std::string prune_metric_name(Task task) {
  switch (task) {
    case Task::copy: return "exact match";
    case Task::induction: return "repeated-half accuracy";
    case Task::translate: return "BLEU";
    case Task::lm: return "metric";
    case Task::recall: return "answer accuracy";
  }
  return "metric";
}

std::vector<PruneRow> read_prune_csv(const fs::path& path) {
  std::vector<PruneRow> rows;
  for (const CsvLine& l : read_csv(path, "order,pruned,fraction,loss,metric", 5)) {
    PruneRow r;
    r.order = l.cells[0];
    if (r.order != "importance" && r.order.rfind("random", 0) != 0)
      throw FormatError(l.where + ": order " + quote_clipped(r.order, 40) + " is neither importance nor random*");
    r.pruned = count_cell(l, 1, "pruned");
    r.fraction = number_cell(l, 2, "fraction");
    r.loss = number_cell(l, 3, "loss");
    r.metric = number_cell(l, 4, "metric");
    rows.push_back(r);
  }
  return rows;
}

std::vector<std::vector<double>> read_importance_csv(const fs::path& path, const std::vector<ExplorerSite>& sites) {
  std::vector<std::vector<double>> out(sites.size());
  for (std::size_t s = 0; s < sites.size(); ++s) out[s].assign(sites[s].weights.shape()[0], std::nan(""));
  for (const CsvLine& l : read_csv(path, "site,head,importance_raw,importance_normalised", 4)) {
    std::size_t s = 0;
    while (s < sites.size() && sites[s].name != l.cells[0]) ++s;
    if (s == sites.size()) throw FormatError(l.where + ": the model has no site " + quote_clipped(l.cells[0], 60));
    const std::size_t h = count_cell(l, 1, "head");
    if (h >= out[s].size())
      throw FormatError(l.where + ": head " + std::to_string(h) + " of a site with " + std::to_string(out[s].size()));
    if (!std::isnan(out[s][h])) throw FormatError(l.where + ": " + l.cells[0] + " head " + l.cells[1] + " again");
    out[s][h] = number_cell(l, 3, "importance_normalised");
  }
  return out;
}

void add_run_results(ExplorerData& d, const fs::path& run_dir) {
  const fs::path importance = run_dir / "prune" / "importance.csv", prune = run_dir / "prune" / "prune.csv",
                 metrics = run_dir / "metrics.jsonl";
  std::error_code ec;
  if (fs::exists(importance, ec)) d.importance = read_importance_csv(importance, d.sites);
  if (fs::exists(prune, ec)) {
    d.prune = read_prune_csv(prune);
    d.prune_metric = prune_metric_name(d.task);
  }
  if (fs::exists(metrics, ec)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<MetricRow> rows = read_metrics(metrics);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const MetricRow& row = rows[i];
      if (!row.has("step")) continue;
      try {
        CurvePoint p{metric_number(row, "step", i), nan, nan};
        if (row.has("loss")) p.loss = metric_number(row, "loss", i);
        if (row.has("valid_loss")) p.valid_loss = metric_number(row, "valid_loss", i);
        if (!std::isnan(p.loss) || !std::isnan(p.valid_loss)) d.curves.push_back(p);
      } catch (const FormatError& e) {  // "metrics row 3: 'loss' is not a number: 'true'"
        throw FormatError(metrics.string() + ": " + e.what());
      }
    }
  }
}

// ---- JSON -----------------------------------------------------------------------------------------
namespace {
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

std::string explorer_json(const ExplorerData& d) {
  using nlohmann::json;
  json j;
  j["title"] = d.title;
  j["task"] = task_name(d.task);
  j["step"] = d.step;
  j["gated"] = d.gated;
  j["probe"] = {{"sequences", d.probe_sequences}, {"block", d.probe_block}, {"seed", d.probe_seed}};
  // The "is a head" convention of `headlab heads` (Olsson et al.): score > 0.4.
  j["thresholds"] = {{"induction", 0.4}, {"previous_token", 0.4}, {"sink_mass", 0.4}};
  j["entropy_max"] = std::log(double(2 * d.probe_block + 1));  // ln S of the probe's last query
  j["sites"] = json::array();
  for (const ExplorerSite& s : d.sites) {  // weights to 6 decimals: the page shows 3
    const std::size_t H = s.weights.shape()[0], L = s.weights.shape()[1], S = s.weights.shape()[2];
    json heads = json::array();
    for (std::size_t h = 0; h < H; ++h) {
      json rows = json::array();
      for (std::size_t i = 0; i < L; ++i) {
        json row = json::array();
        for (std::size_t k = 0; k < S; ++k) row.push_back(std::round(double(s.weights(h, i, k)) * 1e6) / 1e6);
        rows.push_back(std::move(row));
      }
      heads.push_back(std::move(rows));
    }
    j["sites"].push_back({{"name", s.name}, {"kind", s.kind}, {"layer", s.layer}, {"heads", H},
                          {"queries", s.query_tokens}, {"keys", s.key_tokens}, {"weights", std::move(heads)},
                          {"gold", s.gold}});
  }
  j["scores"] = json::array();
  std::size_t site = 0;
  for (const HeadRoles& r : d.scores) {
    while (site < d.sites.size() && d.sites[site].name != r.site) ++site;
    const bool has_importance = site < d.importance.size() && r.head < d.importance[site].size();
    const bool has_aer = site < d.aer.size() && r.head < d.aer[site].size();
    j["scores"].push_back({{"site", r.site}, {"kind", r.kind}, {"layer", r.layer}, {"head", r.head},
                           {"entropy", number_or_null(r.entropy)}, {"sink_mass", number_or_null(r.sink_mass)},
                           {"sink_uniform", number_or_null(r.sink_uniform)},
                           {"previous_token", number_or_null(r.previous_token)},
                           {"induction", number_or_null(r.induction)}, {"gate_mean", number_or_null(r.gate_mean)},
                           {"importance", has_importance ? number_or_null(d.importance[site][r.head]) : json(nullptr)},
                           {"aer", has_aer ? number_or_null(d.aer[site][r.head]) : json(nullptr)}});
  }
  if (d.prune.empty()) {
    j["prune"] = nullptr;
  } else {
    json rows = json::array();
    for (const PruneRow& p : d.prune)
      rows.push_back({{"order", p.order}, {"pruned", p.pruned}, {"fraction", p.fraction},
                      {"loss", number_or_null(p.loss)}, {"metric", number_or_null(p.metric)}});
    j["prune"] = {{"metric", d.prune_metric}, {"rows", std::move(rows)}};
  }
  j["alignment"] = d.alignment_file.empty() ? json(nullptr)
                                             : json({{"pairs", d.alignment_pairs}, {"file", d.alignment_file},
                                                     {"query_step", d.alignment_step}});
  j["curves"] = json::array();
  for (const CurvePoint& p : d.curves)
    j["curves"].push_back({{"step", p.step}, {"loss", number_or_null(p.loss)}, {"valid_loss", number_or_null(p.valid_loss)}});
  j["circuits"] = nullptr;
  if (d.circuits) {
    const ExplorerCircuits& c = *d.circuits;
    json patching = json::array(), terms = json::array();
    for (std::size_t m = 0; m < c.shares.size(); ++m) {
      json shares = json::array();
      for (double v : c.shares[m]) shares.push_back(number_or_null(v));
      patching.push_back({{"site", c.patched_sites[m]}, {"shares", std::move(shares)}});
    }
    for (const ExplorerCircuits::Term& t : c.terms)
      terms.push_back({{"name", t.name}, {"site", t.site.empty() ? json(nullptr) : json(t.site)}, {"head", t.head},
                       {"mean", number_or_null(t.mean)}});
    j["circuits"] = {{"rule", c.rule}, {"rows", c.rows}, {"seed", c.seed}, {"position", c.per_row_position ? json(nullptr) : json(c.position)},
                     {"clean_difference", number_or_null(c.clean_difference)},
                     {"corrupted_difference", number_or_null(c.corrupted_difference)}, {"patching", std::move(patching)},
                     {"attribution", c.attributed ? json({{"logit", number_or_null(c.logit)},
                                                          {"constant", number_or_null(c.constant)},
                                                          {"max_sum_error", number_or_null(c.max_sum_error)},
                                                          {"terms", std::move(terms)}})
                                                  : json(nullptr)}};
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);  // a name that is not UTF-8 shows U+FFFD
}

}  // namespace headlab
