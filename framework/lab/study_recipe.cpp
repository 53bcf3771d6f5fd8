// study_recipe.cpp: reading a study recipe's [study] section and planning its runs
// (headlab/lab/study.hpp). The [train] section is train's own config reader's.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/lab/study.hpp"

namespace headlab {

namespace fs = std::filesystem;

namespace {

// The flags a study gives every run itself; a cell or the quick flags may not set them.
// (--print-config and --help would make a run print and exit 0 without training.)
const char* const kStudyOwnedFlags[] = {"--seed",   "--run-dir", "--resume",       "--overwrite", "--progress",
                                        "--config", "--threads", "--print-config", "--help"};

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  return s.substr(a, b - a);
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

// One "key = value" line of [study].
struct StudyLine {
  std::string key, value, where;
};

// The [study] lines of `text` (the file passed train's reader first, so every line is clean text).
std::vector<StudyLine> study_lines(const std::string& text, const std::string& path) {
  std::vector<StudyLine> lines;
  std::istringstream in(text);
  bool in_study = false;
  std::size_t number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const std::string line = trim(number == 1 && raw.rfind("\xEF\xBB\xBF", 0) == 0 ? raw.substr(3) : raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      in_study = trim(line.substr(1, line.size() - 2)) == "study";
      continue;
    }
    if (!in_study) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos)
      throw ValueError(path + ":" + std::to_string(number) + ": expected key = value in [study], got " +
                       quote_clipped(line));
    lines.push_back({trim(line.substr(0, eq)), trim(line.substr(eq + 1)), path + ":" + std::to_string(number)});
  }
  return lines;
}

// "confirm > 0.2" / "confirm < -0.05" / "refute within 0.05", into `c`.
void read_criterion(const std::string& text, const std::string& where, StudyComparison& c) {
  std::istringstream words(text);
  std::string first, second, number;
  words >> first >> second >> number;
  std::string rest;
  words >> rest;
  const auto refuse = [&] {
    throw ValueError(where + ": compare: " + quote_clipped(text) +
                     " is not a criterion (confirm > X, confirm < X, refute > X, refute < X or refute within R)");
  };
  if (number.empty() || !rest.empty()) refuse();
  double value = 0;
  try {
    value = parse_real_number(number);
  } catch (const ValueError&) {
    refuse();
  }
  const bool confirm = first == "confirm", refute = first == "refute";
  if ((confirm && c.confirm_sign) || (refute && (c.refute_within > 0 || c.refute_sign)))
    throw ValueError(where + ": compare: a second " + first + " criterion in " + quote_clipped(c.text) +
                     " (one confirm and one refute at most)");
  if (first == "confirm" && (second == ">" || second == "<")) {
    c.confirm_sign = second[0];
    c.confirm_bound = value;
  } else if (first == "refute" && second == "within" && value > 0) {
    c.refute_within = value;
  } else if (first == "refute" && (second == ">" || second == "<")) {
    c.refute_sign = second[0];
    c.refute_bound = value;
  } else {
    refuse();
  }
}

// A confirm and a refute bound on the same side (confirm > X with refute > Y, or < with <) are
// contradictory: every interval far enough out meets both. Bounds on opposite sides may overlap in
// a band (confirm < 0 with refute within 0.01: a significant but negligible difference); there the
// confirm criterion decides (verdict_of), as the recipes that use such a band declare.
void check_criteria_apart(const StudyComparison& c, const std::string& where) {
  if (c.confirm_sign && c.confirm_sign == c.refute_sign)
    throw ValueError(where + ": compare: " + quote_clipped(c.text) + ": confirm " + c.confirm_sign + " and refute " +
                     c.refute_sign + " point the same way: every interval far enough out would meet both");
}

// "A vs B on METRIC | confirm > X | refute within R".
StudyComparison read_comparison(const std::string& text, const std::string& where) {
  StudyComparison c;
  c.text = text;
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, '|')) parts.push_back(trim(part));
  std::istringstream head(parts.empty() ? std::string() : parts[0]);
  std::string vs, on, rest;
  head >> c.a >> vs >> c.b >> on >> c.metric >> rest;
  if (vs != "vs" || on != "on" || c.metric.empty() || !rest.empty())
    throw ValueError(where + ": compare: expected 'A vs B on METRIC [| confirm > X] [| refute within R]', got " +
                     quote_clipped(text));
  for (std::size_t i = 1; i < parts.size(); ++i) read_criterion(parts[i], where, c);
  check_criteria_apart(c, where);
  return c;
}

void check_owned_flags(const std::vector<std::string>& words, const std::string& where) {
  for (const std::string& w : words)
    for (const char* owned : kStudyOwnedFlags)
      if (w == owned || w.rfind(std::string(owned) + "=", 0) == 0 || (w == "-h" && std::string(owned) == "--help"))
        throw ValueError(where + ": " + owned + " is set by the study for every run, or not for a run; remove it");
}

// A flag of the options table that takes a value must have one: `--lr` last, or followed by another
// flag, would reach train as "--lr: got '--seed'" with no word of the recipe line.
void check_flag_values(const std::vector<std::string>& words, const std::string& where) {
  for (std::size_t i = 0; i < words.size(); ++i) {
    const OptionInfo* info = words[i].rfind("--", 0) == 0 ? find_option_by_flag(words[i]) : nullptr;
    if (!info || info->kind == OptionKind::flag) continue;
    if (i + 1 == words.size() || words[i + 1].rfind("--", 0) == 0)
      throw ValueError(where + ": " + words[i] + " needs a value (" + words[i] + " VALUE or " + words[i] + "=VALUE)");
    ++i;
  }
}

// `flags` as groups, one per flag: {"--steps", "400"}, {"--pre-ln"}, {"--lr=0.1"}. A flag of the
// options table that takes a value keeps the next word (unless written --flag=value).
std::vector<std::vector<std::string>> flag_groups(const std::vector<std::string>& flags) {
  std::vector<std::vector<std::string>> groups;
  for (std::size_t i = 0; i < flags.size(); ++i) {
    groups.push_back({flags[i]});
    const OptionInfo* info = find_option_by_flag(flags[i]);
    if (info && info->kind != OptionKind::flag && i + 1 < flags.size()) groups.back().push_back(flags[++i]);
  }
  return groups;
}

std::string flag_name(const std::string& word) { return word.substr(0, word.find('=')); }

// The cell's flags with every flag the quick flags set left out, then the quick flags: a quick
// `--steps 50` replaces a cell's `--steps 400` (train refuses a flag given twice).
std::vector<std::string> with_quick_flags(const std::vector<std::string>& cell, const std::vector<std::string>& quick) {
  std::set<std::string> replaced;
  for (const auto& group : flag_groups(quick)) replaced.insert(flag_name(group[0]));
  std::vector<std::string> out;
  for (const auto& group : flag_groups(cell))
    if (!replaced.count(flag_name(group[0]))) out.insert(out.end(), group.begin(), group.end());
  out.insert(out.end(), quick.begin(), quick.end());
  return out;
}

}  // namespace

std::vector<std::string> split_flag_words(const std::string& text, const std::string& where) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ' || text[i] == '\t') {
      ++i;
      continue;
    }
    std::string word;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') {
      if (text[i] == '"' || text[i] == '\'') {
        const std::size_t close = text.find(text[i], i + 1);
        if (close == std::string::npos) throw ValueError(where + ": an unclosed quote in " + quote_clipped(text));
        word += text.substr(i + 1, close - i - 1);
        i = close + 1;
      } else {
        word += text[i++];
      }
    }
    words.push_back(word);
  }
  return words;
}

StudyRecipe parse_study_recipe(const std::string& text, const std::string& path) {
  StudyRecipe r;
  r.path = fs::absolute(path);
  r.train = parse_config_text(text, path);  // the [train] section, and every line checked
  std::set<std::string> seen;
  std::set<std::string> cell_names;
  std::map<std::string, std::string> compared;  // "A\nB\nmetric" (A < B) -> the line that compares them
  for (const StudyLine& line : study_lines(text, path)) {
    const std::string& key = line.key;
    const std::string& where = line.where;
    const bool repeatable = key == "cell" || key == "compare";
    if (!repeatable && !seen.insert(key).second) throw ValueError(where + ": " + key + " is given twice");
    if (key == "title") r.title = line.value;
    else if (key == "confirms") r.confirms = line.value;
    else if (key == "refutes") r.refutes = line.value;
    else if (key == "seeds") {
      try {
        r.seeds = parse_seeds(line.value);
      } catch (const ValueError& e) {
        throw ValueError(where + ": seeds: " + e.what());
      }
    } else if (key == "threads") {
      try {
        r.threads = static_cast<int>(parse_whole_number(line.value, 1, 1024));
      } catch (const ValueError& e) {
        throw ValueError(where + ": threads: " + e.what());
      }
    } else if (key == "cell") {
      std::vector<std::string> words = split_flag_words(line.value, where);
      if (words.empty()) throw ValueError(where + ": cell: a name is needed (cell = NAME FLAGS...)");
      StudyCell cell{words[0], std::vector<std::string>(words.begin() + 1, words.end())};
      if (cell.name.empty() || !std::all_of(cell.name.begin(), cell.name.end(), is_name_char) || cell.name.size() > 64)
        throw ValueError(where + ": cell name " + quote_clipped(cell.name) +
                         " must be 1-64 characters of [A-Za-z0-9_.-] (it names run directories)");
      if (!cell_names.insert(cell.name).second) throw ValueError(where + ": cell " + cell.name + " is given twice");
      check_owned_flags(cell.flags, where);
      check_flag_values(cell.flags, where);
      r.cells.push_back(cell);
    } else if (key == "metrics") {
      for (const std::string& word : split_flag_words(line.value, where)) {
        const std::size_t colon = word.find(':');
        const std::string name = word.substr(0, colon);
        const std::string field = colon == std::string::npos ? name : word.substr(colon + 1);
        if (name.empty() || field.empty()) throw ValueError(where + ": metrics: " + quote_clipped(word) + " is not NAME[:FIELD]");
        if (r.metric_fields.count(name)) throw ValueError(where + ": metrics: " + name + " is named twice");
        for (const char* column : {"cell", "seed", "steps", "train_seconds", "flags", "threads", "cpu", "arithmetic", "commit"})
          if (name == column)  // runs.csv has this column already: it would be there twice
            throw ValueError(where + ": metrics: '" + name + "' is a column runs.csv has of its own; name the metric " +
                             "otherwise (NAME:FIELD, e.g. run_" + name + ":" + field + ")");
        r.metrics.push_back(name);
        r.metric_fields[name] = field;
      }
    } else if (key == "compare") {
      StudyComparison c = read_comparison(line.value, where);
      c.text = line.value;
      // A vs B and B vs A on one metric are one comparison: twice, it would count twice in Holm's correction.
      const std::string pair = std::min(c.a, c.b) + "\n" + std::max(c.a, c.b) + "\n" + c.metric;
      if (const auto [first, fresh] = compared.emplace(pair, where); !fresh)
        throw ValueError(where + ": compare: " + c.a + " and " + c.b + " on " + c.metric + " are compared already at " +
                         first->second);
      r.comparisons.push_back(c);
    } else if (key == "test") {
      if (line.value != "welch" && line.value != "paired")
        throw ValueError(where + ": test: " + quote_clipped(line.value) + " is not welch or paired");
      r.paired = line.value == "paired";
    } else if (key == "baseline") {  // baseline = VALUE LABEL: a dashed line on the chart
      const std::size_t space = line.value.find_first_of(" \t");
      const std::string number = line.value.substr(0, space);
      const std::string label = space == std::string::npos ? "" : trim(line.value.substr(space + 1));
      try {
        r.baseline = parse_real_number(number);
      } catch (const ValueError& e) {
        throw ValueError(where + ": baseline: " + e.what() + " (baseline = VALUE LABEL, e.g. 0.0625 chance: 1 of 16)");
      }
      if (label.empty())
        throw ValueError(where + ": baseline: name it after its value (baseline = VALUE LABEL, e.g. 0.0625 chance: 1 of 16)");
      r.baseline_label = label;
    } else if (key == "quick") {
      r.quick_flags = split_flag_words(line.value, where);
      check_owned_flags(r.quick_flags, where);
      check_flag_values(r.quick_flags, where);
    } else {
      throw ValueError(where + ": unknown [study] key " + quote_clipped(key) +
                       " (title, seeds, threads, cell, metrics, compare, test, confirms, refutes, baseline, quick)");
    }
  }
  for (const char* required : {"seeds", "threads", "metrics"})
    if (!seen.count(required)) throw ValueError(path + ": the [study] section has no " + required + " line");
  if (r.metrics.empty()) throw ValueError(path + ": the metrics line names no metric");
  if (r.cells.empty()) throw ValueError(path + ": the [study] section has no cell line");
  for (const StudyComparison& c : r.comparisons) {
    for (const std::string& cell : {c.a, c.b})
      if (!cell_names.count(cell))
        throw ValueError(path + ": compare " + quote_clipped(c.text) + ": no cell is named " + quote_clipped(cell));
    if (c.a == c.b) throw ValueError(path + ": compare " + quote_clipped(c.text) + ": a cell compared with itself");
    if (std::find(r.metrics.begin(), r.metrics.end(), c.metric) == r.metrics.end())
      throw ValueError(path + ": compare " + quote_clipped(c.text) + ": " + quote_clipped(c.metric) +
                       " is not one of the metrics line's");
  }
  return r;
}

StudyRecipe read_study_recipe(const std::string& path) {
  read_config_file(path);  // the kind, size and every line checked before the text is read again
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_study_recipe(text.str(), path);
}

std::vector<std::string> unpinned_train_options(const StudyRecipe& recipe) {
  std::set<std::string> pinned;
  for (const ConfigEntry& e : recipe.train) pinned.insert(e.key);
  std::vector<std::string> missing;
  for (const OptionInfo& info : train_option_table())
    if (info.stored && !pinned.count(info.flag)) missing.push_back(info.flag);
  return missing;
}

TrainOptions apply_recipe_train(const StudyRecipe& recipe, TrainOptions start) {
  for (const ConfigEntry& entry : recipe.train) {
    const OptionInfo* info = find_option_by_flag(entry.key);
    try {
      info->set(start, entry.value);
    } catch (const std::exception& e) {
      throw ValueError(entry.where + ": " + entry.key + ": " + e.what());
    }
  }
  return start;
}

SweepPlan plan_study(const StudyRecipe& recipe, const fs::path& runs_dir, bool quick) {
  if (runs_dir.empty()) throw ValueError("--runs: an empty directory name");
  SweepPlan plan;
  plan.out_dir = fs::absolute(runs_dir).lexically_normal();
  // --quick: the first two seeds (two, so that every statistic is still computed).
  const std::vector<std::uint64_t> seeds(recipe.seeds.begin(),
                                         recipe.seeds.begin() + (quick ? std::min<std::size_t>(2, recipe.seeds.size())
                                                                       : recipe.seeds.size()));
  plan.spec.seeds = seeds;
  for (const StudyCell& cell : recipe.cells) {
    for (std::uint64_t seed : seeds) {
      SweepRun run;
      run.name = cell.name + "-seed" + std::to_string(seed);
      run.values = {cell.name};
      run.seed = seed;
      run.train_args = {"--config", recipe.path.string()};
      const std::vector<std::string> flags = quick ? with_quick_flags(cell.flags, recipe.quick_flags) : cell.flags;
      run.train_args.insert(run.train_args.end(), flags.begin(), flags.end());
      for (const std::string& a : {std::string("--seed"), std::to_string(seed), std::string("--run-dir"),
                                   plan.run_dir(run).string(), std::string("--progress"), std::string("none")})
        run.train_args.push_back(a);
      plan.runs.push_back(run);
    }
  }
  return plan;
}

}  // namespace headlab
