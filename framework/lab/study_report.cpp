// study_report.cpp: a study's runs as rows, their statistics and verdicts, and the CSV and Markdown
// files (headlab/lab/study.hpp). The chart is study_chart.cpp's; the statistics headlab/report.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headlab/core/errors.hpp"
#include "headlab/core/json_depth.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/lab/study.hpp"
#include "headlab/report/statistics.hpp"
#include "headlab/report/text_table.hpp"
#include "sweep_text.hpp"

namespace headlab {

namespace fs = std::filesystem;
using namespace sweep_text;

namespace {

constexpr std::uintmax_t kMaxRunsCsvBytes = 16u << 20;

// One CSV record per line (RFC 4180 quotes; a quoted field may not span lines here).
std::vector<std::string> csv_record(const std::string& line, const std::string& where) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == ',') {
      fields.push_back(field), field.clear(), was_quoted = false;
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else {
      field += c;
    }
  }
  if (quoted) throw ValueError(where + ": an unclosed quote");
  fields.push_back(field);
  return fields;
}

std::string fact(const StudyRun& run, const std::string& key) {
  const auto it = run.facts.find(key);
  return it == run.facts.end() ? std::string() : it->second;
}


std::string number_or_empty(double v) { return std::isnan(v) ? std::string() : exact_number(v); }

// "0.7349 [0.7143, 0.7556]" for Markdown.
std::string with_interval(double v, double lo, double hi) {
  if (std::isnan(lo)) return readable_number(v, 4);
  return readable_number(v, 4) + " [" + readable_number(lo, 4) + ", " + readable_number(hi, 4) + "]";
}

std::string verdict_of(const StudyComparison& c, double lo, double hi, double p_holm) {
  const bool significant = p_holm < 0.05;
  if (c.confirm_sign == '>' && significant && lo > c.confirm_bound) return "confirmed";
  if (c.confirm_sign == '<' && significant && hi < c.confirm_bound) return "confirmed";
  if (c.refute_within > 0 && lo > -c.refute_within && hi < c.refute_within) return "refuted";
  if (c.refute_sign == '>' && lo > c.refute_bound) return "refuted";
  if (c.refute_sign == '<' && hi < c.refute_bound) return "refuted";
  if (c.confirm_sign == '>' && significant && hi < 0) return "refuted";
  if (c.confirm_sign == '<' && significant && lo > 0) return "refuted";
  return "unresolved";
}

}  // namespace

std::vector<StudyRun> collect_study_runs(const StudyRecipe& recipe, const SweepPlan& plan,
                                         std::vector<std::string>& missing) {
  std::vector<StudyRun> rows;
  missing.clear();
  std::map<std::string, std::string> flags_of;  // cell -> its flags as one text
  for (const StudyCell& cell : recipe.cells) {
    std::string flags;
    for (const std::string& f : cell.flags) flags += (flags.empty() ? "" : " ") + f;
    flags_of[cell.name] = flags;
  }
  for (const SweepRun& run : plan.runs) {
    const fs::path dir = plan.run_dir(run);
    if (run_state(dir) != RunState::Finished) {
      const std::string fault = summary_fault(dir);  // a summary written, then damaged: say so
      missing.push_back(fault.empty() ? run.name : run.name + " (" + fault + ")");
      continue;
    }
    StudyRun row;
    row.cell = run.values.at(0);
    row.seed = run.seed;
    const std::map<std::string, double> numbers = run_summary_numbers(dir);
    for (const std::string& metric : recipe.metrics) {
      const std::string& field = recipe.metric_fields.at(metric);
      const auto it = numbers.find(field);
      if (it == numbers.end())
        throw ValueError("run " + run.name + ": its summary.json (" + (dir / "summary.json").string() +
                         ") has no number " + quote_clipped(field) + " (metric " + metric + " of the recipe)");
      if (!std::isfinite(it->second))
        throw ValueError("run " + run.name + ": its summary.json has " + field + " = " + exact_number(it->second) +
                         " (a diverged run?): no statistic can use it; look at its log, then remove the run or "
                         "the cell");
      row.values[metric] = it->second;
    }
    for (const char* key : {"steps", "train_seconds"})
      if (numbers.count(key)) row.values[key] = numbers.at(key);
    row.facts["flags"] = flags_of.at(row.cell);
    row.facts["threads"] = numbers.count("threads") ? exact_number(numbers.at("threads")) : "";
    std::ifstream in(dir / "summary.json");  // a regular file of at most 1 MiB: run_state checked it
    nlohmann::json summary;
    try {
      summary = nlohmann::json::parse(in, json_depth_limit<nlohmann::json>("summary.json: "), false);
    } catch (const FormatError&) {  // (run_state read it a moment ago; changed since)
    }
    row.facts["cpu"] = summary.is_object() && summary.contains("cpu") && summary["cpu"].is_string()
                           ? summary["cpu"].get<std::string>()
                           : "unrecorded";
    if (summary.is_object() && summary.contains("arithmetic") && summary["arithmetic"].is_string())
      row.facts["arithmetic"] = summary["arithmetic"].get<std::string>();  // runs since 2026-12-07
    rows.push_back(row);
  }
  return rows;
}

std::vector<StudyRun> read_study_runs_csv(const StudyRecipe& recipe, const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw ValueError(path + ": cannot read the runs: no such file");
  if (!fs::is_regular_file(status)) throw ValueError(path + ": not a regular file");
  if (fs::file_size(path, ec) > kMaxRunsCsvBytes) throw ValueError(path + ": over 16 MiB: not a runs.csv");
  std::string text;  // a byte-order mark dropped (a spreadsheet's CSV), a NUL byte refused naming its line
  try {
    text = read_text_file(path, "study report --from-csv", kMaxRunsCsvBytes);
  } catch (const FormatError& e) {
    throw ValueError(e.what());
  }
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) throw ValueError(path + ": empty; a header line is needed");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const std::vector<std::string> header = csv_record(line, path + ":1");
  for (std::size_t i = 0; i < header.size(); ++i)  // which of two columns of one name would be read?
    if (std::find(header.begin(), header.begin() + std::ptrdiff_t(i), header[i]) != header.begin() + std::ptrdiff_t(i))
      throw ValueError(path + ":1: the column " + quote_clipped(header[i]) + " is named twice");
  const auto column = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw ValueError(path + ":1: no column " + quote_clipped(name));
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t cell_column = column("cell"), seed_column = column("seed");
  std::vector<std::size_t> metric_columns;
  for (const std::string& metric : recipe.metrics) metric_columns.push_back(column(metric));
  std::set<std::string> cells;
  for (const StudyCell& c : recipe.cells) cells.insert(c.name);
  std::vector<StudyRun> rows;
  std::set<std::pair<std::string, std::uint64_t>> seen;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    const std::vector<std::string> fields = csv_record(line, where);
    if (fields.size() != header.size())
      throw ValueError(where + ": " + std::to_string(fields.size()) + " fields, the header has " +
                       std::to_string(header.size()));
    StudyRun row;
    row.cell = fields[cell_column];
    if (!cells.count(row.cell)) throw ValueError(where + ": cell " + quote_clipped(row.cell) + " is not the recipe's");
    try {
      row.seed = parse_whole_number(fields[seed_column]);
    } catch (const ValueError& e) {
      throw ValueError(where + ": seed: " + e.what());
    }
    if (std::find(recipe.seeds.begin(), recipe.seeds.end(), row.seed) == recipe.seeds.end())
      throw ValueError(where + ": seed " + std::to_string(row.seed) + " is not one of the recipe's seeds");
    if (!seen.insert({row.cell, row.seed}).second)
      throw ValueError(where + ": " + row.cell + " seed " + std::to_string(row.seed) + " is given twice");
    for (std::size_t m = 0; m < recipe.metrics.size(); ++m) {
      const std::string& text = fields[metric_columns[m]];
      if (!is_number(text))
        throw ValueError(where + ": " + recipe.metrics[m] + ": " + quote_clipped(text) + " is not a finite number");
      row.values[recipe.metrics[m]] = to_number(text);
    }
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (i == cell_column || i == seed_column || row.values.count(header[i])) continue;
      if ((header[i] == "steps" || header[i] == "train_seconds") && is_number(fields[i]))
        row.values[header[i]] = to_number(fields[i]);
      else
        row.facts[header[i]] = fields[i];
    }
    rows.push_back(row);
  }
  return rows;
}

StudyReport report_study(const StudyRecipe& recipe, const std::vector<StudyRun>& runs) {
  StudyReport report;
  // values[cell][metric] and the seeds, in run order.
  std::map<std::string, std::map<std::string, std::vector<double>>> values;
  std::map<std::string, std::vector<std::uint64_t>> seeds;
  for (const StudyRun& run : runs) {
    seeds[run.cell].push_back(run.seed);
    for (const std::string& metric : recipe.metrics) values[run.cell][metric].push_back(run.values.at(metric));
  }
  for (const StudyCell& cell : recipe.cells) {
    for (const std::string& metric : recipe.metrics) {
      StudyCellSummary s;
      s.cell = cell.name;
      s.metric = metric;
      s.values = values[cell.name][metric];
      s.n = s.values.size();
      s.mean = s.sd = s.ci_low = s.ci_high = kNaN;
      if (s.n > 0) {
        try {
          const SampleSummary summary = summarize(s.values);
          s.mean = summary.mean, s.sd = summary.sd, s.ci_low = summary.ci_low, s.ci_high = summary.ci_high;
        } catch (const ValueError&) {  // values whose sum overflows: the cells stay NaN (printed empty)
        }
      }
      report.cells.push_back(s);
    }
  }
  std::vector<double> test_p;  // the p of each comparison's chosen test; NaN when it cannot be tested
  for (const StudyComparison& c : recipe.comparisons) {
    StudyComparisonResult r;
    r.comparison = c;
    const std::vector<double>& a = values[c.a][c.metric];
    const std::vector<double>& b = values[c.b][c.metric];
    r.n_a = a.size(), r.n_b = b.size();
    r.difference = r.ci_low = r.ci_high = r.welch_t = r.df = r.welch_p = kNaN;
    r.paired_ci_low = r.paired_ci_high = r.paired_t = r.paired_p = kNaN;
    std::string why_not;  // why the comparison has no test
    if (a.size() < 2 || b.size() < 2) why_not = "too few runs";
    try {
      if (why_not.empty()) {
        const MeanDifference w = welch_test(a, b);
        r.difference = w.difference, r.ci_low = w.ci_low, r.ci_high = w.ci_high;
        r.welch_t = w.t, r.df = w.df, r.welch_p = w.p;
        // Paired when both cells ran the same seeds: the pairs in seed order.
        std::vector<std::uint64_t> sa = seeds[c.a], sb = seeds[c.b];
        if (std::set<std::uint64_t>(sa.begin(), sa.end()) == std::set<std::uint64_t>(sb.begin(), sb.end()) &&
            sa.size() == sb.size()) {
          std::vector<double> pa, pb;
          for (std::uint64_t seed : std::set<std::uint64_t>(sa.begin(), sa.end())) {
            pa.push_back(a[std::find(sa.begin(), sa.end(), seed) - sa.begin()]);
            pb.push_back(b[std::find(sb.begin(), sb.end(), seed) - sb.begin()]);
          }
          const MeanDifference p = paired_test(pa, pb);
          r.has_paired = true;
          r.paired_ci_low = p.ci_low, r.paired_ci_high = p.ci_high, r.paired_t = p.t, r.paired_p = p.p;
        }
      }
    } catch (const ValueError& e) {  // a test that cannot be computed (statistics.cpp scales extreme values)
      why_not = std::string("not testable (") + e.what() + ")";
    }
    const bool use_paired = recipe.paired && r.has_paired;
    r.test = why_not.empty() ? (use_paired ? "paired" : "welch") : "";
    r.verdict = why_not;
    test_p.push_back(why_not.empty() ? (use_paired ? r.paired_p : r.welch_p) : kNaN);
    report.comparisons.push_back(r);
  }
  // Holm over every declared comparison: one that could not be tested counts as p = 1, so that a
  // missing run never weakens the correction of the others.
  std::vector<double> family;
  for (double p : test_p) family.push_back(std::isnan(p) ? 1.0 : p);
  const std::vector<double> adjusted = holm_adjust(family);
  for (std::size_t i = 0; i < report.comparisons.size(); ++i) {
    StudyComparisonResult& r = report.comparisons[i];
    if (std::isnan(test_p[i])) {
      r.p_holm = kNaN;
      continue;
    }
    r.p_holm = adjusted[i];
    const bool use_paired = r.test == "paired";
    r.verdict = verdict_of(r.comparison, use_paired ? r.paired_ci_low : r.ci_low,
                           use_paired ? r.paired_ci_high : r.ci_high, r.p_holm);
  }
  return report;
}

std::string study_runs_csv(const StudyRecipe& recipe, const std::vector<StudyRun>& runs) {
  // The facts every row has, in a fixed order first, then the rest as found.
  std::vector<std::string> facts = {"flags", "threads", "cpu", "commit"};
  for (const StudyRun& run : runs)
    for (const auto& [key, value] : run.facts)
      if (std::find(facts.begin(), facts.end(), key) == facts.end()) facts.push_back(key);
  std::string out = "cell,seed,steps,train_seconds";
  for (const std::string& f : facts) out += "," + csv_field(f);
  for (const std::string& m : recipe.metrics) out += "," + csv_field(m);
  out += "\n";
  for (const StudyRun& run : runs) {
    const auto value = [&](const std::string& key) {
      const auto it = run.values.find(key);
      return it == run.values.end() ? std::string() : exact_number(it->second);
    };
    out += csv_field(run.cell) + "," + std::to_string(run.seed) + "," + value("steps") + "," + value("train_seconds");
    for (const std::string& f : facts) out += "," + csv_field(fact(run, f));
    for (const std::string& m : recipe.metrics) out += "," + value(m);
    out += "\n";
  }
  return out;
}

std::string study_summary_csv(const StudyReport& report) {
  std::string out = "cell,metric,n,mean,sd,ci95_low,ci95_high\n";
  for (const StudyCellSummary& s : report.cells)
    out += csv_field(s.cell) + "," + csv_field(s.metric) + "," + std::to_string(s.n) + "," + number_or_empty(s.mean) +
           "," + number_or_empty(s.sd) + "," + number_or_empty(s.ci_low) + "," + number_or_empty(s.ci_high) + "\n";
  return out;
}

std::string study_comparisons_csv(const StudyReport& report) {
  std::string out = "comparison,metric,n_a,n_b,difference,ci95_low,ci95_high,welch_t,df,p,paired_ci95_low,"
                    "paired_ci95_high,paired_t,paired_p,test,p_holm,verdict\n";
  for (const StudyComparisonResult& r : report.comparisons)
    out += csv_field(r.comparison.label()) + "," + csv_field(r.comparison.metric) + "," + std::to_string(r.n_a) +
           "," + std::to_string(r.n_b) + "," + number_or_empty(r.difference) + "," + number_or_empty(r.ci_low) + "," +
           number_or_empty(r.ci_high) + "," + number_or_empty(r.welch_t) + "," + number_or_empty(r.df) + "," +
           number_or_empty(r.welch_p) + "," + number_or_empty(r.paired_ci_low) + "," +
           number_or_empty(r.paired_ci_high) + "," + number_or_empty(r.paired_t) + "," +
           number_or_empty(r.paired_p) + "," + r.test + "," + number_or_empty(r.p_holm) + "," + csv_field(r.verdict) +
           "\n";
  return out;
}

std::string study_report_markdown(const StudyRecipe& recipe, const StudyReport& report,
                                  const std::vector<StudyRun>& runs, const std::vector<std::string>& missing) {
  std::ostringstream md;
  md << "# " << markdown_inline(recipe.title.empty() ? recipe.path.stem().string() : recipe.title) << "\n\n";
  md << "Recipe: `" << recipe.path.filename().string() << "` (" << recipe.cells.size() << " cells x "
     << recipe.seeds.size() << " seeds, " << recipe.threads << (recipe.threads == 1 ? " thread" : " threads")
     << " a run). Written by `headlab study report`.\n\n";
  if (!recipe.confirms.empty()) md << "- **Confirms:** " << markdown_inline(recipe.confirms) << "\n";
  if (!recipe.refutes.empty()) md << "- **Refutes:** " << markdown_inline(recipe.refutes) << "\n";
  md << "- **Rule:** a difference is mean(A) - mean(B). Confirmed when the Holm-adjusted p < 0.05 and its "
        "95% CI lies beyond the confirm bound; refuted when the CI lies inside ±R (refute within R) or beyond "
        "the refute bound, or wholly on the other side of 0 from the confirm bound with p < 0.05; otherwise "
        "unresolved.\n\n";
  for (const std::string& metric : recipe.metrics) {
    md << "## " << markdown_inline(metric) << "\n\n| cell | n | mean ± sd | 95% CI |\n|---|---|---|---|\n";
    for (const StudyCellSummary& s : report.cells) {
      if (s.metric != metric) continue;
      md << "| " << markdown_inline(s.cell) << " | " << s.n << " | "
         << (s.n == 0 ? std::string("—") : readable_number(s.mean, 4) + (s.n > 1 ? " ± " + readable_number(s.sd, 3) : ""))
         << " | " << (s.n > 1 ? "[" + readable_number(s.ci_low, 4) + ", " + readable_number(s.ci_high, 4) + "]" : "—")
         << " |\n";
    }
    md << "\n";
  }
  if (!report.comparisons.empty()) {
    md << "## Comparisons (" << (recipe.paired ? "paired t-test where the seeds match, else Welch's" : "Welch's t-test")
       << ", Holm over all " << report.comparisons.size() << ")\n\n"
       << "| comparison | metric | difference [95% CI] | t | df | p | p (Holm) | criteria | verdict |\n"
       << "|---|---|---|---|---|---|---|---|---|\n";
    for (const StudyComparisonResult& r : report.comparisons) {
      const StudyComparison& c = r.comparison;
      std::string criteria;
      if (c.confirm_sign) criteria = std::string("confirm ") + c.confirm_sign + " " + exact_number(c.confirm_bound);
      if (c.refute_within > 0) criteria += (criteria.empty() ? "" : "; ") + ("refute within " + exact_number(c.refute_within));
      if (c.refute_sign)
        criteria += (criteria.empty() ? "" : "; ") + (std::string("refute ") + c.refute_sign + " " + exact_number(c.refute_bound));
      const bool paired = r.test == "paired";
      md << "| " << markdown_inline(c.label()) << " | " << markdown_inline(c.metric) << " | "
         << with_interval(r.difference, paired ? r.paired_ci_low : r.ci_low, paired ? r.paired_ci_high : r.ci_high)
         << " | " << readable_number(paired ? r.paired_t : r.welch_t, 4) << " | "
         << readable_number(paired ? double(r.n_a - 1) : r.df, 4) << " | "
         << readable_number(paired ? r.paired_p : r.welch_p, 3) << " | " << readable_number(r.p_holm, 3) << " | "
         << (criteria.empty() ? "—" : criteria) << " | **" << markdown_inline(r.verdict) << "**"
         << (r.test.empty() ? "" : " (" + r.test + ")") << " |\n";
    }
    md << "\n";
  }
  std::set<std::string> cpus, arithmetics;
  double seconds = 0;
  for (const StudyRun& run : runs) {
    cpus.insert(fact(run, "cpu"));
    if (!fact(run, "arithmetic").empty()) arithmetics.insert(fact(run, "arithmetic"));
    if (run.values.count("train_seconds")) seconds += run.values.at("train_seconds");
  }
  std::string cpu_list;
  for (const std::string& c : cpus) cpu_list += (cpu_list.empty() ? "" : ", ") + (c.empty() ? "unrecorded" : c);
  md << "Runs: " << runs.size() << " finished; CPU: " << (cpu_list.empty() ? "none" : markdown_inline(cpu_list)) << "; "
     << recipe.threads << (recipe.threads == 1 ? " thread" : " threads") << " a run; training time "
     << readable_number(seconds, 3) << " s in all.\n";
  if (!arithmetics.empty()) {
    std::string list;
    for (const std::string& a : arithmetics) list += (list.empty() ? "" : " / ") + a;
    md << "Arithmetic (CPU numbers, OpenBLAS kernels, compiled instructions): " << markdown_inline(list) << ".\n";
  }
  if (!missing.empty()) {
    md << "\nNot finished (left out of every number above): ";
    for (std::size_t i = 0; i < missing.size(); ++i) md << (i ? ", " : "") << markdown_inline(missing[i]);
    md << ".\n";
  }
  return md.str();
}

}  // namespace headlab
