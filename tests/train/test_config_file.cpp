// The config file of `headlab train --config FILE` (headlab/train/config_file.hpp): read strictly,
// every refusal as "FILE:LINE: why". The flag-over-file rule is tested at the command line
// (tests/cli/bad_input.cmake) and in tests/apps/test_fuzz_regressions.cpp.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "headlab/train/config_file.hpp"
#include "headlab/core/file_writer.hpp"
#include "headlab/train/options.hpp"
#include "test_support.hpp"

namespace test_config_file {

using namespace headlab;
using headlab::testing::TempDir;

TEST_CASE("config file: what to_config_ini writes reads back, key by key") {
  for (Task task : {Task::copy, Task::translate, Task::induction}) {
    CAPTURE(task_name(task));
    TrainOptions o = TrainOptions::defaults_for(task);
    o.train_file = " data/with #hash and spaces .tsv";
    const std::vector<ConfigEntry> entries = parse_config_text(o.to_config_ini(), "run/config.ini");
    TrainOptions back = TrainOptions::defaults_for(task);
    for (const ConfigEntry& e : entries) find_option_by_flag(e.key)->set(back, e.value);
    CHECK(back.to_text() == o.to_text());
    CHECK(entries.front().where == "run/config.ini:4");  // two comment lines, then [train]
  }
}

TEST_CASE("config file: a BOM is skipped, and comments, blank lines, CRLF, quotes and spaces are allowed") {
  const auto entries = parse_config_text("\xEF\xBB\xBF# made by hand\r\n\r\n[train]\r\n  steps = 50 \r\n; note\n"
                                         "train = 'a b.tsv'\nvalid=\"v#1.tsv\"\n",
                                         "c.ini");
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].key == "steps");
  CHECK(entries[0].value == "50");
  CHECK(entries[0].where == "c.ini:4");
  CHECK(entries[1].value == "a b.tsv");
  CHECK(entries[2].value == "v#1.tsv");
}

TEST_CASE("config file: a study recipe's [study] section is skipped, its lines still checked") {
  const auto entries =
      parse_config_text("[study]\ncell = a --heads 2\ncell = b --heads 4\n[train]\nsteps=5\n[study]\nseeds=1\n", "r.ini");
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].key == "steps");
  CHECK(entries[0].where == "r.ini:5");
  CHECK_THROWS_WITH_AS(parse_config_text("[study]\ncell = a\x1b[2J\n", "r.ini"),
                       doctest::Contains("r.ini:2: a control character"), ValueError);
}

TEST_CASE("config file: refusals name FILE:LINE and why") {
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {"[train]\nstpes=50\n", "c.ini:2: unknown key 'stpes' (did you mean steps?)"},
      {"[train]\nd_model=32\n", "c.ini:2: unknown key 'd_model' (did you mean d-model?)"},
      {"[train]\ncolour=blue\n", "c.ini:2: unknown key 'colour'"},
      {"[train]\n--steps=5\n", "c.ini:2: unknown key '--steps'"},
      {"steps=50\n[train]\n", "c.ini:1: 'steps' stands before the [train] section"},
      {"[train]\nsteps=5\n[eval]\nsteps=6\n", "c.ini:3: unknown section '[eval]' (the sections are [train] and, in a study recipe, [study])"},
      {"[train]\nsteps=5\nheads=2\nsteps=6\n", "c.ini:4: duplicate key 'steps' (first set on line 2)"},
      {"[train]\nsteps 5\n", "c.ini:2: expected key=value, [train] or a # comment, got 'steps 5'"},
      {"[train\n", "c.ini:1: a section header must end with ']'"},
      {"[train]\ntrain=\"a.tsv\n", "c.ini:2: unclosed quote in '\"a.tsv'"},
      {"[train]\ntrain=\xC3\x28.tsv\n", "c.ini:2: invalid UTF-8"},
      {"[train]\nsteps=5\x1b[2J\n", "c.ini:2: a control character in 'steps=5\\x1B[2J'"},
      {"\xEF\xBB\xBF\xEF\xBB\xBF[train]\n", "c.ini:1: expected key=value"},  // only one BOM, at the start
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK_THROWS_WITH_AS(parse_config_text(c.text, "c.ini"), doctest::Contains(c.message.c_str()), ValueError);
  }
  // A NUL byte (a binary file): the length is given, or the literal would end at the NUL.
  const std::string binary("[train]\nste\0ps=5\n", 17);
  CHECK_THROWS_WITH_AS(parse_config_text(binary, "c.ini"), doctest::Contains("c.ini:2: a NUL byte"), ValueError);
  // A hostile key is quoted clipped.
  const std::string huge(1 << 20, 'k');
  try {
    parse_config_text("[train]\n" + huge + "=1\n", "c.ini");
    FAIL("a 1 MiB key was accepted");
  } catch (const ValueError& e) {
    CHECK(std::string(e.what()).size() < 400);
    CHECK(std::string(e.what()).find("(1048576 bytes)") != std::string::npos);
  }
}

TEST_CASE("config file: only a regular file of at most 1 MiB is read (a FIFO is refused without blocking)") {
  TempDir dir("config_file");
  const std::string fifo = (dir.path / "fifo.ini").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(read_config_file(fifo), doctest::Contains("not a regular file"), ValueError);
  CHECK_THROWS_WITH_AS(read_config_file(dir.path.string()), doctest::Contains("is a directory"), ValueError);
  CHECK_THROWS_WITH_AS(read_config_file((dir.path / "missing.ini").string()), doctest::Contains("no such file"),
                       ValueError);
  const std::string big = (dir.path / "big.ini").string();
  write_file_atomic(big, "[train]\n" + std::string(kMaxConfigFileBytes, '#') + "\n", "test");
  CHECK_THROWS_WITH_AS(read_config_file(big), doctest::Contains("a config file is at most 1048576"), ValueError);
  const std::string ok = (dir.path / "ok.ini").string();
  write_file_atomic(ok, "[train]\nsteps=7\n", "test");
  const auto entries = read_config_file(ok);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].where == ok + ":2");
}

TEST_CASE("config file: the nearest flag is suggested for a misspelt key") {
  CHECK(nearest_option_flag("stpes") == "steps");
  CHECK(nearest_option_flag("d_model") == "d-model");
  CHECK(nearest_option_flag("ff_dim") == "ff");  // a field name gives its flag
  CHECK(nearest_option_flag("pre_ln") == "pre-ln");
  CHECK(nearest_option_flag("temperature") == "");
}
}  // namespace test_config_file
