// The head lab: role scores on hand-built attention patterns, standing head
// masks, importance against finite differences, pruning, the induction task.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <filesystem>
#include <sstream>

#include <xtensor/xview.hpp>

#include "headlab/lab/head_survival.hpp"
#include "headlab/lab/heads.hpp"
#include "headlab/core/random.hpp"
#include "untrained_model.hpp"

using namespace headlab;
namespace fs = std::filesystem;

namespace {

// (1, 1, L, L) weights with row i putting weight 1 on key key_of(i) (or on itself if out of range).
template <typename KeyOf>
Array<double> one_hot_pattern(std::size_t L, KeyOf key_of) {
  Array<double> w = xt::zeros<double>({std::size_t(1), std::size_t(1), L, L});
  for (std::size_t i = 0; i < L; ++i) {
    const std::ptrdiff_t j = key_of(i);
    w(0, 0, i, (j >= 0 && std::size_t(j) < L) ? std::size_t(j) : i) = 1.0;
  }
  return w;
}

TrainOptions tiny_copy_options() {
  TrainOptions o;
  o.d_model = 16;
  o.heads = 2;
  o.ff_dim = 32;
  o.layers = 1;
  o.vocab = 7;
  o.length = 7;
  o.progress = "none";
  return o;
}

// A freshly initialised (untrained) model of the options, as load_trained_model would give.
LoadedModel fresh_model(const TrainOptions& o, std::uint64_t seed) { return testing::untrained_model(o, seed); }

// "site#head" of the least important head at the full mask, importance estimated on `on`'s batches
// (the masks of `sites`, the model's, are cleared afterwards).
std::string least_important_head(std::vector<AttentionSite>& sites, HeadLabTask& on) {
  const HeadImportance imp =
      head_importance(sites, full_head_mask(sites), on.batches(), [&](std::size_t i) { return on.batch_loss(i); });
  clear_head_mask(sites);
  double least = 1e300;
  std::string name;
  for (std::size_t s = 0; s < sites.size(); ++s)
    for (std::size_t h = 0; h < sites[s].heads(); ++h)
      if (imp.normalised[s][h] < least) least = imp.normalised[s][h], name = sites[s].name + "#" + std::to_string(h);
  return name;
}

TrainOptions tiny_induction_options() {
  TrainOptions o = TrainOptions::defaults_for(Task::induction);
  o.vocab = 12;
  o.length = 4;
  o.d_model = 16;
  o.heads = 2;
  o.batch = 8;
  o.eval_sequences = 16;
  o.progress = "none";
  return o;
}

}  // namespace

TEST_CASE("heads: entropy is ln S for uniform rows and 0 for one-hot rows") {
  const std::size_t L = 5;
  Array<double> uniform = xt::ones<double>({std::size_t(2), std::size_t(1), L, L}) / double(L);
  CHECK(attention_entropy(uniform)[0] == doctest::Approx(std::log(double(L))));
  // Causal uniform rows: row i spreads over i + 1 keys, entropy ln(i + 1).
  Array<double> causal = xt::zeros<double>({std::size_t(1), std::size_t(1), L, L});
  double expected = 0;
  for (std::size_t i = 0; i < L; ++i) {
    for (std::size_t j = 0; j <= i; ++j) causal(0, 0, i, j) = 1.0 / double(i + 1);
    expected += std::log(double(i + 1)) / double(L);
  }
  CHECK(attention_entropy(causal)[0] == doctest::Approx(expected));
  CHECK(attention_entropy(one_hot_pattern(L, [](std::size_t) { return std::ptrdiff_t(0); }))[0] == 0.0);
  // A fully masked (all-zero) row is skipped, not counted as entropy 0.
  Array<double> masked = uniform;
  xt::view(masked, 0, 0, 2, xt::all()) = 0.0;
  CHECK(attention_entropy(masked)[0] == doctest::Approx(std::log(double(L))));
}

TEST_CASE("heads: sink, previous-token and induction scores of hand-built heads") {
  const std::size_t T = 4, L = 2 * T + 1;  // [<s>] r1..r4 r1..r4
  const auto sink = one_hot_pattern(L, [](std::size_t) { return std::ptrdiff_t(0); });
  const auto previous = one_hot_pattern(L, [](std::size_t i) { return std::ptrdiff_t(i) - 1; });
  const auto induction = one_hot_pattern(L, [&](std::size_t i) {
    return i > T ? std::ptrdiff_t(i) - std::ptrdiff_t(T) + 1 : std::ptrdiff_t(i);  // else itself
  });
  CHECK(sink_mass(sink)[0] == 1.0);
  CHECK(previous_token_score(sink)[0] == doctest::Approx(1.0 / double(L - 1)));  // only query 1 looks at key 0 = 1 - 1
  CHECK(induction_score(sink, T)[0] == 0.0);

  CHECK(previous_token_score(previous)[0] == 1.0);
  CHECK(sink_mass(previous)[0] == doctest::Approx(1.0 / double(L - 1)));
  CHECK(induction_score(previous, T)[0] == 0.0);

  CHECK(induction_score(induction, T)[0] == 1.0);
  CHECK(previous_token_score(induction)[0] == 0.0);
  CHECK(sink_mass(induction)[0] == 0.0);

  // Several heads and a batch: scores per head, averaged over the batch.
  Array<double> two = xt::zeros<double>({std::size_t(2), std::size_t(2), L, L});
  xt::view(two, 0, 0) = xt::view(previous, 0, 0);
  xt::view(two, 1, 0) = xt::view(induction, 0, 0);
  xt::view(two, xt::all(), 1) = xt::view(induction, 0, 0);
  const std::vector<double> ind = induction_score(two, T);
  CHECK(ind[0] == doctest::Approx(0.5));
  CHECK(ind[1] == 1.0);
  CHECK(previous_token_score(two)[0] == doctest::Approx(0.5));

  // Half of the weight on the induction key gives 0.5.
  Array<double> half = 0.5 * induction + 0.5 * previous;
  CHECK(induction_score(half, T)[0] == doctest::Approx(0.5));
}

TEST_CASE("heads: scores refuse the wrong shapes") {
  CHECK_THROWS_AS(sink_mass(Array<double>(xt::zeros<double>({3, 3}))), ShapeError);
  CHECK_THROWS_AS(induction_score(Array<double>(xt::zeros<double>({1, 1, 6, 6})), 3), ShapeError);  // needs L >= 7
  CHECK_THROWS_AS(induction_score(Array<double>(xt::zeros<double>({1, 1, 9, 9})), 1), ShapeError);
}

TEST_CASE("heads: a standing head mask scales each head, a call's own mask takes precedence") {
  Generator gen(3);
  AttentionConfig c;
  c.d_model = 8;
  c.num_heads = 2;
  MultiHeadAttention<double> mha(c, gen);
  const Tensor<double> x = uniform<double>({2, 3, 8}, -1, 1, gen);
  const Array<double> full = mha.forward(x).output.value();
  mha.set_head_mask(Tensor<double>(Array<double>{0.0, 0.0}));
  const Array<double> none = mha.forward(x).output.value();
  // With every head masked only the output bias is left.
  const Array<double> bias = mha.parameter("out_proj.bias").value();
  for (std::size_t b = 0; b < 2; ++b)
    for (std::size_t t = 0; t < 3; ++t)
      for (std::size_t d = 0; d < 8; ++d) CHECK(none(b, t, d) == doctest::Approx(bias(d)));
  AttentionCall<double> call;
  call.head_mask = Tensor<double>(Array<double>{1.0, 1.0});
  CHECK(xt::allclose(mha.forward(x, call).output.value(), full));
  mha.set_head_mask(Tensor<double>());
  CHECK(xt::allclose(mha.forward(x).output.value(), full));
  CHECK_THROWS_AS(mha.set_head_mask(Tensor<double>(Array<double>{1.0, 1.0, 1.0})), ShapeError);
}

TEST_CASE("heads: importance is |dL/dxi| and agrees with central differences of the loss") {
  LoadedModel m = fresh_model(tiny_copy_options(), 5);
  HeadLabTask task(m, 32);
  REQUIRE(task.batches() == 1);
  std::vector<AttentionSite>& sites = task.sites();
  REQUIRE(sites.size() == 3);  // encoder self, decoder self, cross
  HeadMask mask = full_head_mask(sites);
  mask[1][0] = 0.0f;  // importance is taken at the current mask, pruned heads included
  const HeadImportance imp = head_importance(sites, mask, 1, [&](std::size_t i) { return task.batch_loss(i); });
  const double eps = 1e-2;
  for (std::size_t s = 0; s < sites.size(); ++s)
    for (std::size_t h = 0; h < 2; ++h) {
      HeadMask plus = mask, minus = mask;
      plus[s][h] += float(eps);
      minus[s][h] -= float(eps);
      apply_head_mask(sites, plus);
      const double up = task.batch_loss(0).item();
      apply_head_mask(sites, minus);
      const double down = task.batch_loss(0).item();
      CAPTURE(s);
      CAPTURE(h);
      CHECK(imp.raw[s][h] == doctest::Approx(std::abs(up - down) / (2 * eps)).epsilon(0.02).scale(1e-3));
    }
  // Normalised per site by the L2 norm.
  for (std::size_t s = 0; s < sites.size(); ++s) {
    const double norm = std::hypot(imp.raw[s][0], imp.raw[s][1]);
    CHECK(imp.normalised[s][0] == doctest::Approx(imp.raw[s][0] / norm));
  }
  clear_head_mask(sites);
}

TEST_CASE("heads: pruning goes from no head to every head, random order is seeded, masks are cleared") {
  LoadedModel m = fresh_model(tiny_copy_options(), 7);
  HeadLabTask task(m, 32);
  const HeadLabTask::Score before = task.evaluate();
  const std::vector<PruneStep> by_importance = prune_heads(task, true, 0.25, 1);
  // 6 heads: ceil(0.25 x 6) = 2, then ceil(0.25 x 4) = 1 each time -> 0, 2, 3, 4, 5, 6 pruned.
  REQUIRE(by_importance.size() == 6);
  const std::size_t expected[] = {0, 2, 3, 4, 5, 6};
  for (std::size_t i = 0; i < 6; ++i) CHECK(by_importance[i].pruned == expected[i]);
  CHECK(by_importance.front().loss == doctest::Approx(before.loss));
  CHECK(by_importance.back().fraction == 1.0);
  CHECK(by_importance.back().loss != doctest::Approx(before.loss));
  CHECK(by_importance[1].removed.size() == 2);
  // The first heads removed are the least important ones at the full mask.
  const std::string least_name = least_important_head(task.sites(), task);
  CHECK(by_importance[1].removed[0] == least_name);
  // Masks are gone afterwards; random orders repeat with their seed.
  CHECK(task.evaluate().loss == doctest::Approx(before.loss));
  const auto r1 = prune_heads(task, false, 0.25, 42), r2 = prune_heads(task, false, 0.25, 42);
  REQUIRE(r1.size() == r2.size());
  for (std::size_t i = 0; i < r1.size(); ++i) {
    CHECK(r1[i].removed == r2[i].removed);
    CHECK(r1[i].pruned == by_importance[i].pruned);
  }
  CHECK_THROWS_AS(prune_heads(task, true, 0.0, 1), ValueError);
}

TEST_CASE("heads: zeroing each head alone scores what pruning that one head scores, and clears the masks") {
  LoadedModel m = fresh_model(tiny_copy_options(), 7);
  HeadLabTask task(m, 32);
  const HeadLabTask::Score before = task.evaluate();
  const std::vector<SingleHeadScore> each = zero_each_head(task);
  const std::vector<AttentionSite>& sites = task.sites();
  REQUIRE(each.size() == 6);  // 3 sites x 2 heads, site then head
  for (std::size_t i = 0; i < each.size(); ++i) {
    CHECK(each[i].site == i / 2);
    CHECK(each[i].head == i % 2);
    CHECK(each[i].score.loss != doctest::Approx(before.loss).epsilon(1e-9));  // every head of it matters
  }
  // A random order's first step prunes exactly one head: its score is that head's row.
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const std::vector<PruneStep> order = prune_heads(task, false, 0.01, seed);
    REQUIRE(order[1].removed.size() == 1);
    bool found = false;
    for (const SingleHeadScore& r : each) {
      if (sites[r.site].name + "#" + std::to_string(r.head) != order[1].removed[0]) continue;
      found = true;
      CHECK(r.score.loss == doctest::Approx(order[1].loss).epsilon(1e-12));
      CHECK(r.score.metric == doctest::Approx(order[1].metric).epsilon(1e-12));
    }
    CHECK(found);
  }
  CHECK(task.evaluate().loss == doctest::Approx(before.loss).epsilon(1e-12));
}

TEST_CASE("heads: importance from another draw of sequences orders the pruning, the scored draw scores it") {
  LoadedModel m = fresh_model(tiny_copy_options(), 7);
  HeadLabTask scored(m, 32), other(m, 32, "", 1), other_again(m, 32, "", 1);
  // Another draw: other sequences (another loss), the same for the same draw.
  NoGradGuard no_grad_scope;
  const double scored_loss = scored.batch_loss(0).item(), other_loss = other.batch_loss(0).item();
  CHECK(other_loss != doctest::Approx(scored_loss).epsilon(1e-9));
  CHECK(other_again.batch_loss(0).item() == other_loss);
}

TEST_CASE("heads: pruning with an importance draw removes the head least important there, scored on its own draw") {
  LoadedModel m = fresh_model(tiny_copy_options(), 7);
  HeadLabTask scored(m, 8);
  std::vector<AttentionSite>& sites = scored.sites();
  const auto least_important = [&](HeadLabTask& on) { return least_important_head(sites, on); };
  // A draw whose least important head differs from the scored draw's: only then can the check
  // below tell which draw gave the order.
  const std::string on_scored = least_important(scored);
  std::uint64_t draw = 1;
  for (; draw <= 40; ++draw) {
    HeadLabTask candidate(m, 8, "", draw);
    if (least_important(candidate) != on_scored) break;
  }
  REQUIRE(draw <= 40);
  HeadLabTask other(m, 8, "", draw);
  const std::string on_other = least_important(other);
  const std::vector<PruneStep> steps = prune_heads(scored, true, 0.01, 1, &other);
  REQUIRE(steps.size() == 7);  // one head a step
  CHECK(steps[1].removed == std::vector<std::string>{on_other});
  CHECK(steps.front().loss == doctest::Approx(scored.evaluate().loss).epsilon(1e-12));
}

TEST_CASE("heads: the heads prunable within a tolerance, and which heads survive it") {
  LoadedModel m = fresh_model(tiny_copy_options(), 7);
  std::vector<AttentionSite> sites = attention_sites(m);  // encoder self, decoder self, cross: 2 heads each
  REQUIRE(sites.size() == 3);
  auto name = [&](std::size_t s, std::size_t h) { return sites[s].name + "#" + std::to_string(h); };
  auto step = [](std::size_t pruned, double metric, std::vector<std::string> removed) {
    PruneStep p;
    p.pruned = pruned;
    p.fraction = double(pruned) / 6.0;
    p.metric = metric;
    p.removed = std::move(removed);
    return p;
  };
  // Within 0.01 of 0.90 for the first two steps; step 3 recovers, but only the unbroken run counts.
  const std::vector<PruneStep> order = {step(0, 0.90, {}), step(2, 0.895, {name(2, 1), name(0, 0)}),
                                        step(3, 0.85, {name(1, 1)}), step(4, 0.90, {name(0, 1)}),
                                        step(5, 0.20, {name(1, 0)}), step(6, 0.0, {name(2, 0)})};
  CHECK(steps_within(order, 0.01) == 2);
  CHECK(heads_prunable(order, 0.01) == 2);
  CHECK(heads_prunable(order, 0.001) == 0);  // step 1 already falls by 0.005
  CHECK(heads_prunable(order, 1.0) == 6);
  CHECK_THROWS_AS(steps_within({}, 0.01), ValueError);

  HeadImportance imp;
  imp.normalised = {{0.1, 0.2}, {0.3, 0.4}, {0.5, 0.6}};
  std::vector<HeadRoles> roles;
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t h = 0; h < 2; ++h) {
      HeadRoles r;
      r.site = sites[s].name;
      r.head = h;
      r.previous_token = 0.1 * double(2 * s + h);
      roles.push_back(r);
    }
  const std::vector<HeadFate> fates = head_fates(sites, order, 0.01, imp, roles);
  REQUIRE(fates.size() == 6);
  // Site order, heads within: (0,0) went first in step 1 (rank 2), (2,1) rank 1; the rest survive.
  const bool survives[] = {false, true, true, true, true, false};
  const std::size_t rank[] = {2, 4, 5, 3, 6, 1}, removed_at[] = {2, 4, 5, 3, 6, 2};
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(fates[i].site == sites[i / 2].name);
    CHECK(fates[i].head == i % 2);
    CHECK(fates[i].survives == survives[i]);
    CHECK(fates[i].removal_rank == rank[i]);
    CHECK(fates[i].removed_at == removed_at[i]);
    CHECK(fates[i].importance == imp.normalised[i / 2][i % 2]);
    CHECK(fates[i].roles.previous_token == roles[i].previous_token);
  }
  // An order that misses a head or removes one twice, or role rows out of order, are refused.
  std::vector<PruneStep> twice = order;
  twice.back().removed = {name(0, 0)};
  CHECK_THROWS_AS(head_fates(sites, twice, 0.01, imp, roles), ValueError);
  std::vector<PruneStep> short_order(order.begin(), order.end() - 1);
  CHECK_THROWS_AS(head_fates(sites, short_order, 0.01, imp, roles), ValueError);
  std::vector<HeadRoles> swapped = roles;
  std::swap(swapped[0], swapped[1]);
  CHECK_THROWS_AS(head_fates(sites, order, 0.01, imp, swapped), ValueError);
  CHECK_THROWS_AS(head_fates(sites, order, 0.01, imp, std::vector<HeadRoles>(roles.begin(), roles.end() - 1)), ValueError);
}

TEST_CASE("heads: induction sequences repeat their block, and the trainer resumes bit for bit") {
  Generator gen(1);
  const InductionBatch batch = induction_batch(gen, 40, 5, 9);
  const IndexArray& seq = batch.sequences;
  REQUIRE(seq.shape()[1] == 11);
  std::set<std::size_t> lengths;
  for (std::size_t b = 0; b < 40; ++b) {
    const std::size_t k = batch.blocks[b];
    lengths.insert(k);
    CHECK(k >= 3);  // ceil(5 / 2)
    CHECK(k <= 5);
    CHECK(seq(b, 0) == Vocabulary::bos);
    for (std::size_t t = 1; t <= 10; ++t) {
      if (t <= k) CHECK(seq(b, t) == seq(b, t + k));
      CHECK(seq(b, t) >= 2);
      CHECK(seq(b, t) < 9);
    }
  }
  CHECK(lengths.size() == 3);  // every length from 3 to 5 drawn
  Generator again(1);
  const InductionBatch fixed = induction_batch(again, 2, 5, 9, true);
  CHECK(fixed.blocks == std::vector<std::size_t>{5, 5});
  const fs::path a = fs::temp_directory_path() / "headlab_test_induction_a";
  const fs::path b = fs::temp_directory_path() / "headlab_test_induction_b";
  fs::remove_all(a);
  fs::remove_all(b);
  std::ostringstream log;
  TrainOptions o = tiny_induction_options();
  o.steps = 6;
  o.run_dir = a.string();
  const TrainResult straight = train(o, log);
  o.run_dir = b.string();
  o.steps = 3;
  train(o, log);
  o.steps = 6;
  o.resume = true;
  const TrainResult resumed = train(o, log);
  REQUIRE(resumed.losses.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) CHECK(resumed.losses[i] == straight.losses[i]);
  CHECK(fs::exists(a / "summary.json"));
  // The checkpoint loads back as a decoder-only model with its sites.
  LoadedModel m = load_trained_model((a / "checkpoint.safetensors").string());
  REQUIRE(m.lm);
  CHECK(!m.model);
  CHECK(attention_sites(m).size() == 2);
  CHECK(m.options.attention_only);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("heads: the sink mass of uniform attention, by hand, under every mask") {
  // Bidirectional or cross: every query sees all S keys, 1/S.
  CHECK(uniform_sink_mass(4, 5, false, 0, 0) == doctest::Approx(0.2));
  // Causal, 4 queries: (1/2 + 1/3 + 1/4) / 3.
  CHECK(uniform_sink_mass(4, 4, true, 0, 0) == doctest::Approx((1.0 / 2 + 1.0 / 3 + 1.0 / 4) / 3));
  // A window of 2 keys: query 1 sees {0, 1}, queries 2 and 3 no longer see key 0: (1/2) / 3.
  CHECK(uniform_sink_mass(4, 4, true, 2, 0) == doctest::Approx(1.0 / 6));
  // ... with one sink kept: query 2 sees {0, 1, 2}, query 3 {0, 2, 3}: (1/2 + 1/3 + 1/3) / 3.
  CHECK(uniform_sink_mass(4, 4, true, 2, 1) == doctest::Approx(7.0 / 18));
  CHECK(std::isnan(uniform_sink_mass(1, 4, true, 0, 0)));  // no query past the first
}

TEST_CASE("heads: roles on the probe give one row per head with scores in range") {
  TrainOptions o = tiny_induction_options();
  o.gate = GateKind::headwise;
  LoadedModel m = fresh_model(o, 3);
  const Probe probe = repeated_tokens_probe(m, 6, 0, 11);
  CHECK(probe.block == 4);
  REQUIRE(probe.sequences.shape()[1] == 9);
  const std::vector<HeadRoles> rows = head_roles(m, probe);
  REQUIRE(rows.size() == 2 * 2);
  for (const auto& r : rows) {
    CHECK(r.sink_mass >= 0);
    CHECK(r.sink_mass <= 1);
    CHECK(r.induction >= 0);
    CHECK(r.induction <= 1);
    CHECK(r.entropy >= 0);
    CHECK(r.entropy <= std::log(9.0) + 1e-6);
    CHECK(r.gate_mean > 0);
    CHECK(r.gate_mean < 1);
    CHECK(r.max_abs_output > 0);
  }
  // An untrained causal model: query 1 sees keys 0 and 1 only, so the sink score is well above 1/9,
  // near what uniform causal attention gives on 9 queries: (1/8) sum_{i=1}^{8} 1/(i+1).
  CHECK(rows[0].sink_mass > 0.1);
  double uniform = 0;
  for (int i = 1; i <= 8; ++i) uniform += 1.0 / (i + 1) / 8;
  for (const auto& r : rows) CHECK(r.sink_uniform == doctest::Approx(uniform));
  CHECK_THROWS_AS(repeated_tokens_probe(m, 6, 5, 1), ValueError);  // 11 ids > the model's 9
  const std::vector<Array<float>> maps = attention_maps(m, probe.sequences, xt::view(probe.sequences, xt::range(0, 1)));
  REQUIRE(maps.size() == 2);
  CHECK(maps[0].shape()[0] == 2);
  CHECK(maps[0].shape()[1] == 9);
}
