// The options table (headlab/train/options.hpp): one row per option drives the per-task defaults,
// the checkpoint text, the run's config.ini and the flag names.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "headlab/train/options.hpp"

using namespace headlab;

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
  CHECK_THROWS_WITH_AS(find_option_by_field("heads")->set(o, "x"), doctest::Contains("not a count"), ValueError);
  CHECK_THROWS_WITH_AS(find_option_by_field("heads")->set(o, "-2"), doctest::Contains("not a count"), ValueError);
  CHECK_THROWS_WITH_AS(find_option_by_field("task")->set(o, "poetry"), doctest::Contains("not a known task"), ValueError);
  CHECK_THROWS_WITH_AS(find_option_by_field("gate")->set(o, "sometimes"), doctest::Contains("not a gate"), ValueError);
  CHECK_THROWS_WITH_AS(TrainOptions::from_text("task = copy\nheads = many\n"),
                       doctest::Contains("options line 2 (heads): not a count"), ValueError);
  CHECK_THROWS_WITH_AS(TrainOptions::from_text("run_dir = /tmp/x\n"), doctest::Contains("unknown option 'run_dir'"),
                       ValueError);
  find_option_by_field("gate")->set(o, "elementwise");
  CHECK(o.gate == GateKind::elementwise);
  CHECK(find_option_by_field("gate")->get(o) == "elementwise");
}
