// Input files: a FIFO, directory or device is refused before it is opened; a safetensors file's
// size is checked against its header before the data is read (headlab/data/input_file.hpp).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/core/json_depth.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/data/safetensors.hpp"
#include "headlab/data/text.hpp"
#include "headlab/train/checkpoint.hpp"
#include "test_support.hpp"

namespace test_input_file {

using namespace headlab;
using headlab::testing::TempDir;

namespace {
// Ends the test process if a read blocks (a FIFO opened without the check blocks in open()
// forever): the test fails in 10 s instead of hanging the suite.
struct Watchdog {
  Watchdog() { ::alarm(10); }
  ~Watchdog() { ::alarm(0); }
};

// A valid safetensors file with one float tensor of 3 values.
std::string small_file_bytes() {
  TensorFile file;
  file.add("w", Array<float>{1.0f, 2.0f, 3.0f});
  return serialize_safetensors(file);
}
}  // namespace

TEST_CASE("input files: a FIFO is refused before it is opened (no blocking), by every reader") {
  // Before: load_safetensors blocked forever in open() on a FIFO.
  TempDir dir("fifo");
  const std::string fifo = dir.file("checkpoint.safetensors");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const Watchdog watchdog;
  CHECK_THROWS_WITH_AS(InputFile(fifo, "test"), doctest::Contains("not a regular file (a FIFO)"), IOError);
  CHECK_THROWS_WITH_AS(load_safetensors(fifo), doctest::Contains("not a regular file (a FIFO)"), IOError);
  CHECK_THROWS_WITH_AS(load_trained_model(fifo), doctest::Contains("not a regular file"), IOError);
  CHECK_THROWS_WITH_AS(read_parallel_tsv(fifo), doctest::Contains("read_parallel_tsv: "), IOError);
}

TEST_CASE("input files: directories and devices are refused, and a missing file names the reason") {
  TempDir dir("not_regular");
  CHECK_THROWS_WITH_AS(load_safetensors(dir.path.string()), doctest::Contains("(a directory)"), IOError);
  CHECK_THROWS_WITH_AS(read_parallel_tsv(dir.path.string()), doctest::Contains("(a directory)"), IOError);
  CHECK_THROWS_WITH_AS(load_safetensors("/dev/zero"), doctest::Contains("(a character device)"), IOError);
  CHECK_THROWS_WITH_AS(load_safetensors(dir.file("missing")), doctest::Contains("cannot open: No such file"), IOError);
  CHECK(read_regular_file(dir.write("a.txt", "hello"), "test") == "hello");
}

TEST_CASE("safetensors: the file size is checked against the header before the data is read") {
  // Before: the whole file was read, then rejected: a 12 GB file took minutes and 12 GB of memory.
  TempDir dir("size_vs_header");
  const std::string bytes = small_file_bytes();
  const std::string path = dir.write("big.safetensors", bytes);
  REQUIRE(load_safetensors(path).size() == 1);
  // 16 GB more than the header describes (a sparse file: no disk is used).
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(bytes.size()) + (off_t(16) << 30)) == 0);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(load_safetensors(path), doctest::Contains("are not covered by any tensor"), FormatError);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 1.0);
  // And a file shorter than its header says: refused too, naming the tensor.
  const std::string cut = dir.write("cut.safetensors", bytes.substr(0, bytes.size() - 4));
  CHECK_THROWS_WITH_AS(load_safetensors(cut), doctest::Contains("beyond the data buffer"), FormatError);
  const std::string tiny = dir.write("tiny.safetensors", "abc");
  CHECK_THROWS_WITH_AS(load_safetensors(tiny), doctest::Contains("shorter than the 8-byte"), FormatError);
}

TEST_CASE("input files: text size and line caps, bounded line reads and clipped JSON messages") {
  headlab::testing::TempDir dir;
  const auto path = dir.path / "t.txt";
  std::ofstream(path, std::ios::binary) << "\xEF\xBB\xBF" "abc\r\n" + std::string(10, 'x') + "\nlast";
  CHECK(read_text_file(path.string(), "t", 100) == "abc\r\n" + std::string(10, 'x') + "\nlast");  // the mark dropped
  CHECK_THROWS_WITH_AS(read_text_file(path.string(), "t", 10), doctest::Contains("more than 10 bytes (23 bytes)"),
                       FormatError);
  const std::string text = "abc\r\n" + std::string(10, 'x') + "\nlast";
  check_line_lengths(text, "t.txt", "t", 10);  // 10 bytes is allowed; "\r" is not counted
  CHECK_THROWS_WITH_AS(check_line_lengths(text, "t.txt", "t", 9), doctest::Contains("'t.txt':2: a line of 10 bytes"),
                       FormatError);
  CHECK_THROWS_WITH_AS(check_line_lengths("ab\nabcde", "t.txt", "t", 4), doctest::Contains(":2: a line of 5"), FormatError);
  // UTF-16 of ASCII letters is valid UTF-8 byte by byte: its NUL bytes name it, with the line.
  const std::string utf16 = dir.write("utf16.txt", std::string("a\0b\0\n\0c\0", 8));
  CHECK_THROWS_WITH_AS(read_text_file(utf16, "t"), doctest::Contains("utf16.txt':1: holds a NUL byte"), FormatError);
  const std::string second = dir.write("second.txt", std::string("ab\ncd\0", 6));
  CHECK_THROWS_WITH_AS(read_text_file(second, "t"), doctest::Contains("second.txt':2: holds a NUL byte"), FormatError);

  std::istringstream in("one\n\n" + std::string(7, 'y') + "\nend");
  std::string line;
  bool too_long = true;
  CHECK(read_line_bounded(in, line, 5, too_long));
  CHECK((line == "one" && !too_long));
  CHECK(read_line_bounded(in, line, 5, too_long));
  CHECK((line.empty() && !too_long));  // an empty line is a line
  CHECK(read_line_bounded(in, line, 5, too_long));
  CHECK((too_long && line.size() == 5));  // read no further than the cap
  std::istringstream last("exact\nend");
  CHECK(read_line_bounded(last, line, 5, too_long));
  CHECK((line == "exact" && !too_long));
  CHECK(read_line_bounded(last, line, 5, too_long));
  CHECK((line == "end" && !too_long));  // a final line without '\n'
  CHECK_FALSE(read_line_bounded(last, line, 5, too_long));

  CHECK(json_error_text("[json.exception.out_of_range.406] number overflow parsing '1e999'") ==
        "number overflow parsing '1e999'");
  const std::string long_what = "[json.exception.out_of_range.406] x " + std::string(300, '\xC3') + "\xA9";
  const std::string clipped = json_error_text(long_what, 20);
  CHECK(clipped.find("... (" + std::to_string(long_what.size()) + " bytes)") != std::string::npos);
  CHECK(clipped.size() < 60);
}
}  // namespace test_input_file
