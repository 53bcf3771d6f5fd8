// The options table (headlab/train/options.hpp): one row per option drives the per-task defaults,
// the checkpoint text, the run's config.ini and the flag names.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>

#include "headlab/core/user_input.hpp"
#include "headlab/train/options.hpp"

namespace test_options {

using namespace headlab;

namespace {
// "valid", or "field: why" of the OptionError validate() throws.
std::string why(const TrainOptions& o) {
  try {
    o.validate();
  } catch (const OptionError& e) {
    return e.field() + ": " + e.why();
  }
  return "valid";
}
}  // namespace

TEST_CASE("options table: every field has one row, with a unique field and flag name") {
  std::set<std::string> fields, flags;
  for (const OptionInfo& info : train_option_table()) {
    CHECK(fields.insert(info.field).second);
    CHECK(flags.insert(info.flag).second);
    CHECK(find_option_by_field(info.field) == &info);
    CHECK(find_option_by_flag(std::string("--") + info.flag) == &info);
    CHECK(info.tasks != 0u);
  }
  CHECK(find_option_by_field("ff_dim")->flag == std::string("ff"));
  CHECK(find_option_by_flag("pre-ln")->field == std::string("norm_first"));
  CHECK(find_option_by_field("colour") == nullptr);
  CHECK(find_option_by_field("gate")->kind == OptionKind::choice);
  CHECK(find_option_by_field("rope")->kind == OptionKind::flag);
  CHECK_FALSE(find_option_by_field("run_dir")->stored);
}

TEST_CASE("options table: per-task defaults come from its columns, and text keeps them") {
  const TrainOptions induction = TrainOptions::defaults_for(Task::induction);
  CHECK(induction.task == Task::induction);
  CHECK(induction.norm_first);
  CHECK(induction.attention_only);
  CHECK(induction.rope);
  CHECK(induction.vocab == 64);
  CHECK(TrainOptions::defaults_for(Task::translate).d_model == 128);
  CHECK(TrainOptions::defaults_for(Task::copy).to_text() == TrainOptions{}.to_text());
  for (Task task : {Task::copy, Task::translate, Task::induction}) {
    CAPTURE(task_name(task));
    const TrainOptions o = TrainOptions::defaults_for(task);
    CHECK(TrainOptions::from_text(o.to_text()).to_text() == o.to_text());
    // A field the text leaves out takes the default of the text's task, not the copy task's.
    const TrainOptions sparse = TrainOptions::from_text("task = " + task_name(task) + "\n");
    CHECK(sparse.to_text() == o.to_text());
    // config.ini holds every stored option under its flag name, and nothing else.
    const std::string ini = o.to_config_ini();
    for (const OptionInfo& info : train_option_table()) {
      const bool written = ini.find("\n" + std::string(info.flag) + "=") != std::string::npos;
      CHECK(written == info.stored);
    }
  }
}

TEST_CASE("options table: values of the wrong form are refused naming the field") {
  TrainOptions o;
  CHECK_THROWS_WITH_AS(find_option_by_field("heads")->set(o, "x"), doctest::Contains("must be a whole number"), ValueError);
  CHECK_THROWS_WITH_AS(find_option_by_field("heads")->set(o, "-2"), doctest::Contains("must be a whole number"), ValueError);
  CHECK_THROWS_WITH_AS(find_option_by_field("task")->set(o, "poetry"), doctest::Contains("not a known task"), ValueError);
  CHECK_THROWS_WITH_AS(find_option_by_field("gate")->set(o, "sometimes"), doctest::Contains("not a gate"), ValueError);
  CHECK_THROWS_WITH_AS(TrainOptions::from_text("task = copy\nheads = many\n"),
                       doctest::Contains("options line 2 (heads): must be a whole number"), ValueError);
  CHECK_THROWS_WITH_AS(TrainOptions::from_text("run_dir = /tmp/x\n"), doctest::Contains("unknown option 'run_dir'"),
                       ValueError);
  find_option_by_field("gate")->set(o, "elementwise");
  CHECK(o.gate == GateKind::elementwise);
  CHECK(find_option_by_field("gate")->get(o) == "elementwise");
}

TEST_CASE("options table: numbers are read in the option's own terms (whole, finite, true/false/1/0)") {
  TrainOptions o;
  auto refusal = [&](const char* field, const std::string& value) {
    try {
      find_option_by_field(field)->set(o, value);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refusal("steps", "-5") == "must be a whole number from 0 to 1000000000, got '-5'");
  CHECK(refusal("steps", "1e20") == "must be a whole number from 0 to 1000000000, got '1e20'");
  CHECK(refusal("steps", "0") == "accepted");  // no step cap: validate() wants a time budget then
  CHECK(refusal("steps", "1000000001") == "must be a whole number from 0 to 1000000000, got '1000000001'");
  CHECK(refusal("batch", "0") == "must be a whole number from 1 to 1000000000, got '0'");
  CHECK(refusal("steps", " 5") != "accepted");
  CHECK(refusal("steps", "+5") != "accepted");
  CHECK(refusal("layers", "18446744073709551616") != "accepted");  // 2^64: no wrap
  CHECK(refusal("seed", "-1") == "must be a whole number from 0 to 18446744073709551615, got '-1'");
  CHECK(refusal("seed", "18446744073709551615") == "accepted");
  CHECK(o.seed == 18446744073709551615ull);
  for (const char* real : {"nan", "inf", "-inf", "1e999", "0x1p3", "", "1,5"})
    CHECK(refusal("length_penalty", real).find("must be a finite number") == 0);
  CHECK(refusal("dropout", "1e-1") == "accepted");
  CHECK(refusal("rope", "2") == "must be true, false, 1 or 0, got '2'");
  CHECK(refusal("rope", "yes") != "accepted");
  CHECK(refusal("rope", "1") == "accepted");
  CHECK(o.rope);
  CHECK(refusal("rope", "0") == "accepted");
  CHECK_FALSE(o.rope);
  CHECK(refusal("train_file", "a\nb.tsv").find("control character") != std::string::npos);
  CHECK(refusal("train_file", "\xC3\x28.tsv").find("not valid UTF-8") != std::string::npos);
  // A hostile value is quoted clipped: its first 200 bytes and its size.
  const std::string why = refusal("steps", std::string(10 << 20, '9'));
  CHECK(why.size() < 300);
  CHECK(why.find("...' (10485760 bytes)") != std::string::npos);
  CHECK(quote_clipped("a\x01" "b") == "'a\\x01b'");
  CHECK(quote_clipped(std::string(300, 'x')) == "'" + std::string(200, 'x') + "...' (300 bytes)");
  CHECK(quote_clipped(std::string(199, 'x') + "\xC3\xA9") == "'" + std::string(199, 'x') + "...' (201 bytes)");
  // The checkpoint's options go through the same parsers.
  CHECK_THROWS_WITH_AS(TrainOptions::from_text("layers = 18446744073709551616\n"),
                       doctest::Contains("options line 1 (layers): must be a whole number from 1 to 1000000000"),
                       ValueError);
}

TEST_CASE("options table: validate() refuses what would fail later, naming the field") {
  TrainOptions induction = TrainOptions::defaults_for(Task::induction);
  CHECK(why(induction) == "valid");
  induction.length = 2;  // held-out blocks of (2 + 1) / 2 = 1 token: induction_eval refused them at step 250
  CHECK(why(induction).find("length: must be from 3 to 100000 for task induction") == 0);
  induction.length = 3;
  CHECK(why(induction) == "valid");
  TrainOptions copy;
  copy.steps = 0;  // no step cap: something else must stop the run
  CHECK(why(copy) == "steps: 0 means no step cap, which needs a --time-budget to stop the run");
  copy.time_budget = 30;
  CHECK(why(copy) == "valid");
  copy = TrainOptions{};
  copy.batch = 0;  // made in code, never parsed: the same rule as the flag's
  CHECK(why(copy) == "batch: must be a whole number from 1 to 1000000000, got '0'");
  copy = TrainOptions{};
  copy.clip_norm = std::nan("");
  CHECK(why(copy) == "clip_norm: must be a finite number, got 'nan'");
  copy = TrainOptions{};
  copy.dropout = 1.0;
  CHECK(why(copy) == "dropout: must be in [0, 1)");
}

TEST_CASE("options table: --select takes what the task measures, and names the task otherwise") {
  for (Task task : {Task::copy, Task::translate, Task::induction, Task::recall}) {
    TrainOptions o = TrainOptions::defaults_for(task);
    o.train_file = o.valid_file = "corpus.tsv";  // translate needs them named (never read here)
    CAPTURE(task_name(task));
    CHECK(o.select == "valid_loss");  // the default of every task
    CHECK(why(o) == "valid");
    o.select = "bleu";
    CHECK(why(o) == (task == Task::translate ? "valid"
                                             : "select: bleu is for task translate; task " + task_name(task) +
                                                   " has valid_loss or accuracy"));
    o.select = "accuracy";
    CHECK(why(o) == (task == Task::translate
                         ? "select: accuracy is for tasks copy, induction and recall; task translate has valid_loss or bleu"
                         : "valid"));
    o.select = "perplexity";
    CHECK(why(o) == "select: 'perplexity' is not valid_loss, bleu or accuracy");
  }
  const OptionInfo* info = find_option_by_flag("--select");
  REQUIRE(info != nullptr);
  CHECK(info->kind == OptionKind::choice);
  CHECK(info->stored);  // part of the run: a resume must keep it
  CHECK(info->choices == std::vector<std::string>{"valid_loss", "bleu", "accuracy"});
}
}  // namespace test_options
