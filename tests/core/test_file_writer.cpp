// The checked file writers (headlab/core/file_writer.hpp): an atomic write either replaces the
// file or leaves it as it was, and says why; a full disk is simulated in a child process with
// RLIMIT_FSIZE (SIGXFSZ ignored, so write() fails with EFBIG instead of killing the process).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/core/file_writer.hpp"
#include "child_process.hpp"
#include "read_bytes.hpp"
#include "test_support.hpp"

namespace test_file_writer {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::Child;
using headlab::testing::fork_child;
using headlab::testing::read_bytes;
using headlab::testing::TempDir;

namespace {

bool has_temp_files(const TempDir& dir) {
  for (const std::string& name : dir.listing())
    if (name.find(".tmp.") != std::string::npos) return true;
  return false;
}

// Runs `body` in a child process whose files may not grow past `limit` bytes; returns the IOError
// message it caught ("" when none was thrown).
std::string message_under_file_size_limit(rlim_t limit, const std::function<void()>& body) {
  const Child child = fork_child([&](int to_parent) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit rl{limit, limit};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    std::string message;
    try {
      body();
    } catch (const IOError& e) {
      message = e.what();
    }
    (void)!::write(to_parent, message.data(), message.size());
  });
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(child.from_child, buf, sizeof buf)) > 0;) message.append(buf, static_cast<std::size_t>(n));
  ::close(child.from_child);
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  CHECK(WIFEXITED(status));
  return message;
}

// A pid that no process has: a child that has ended and been waited for.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

}  // namespace

TEST_CASE("write_file_atomic: replaces the file and leaves no temporary file") {
  TempDir dir("atomic_ok");
  const fs::path path = dir.path / "out.txt";
  write_file_atomic(path, "first\n", "test");
  write_file_atomic(path, "second\n", "test");
  CHECK(read_bytes(path) == "second\n");
  CHECK(dir.listing() == std::vector<std::string>{"out.txt"});
}

TEST_CASE("write_file_atomic: a directory that does not exist is an IOError naming the caller, file and reason") {
  TempDir dir("atomic_nowhere");
  const fs::path path = dir.path / "missing" / "out.txt";
  try {
    write_file_atomic(path, "text", "heads");
    FAIL("no IOError");
  } catch (const IOError& e) {
    const std::string what = e.what();
    CHECK(what.rfind("heads: '" + path.string() + "': ", 0) == 0);
    CHECK(what.find("No such file or directory") != std::string::npos);
  }
}

TEST_CASE("write_file_atomic: refuses to replace what is not a regular file, and leaves it as it was") {
  TempDir dir("atomic_not_regular");
  const fs::path fifo = dir.path / "pipe", sub = dir.path / "sub", target = dir.path / "target.txt",
                 link = dir.path / "link";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  fs::create_directory(sub);
  write_file_atomic(target, "kept\n", "test");
  fs::create_symlink(target, link);
  const std::vector<std::pair<fs::path, std::string>> cases = {
      {fifo, "a FIFO"}, {sub, "a directory"}, {link, "a symbolic link"}};
  for (const auto& path_and_kind : cases) {  // not a structured binding: CAPTURE's lambda takes `path`
    const fs::path& path = path_and_kind.first;
    const std::string& kind = path_and_kind.second;
    CAPTURE(path);
    try {
      write_file_atomic(path, "text", "explore");
      FAIL("no IOError");
    } catch (const IOError& e) {
      const std::string what = e.what();
      CHECK(what.rfind("explore: '" + path.string() + "': exists and is " + kind, 0) == 0);
    }
  }
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  CHECK(fs::is_directory(fs::symlink_status(sub)));
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(read_bytes(target) == "kept\n");
  CHECK_FALSE(has_temp_files(dir));
}

TEST_CASE("write_file_atomic: on a full disk the old file stays whole, the temporary file goes, the OS reason is given") {
  TempDir dir("atomic_full");
  const fs::path path = dir.path / "summary.json";
  write_file_atomic(path, "old contents\n", "test");
  const std::string big(64 * 1024, 'x');
  const std::string message =
      message_under_file_size_limit(4096, [&] { write_file_atomic(path, big, "train"); });
  CAPTURE(message);
  CHECK(message.rfind("train: '" + path.string() + "': writing '", 0) == 0);
  CHECK(message.find("File too large") != std::string::npos);
  CHECK(read_bytes(path) == "old contents\n");
  CHECK_FALSE(has_temp_files(dir));
}

TEST_CASE("write_file_atomic: the simulated failure hook leaves the old file and no temporary file") {
  TempDir dir("atomic_hook");
  const fs::path path = dir.path / "a.bin";
  write_file_atomic(path, "old", "test");
  CHECK_THROWS_WITH_AS(write_file_atomic(path, "new contents", "test", 3), doctest::Contains("simulated failure after 3 of 12"),
                       IOError);
  CHECK(read_bytes(path) == "old");
  CHECK_FALSE(has_temp_files(dir));
}

TEST_CASE("write_file_atomic: pieces are written one after another, and a failure in any of them keeps the old file") {
  TempDir dir("atomic_pieces");
  const fs::path path = dir.path / "ckpt.bin";
  const std::vector<std::string_view> pieces{"header|", "", "tensor a|", "tensor b"};
  write_file_atomic(path, pieces, "test");
  CHECK(read_bytes(path) == "header|tensor a|tensor b");
  // A failure at each byte boundary, the ones between pieces included: the old file stays.
  for (std::size_t after : {0, 3, 4, 11, 12}) {  // "new|" ends at 4, "contents" at 12
    CAPTURE(after);
    CHECK_THROWS_WITH_AS(write_file_atomic(path, std::vector<std::string_view>{"new|", "contents", "!"}, "test", after),
                         doctest::Contains("of 13 bytes"), IOError);
    CHECK(read_bytes(path) == "header|tensor a|tensor b");
    CHECK_FALSE(has_temp_files(dir));
  }
}

TEST_CASE("AppendFile: appends, and a write that does not fit leaves the file as it was") {
  TempDir dir("append");
  const fs::path path = dir.path / "metrics.jsonl";
  {
    AppendFile f(path, "MetricsWriter");
    f.write("{\"step\":1}\n");
    f.sync();
  }
  AppendFile(path, "MetricsWriter").write("{\"step\":2}\n");  // reopened: appended, not truncated
  CHECK(read_bytes(path) == "{\"step\":1}\n{\"step\":2}\n");

  const std::string line = "{\"step\":3,\"pad\":\"" + std::string(8000, 'p') + "\"}\n";
  const std::string message = message_under_file_size_limit(4096, [&] {
    AppendFile f(path, "MetricsWriter");
    f.write(line);
  });
  CAPTURE(message);
  CHECK(message.rfind("MetricsWriter: '" + path.string() + "': writing", 0) == 0);
  CHECK(message.find("File too large") != std::string::npos);
  CHECK(read_bytes(path) == "{\"step\":1}\n{\"step\":2}\n");  // no half line left behind
}

TEST_CASE("AppendFile: a file that cannot be opened is an IOError with the reason") {
  TempDir dir("append_nowhere");
  CHECK_THROWS_WITH_AS(AppendFile(dir.path / "no" / "m.jsonl", "MetricsWriter"),
                       doctest::Contains("No such file or directory"), IOError);
}

TEST_CASE("remove_stale_temp_files: removes NAME.tmp.PID of dead processes only") {
  TempDir dir("stale");
  const std::string dead = std::to_string(dead_pid()), alive = std::to_string(::getpid());
  for (const std::string& name : {"checkpoint.safetensors.tmp." + dead, "summary.json.tmp." + alive,
                                  std::string("notes.tmp.later"), std::string("data.txt")})
    dir.write(name, "x");
  CHECK(remove_stale_temp_files(dir.path) == 1);
  CHECK(dir.listing() == std::vector<std::string>{"data.txt", "notes.tmp.later", "summary.json.tmp." + alive});
  CHECK(remove_stale_temp_files(dir.path / "missing") == 0);
}

// Before: curves --out, mlp-demo --dot and the --emit-jobs files replaced any regular file.
TEST_CASE("check_replaces_only_own: an earlier output or an empty file may be replaced, any other file is kept") {
  TempDir dir("replaces_own");
  const auto is_own = [](std::string_view head) { return head.rfind("digraph headlab {", 0) == 0; };
  const fs::path own = dir.path / "graph.dot", empty = dir.path / "empty.dot", other = dir.path / "notes.txt";
  write_file_atomic(own, "digraph headlab {\n}\n", "test");
  write_file_atomic(empty, "", "test");
  write_file_atomic(other, "my notes\n", "test");
  CHECK_NOTHROW(check_replaces_only_own(own, is_own, "--dot", "a graph headlab wrote"));
  CHECK_NOTHROW(check_replaces_only_own(empty, is_own, "--dot", "a graph headlab wrote"));
  CHECK_NOTHROW(check_replaces_only_own(dir.path / "new.dot", is_own, "--dot", "a graph headlab wrote"));
  CHECK_THROWS_WITH_AS(check_replaces_only_own(other, is_own, "--dot", "a graph headlab wrote"),
                       doctest::Contains("notes.txt' exists and is not a graph headlab wrote; remove it or name another file"),
                       ValueError);
  CHECK_THROWS_WITH_AS(check_replaces_only_own(dir.path, is_own, "--dot", "a graph headlab wrote"),
                       doctest::Contains("exists and is a directory"), ValueError);
  CHECK(read_bytes(other) == "my notes\n");
}
}  // namespace test_file_writer
