// The head explorer's data (headlab/lab/explorer.hpp) and page (headlab/report/explorer_page.hpp):
// the collected maps and scores are those of attention_maps and head_roles, the JSON holds them,
// the run's CSV files are read strictly, and nothing in the data can end the page's script early.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <xtensor/xview.hpp>

#include "headlab/core/file_writer.hpp"
#include "headlab/lab/explorer.hpp"
#include "headlab/lab/patching.hpp"
#include "headlab/report/explorer_page.hpp"
#include "tiny_train_run.hpp"
#include "untrained_model.hpp"

namespace test_explorer {

using namespace headlab;
namespace fs = std::filesystem;

namespace {

// An untrained copy model (encoder-decoder) or induction model (decoder-only): the tiny run's
// options (2 heads, 1 layer, length 5).
LoadedModel untrained(Task task, std::uint64_t seed) {
  TrainOptions o = testing::tiny_copy_run("", 0);
  o.task = task;
  o.vocab = 9;
  return testing::untrained_model(o, seed);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("headlab_test_explorer_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "prune");
  return dir;
}

}  // namespace

TEST_CASE("explorer: the data holds attention_maps' weights and head_roles' scores, tokens as text") {
  LoadedModel m = untrained(Task::copy, 4);
  const Probe probe = repeated_tokens_probe(m, 8, 0, 3);
  const IndexArray first = xt::view(probe.sequences, xt::range(0, 1), xt::all());
  const ExplorerData d = collect_explorer_data(m, {first, first}, probe, 8, 3);
  const std::vector<Array<float>> maps = attention_maps(m, first, first);
  const std::vector<HeadRoles> roles = head_roles(m, probe);
  REQUIRE(d.sites.size() == 3);  // encoder self, decoder self, cross
  CHECK(d.sites[0].kind == "encoder self");
  CHECK(d.sites[2].kind == "cross");
  for (std::size_t s = 0; s < d.sites.size(); ++s) CHECK(d.sites[s].weights == maps[s]);
  REQUIRE(d.scores.size() == roles.size());
  for (std::size_t k = 0; k < roles.size(); ++k) {
    CHECK(d.scores[k].entropy == roles[k].entropy);
    CHECK(d.scores[k].induction == roles[k].induction);
  }
  CHECK(d.sites[0].query_tokens.front() == "<s>");  // the start symbol as text, not "1"
  CHECK(d.sites[0].query_tokens[1] == std::to_string(first(0, 1)));
  CHECK(d.sites[0].query_tokens.size() == first.shape()[1]);

  const nlohmann::json j = nlohmann::json::parse(explorer_json(d));
  REQUIRE(j["sites"].size() == 3);
  CHECK(j["sites"][1]["heads"] == 2);
  const auto& row = j["sites"][1]["weights"][1][3];  // decoder self, head 1, query 3
  REQUIRE(row.size() == first.shape()[1]);
  double sum = 0;
  for (std::size_t k = 0; k < row.size(); ++k) {
    CHECK(std::abs(row[k].get<double>() - double(maps[1](1, 3, k))) <= 5e-7);  // 6 decimals
    sum += row[k].get<double>();
  }
  CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
  CHECK(row[4].get<double>() == 0.0);  // causal: query 3 cannot see key 4
  CHECK(j["scores"].size() == 6);
  CHECK(j["scores"][0]["gate_mean"].is_null());  // ungated
  CHECK(j["prune"].is_null());
  CHECK(j["thresholds"]["induction"] == 0.4);
}

TEST_CASE("explorer: prune.csv, importance.csv and metrics.jsonl of the run dir, read strictly") {
  LoadedModel m = untrained(Task::induction, 5);
  const Probe probe = repeated_tokens_probe(m, 4, 0, 1);
  ExplorerData d = collect_explorer_data(m, {probe.sequences, probe.sequences}, probe, 4, 1);
  REQUIRE(d.sites.size() == 1);
  const fs::path dir = fresh_dir("run");
  write_file_atomic(dir / "prune" / "prune.csv",
                    "order,pruned,fraction,loss,metric,removed\nimportance,0,0,1.5,0.9,\nrandom,0,0,1.5,0.9,\n"
                    "random-2,1,0.5,2.5,0.4,layers.0.self_attn#1\n", "test");
  write_file_atomic(dir / "prune" / "importance.csv",
                    "site,head,importance_raw,importance_normalised\nlayers.0.self_attn,1,0.2,0.6\nlayers.0.self_attn,0,0.1,0.8\n",
                    "test");
  write_file_atomic(dir / "metrics.jsonl", "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.0,\"valid_loss\":2.2}\n{\"note\":1}\n",
                    "test");
  add_run_results(d, dir);
  REQUIRE(d.prune.size() == 3);
  CHECK(d.prune[2].order == "random-2");
  CHECK(d.prune[2].pruned == 1);
  CHECK(d.prune[2].metric == 0.4);
  REQUIRE(d.importance.size() == 1);
  CHECK(d.importance[0] == std::vector<double>{0.8, 0.6});
  REQUIRE(d.curves.size() == 2);
  CHECK(std::isnan(d.curves[0].valid_loss));
  CHECK(d.curves[1].valid_loss == 2.2);
  const nlohmann::json j = nlohmann::json::parse(explorer_json(d));
  CHECK(j["scores"][1]["importance"] == 0.6);
  CHECK(j["prune"]["metric"] == "repeated-half accuracy");
  CHECK(j["curves"][0]["valid_loss"].is_null());

  auto refused = [&](const std::string& file, const std::string& text, const std::string& message) {
    write_file_atomic(dir / "prune" / file, text, "test");
    try {
      if (file == "prune.csv") read_prune_csv(dir / "prune" / file);
      else read_importance_csv(dir / "prune" / file, d.sites);
      FAIL("accepted: " << text);
    } catch (const FormatError& e) {
      CHECK(std::string(e.what()).find(message) != std::string::npos);
    }
  };
  refused("prune.csv", "order,pruned\n", "prune.csv:1: the header should start with order,pruned,fraction,loss,metric");
  refused("prune.csv", "order,pruned,fraction,loss,metric,removed\nrandom,1,0.5,x,1,\n", "prune.csv:2: loss 'x' is not a number");
  refused("prune.csv", "order,pruned,fraction,loss,metric,removed\nbest,1,0.5,1,1,\n", "prune.csv:2: order 'best'");
  refused("prune.csv", "order,pruned,fraction,loss,metric,removed\n\nrandom,1\n", "prune.csv:3: 2 fields, expected 5");
  refused("importance.csv", "site,head,importance_raw,importance_normalised\nlayers.9.self_attn,0,1,1\n",
          "importance.csv:2: the model has no site 'layers.9.self_attn'");
  refused("importance.csv", "site,head,importance_raw,importance_normalised\nlayers.0.self_attn,2,1,1\n",
          "importance.csv:2: head 2 of a site with 2");
  refused("importance.csv", "site,head,importance_raw,importance_normalised\nlayers.0.self_attn,0,1,1\nlayers.0.self_attn,0,1,1\n",
          "importance.csv:3: layers.0.self_attn head 0 again");
  fs::remove_all(dir);
}

TEST_CASE("explorer page: the data is embedded whole, and '<' in it cannot close the script element") {
  const std::string json = R"({"sites":[{"queries":["</script><script>alert(1)</script>","{{DATA}}"]}]})";
  const std::string page = explorer_page(json, "run </title> & co");
  CHECK(page.find("<title>run &lt;/title&gt; &amp; co</title>") != std::string::npos);
  const std::string open = "<script type=\"application/json\" id=\"headlab-data\">";
  const std::size_t at = page.find(open);
  REQUIRE(at != std::string::npos);
  const std::size_t end = page.find("</script>", at);
  const std::string embedded = page.substr(at + open.size(), end - at - open.size());
  CHECK(embedded.find('<') == std::string::npos);
  CHECK(nlohmann::json::parse(embedded) == nlohmann::json::parse(json));  // \u003c reads back as '<'
  // Every marker of the template is filled; the one "{{DATA}}" left is the token inside the data.
  const std::size_t marker = page.find("{{DATA}}");
  CHECK(marker == at + open.size() + embedded.find("{{DATA}}"));
  CHECK(page.find("{{DATA}}", marker + 1) == std::string::npos);
  CHECK(page.find("{{TITLE}}") == std::string::npos);
  CHECK(page.find("/*{{CSS}}*/") == std::string::npos);
  CHECK(page.find("/*{{JS}}*/") == std::string::npos);
  CHECK(page.find("function showQuery") != std::string::npos);
  CHECK(page.find("http://") == page.find("http://www.w3.org/2000/svg"));  // the SVG namespace, no fetch
}

TEST_CASE("explorer: the circuits view holds patching's shares per site, and is absent without a rule") {
  CHECK(site_of_module("blocks.1.attn") == "layers.1.self_attn");
  CHECK(site_of_module("encoder.0.attn") == "encoder.layers.0.self_attn");
  CHECK(site_of_module("decoder.2.attn") == "decoder.layers.2.self_attn");
  CHECK(site_of_module("decoder.2.cross_attn") == "decoder.layers.2.multihead_attn");
  LoadedModel m = untrained(Task::copy, 4);  // post-LN: patching only
  const Probe probe = repeated_tokens_probe(m, 8, 0, 3);
  const IndexArray first = xt::view(probe.sequences, xt::range(0, 1), xt::all());
  ExplorerData d = collect_explorer_data(m, {first, first}, probe, 8, 3);
  CHECK(nlohmann::json::parse(explorer_json(d))["circuits"].is_null());
  REQUIRE(add_circuits(d, m, 16, 2).empty());
  const PatchingResult direct = activation_patching(m, make_circuit_probe(m.options, {16, 2, 0, ""}));
  const nlohmann::json c = nlohmann::json::parse(explorer_json(d))["circuits"];
  REQUIRE(c["patching"].size() == direct.modules.size());
  for (std::size_t k = 0; k < direct.modules.size(); ++k) {
    const std::string site = c["patching"][k]["site"];
    CHECK(std::find_if(d.sites.begin(), d.sites.end(), [&](const ExplorerSite& s) { return s.name == site; }) != d.sites.end());
    for (std::size_t h = 0; h < direct.heads[k].size(); ++h)
      CHECK(c["patching"][k]["shares"][h].get<double>() == doctest::Approx(direct.heads[k][h]).epsilon(1e-9));
  }
  CHECK(c["attribution"].is_null());  // post-LN
  CHECK(c["rows"] == 16);
  LoadedModel lm = testing::untrained_model(TrainOptions::defaults_for(Task::lm), 2);  // no rule for lm
  ExplorerData none;
  CHECK(add_circuits(none, lm).find("lm task has no corruption rule") != std::string::npos);
  CHECK(!none.circuits);
  LoadedModel translate = testing::untrained_model(TrainOptions::defaults_for(Task::translate), 2);  // no --valid file
  CHECK(add_circuits(none, translate).find("--valid") != std::string::npos);
  CHECK(!none.circuits);
}
}  // namespace test_explorer
