// safetensors: every kind of corrupt file is rejected with FormatError naming the file and the
// problem, never a crash or an out-of-bounds read (the suite also runs under ASan); the in-memory
// parser (the fuzzing entry point) never throws on damaged input.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>

#include "headlab/data/safetensors.hpp"
#include "safetensors_test_files.hpp"
#include "test_support.hpp"

namespace test_safetensors_corrupt {

using namespace headlab;
using headlab::testing::check_corrupt;
using headlab::testing::raw_file;
using headlab::testing::small_file;

// ---- Corrupt files: one test per kind of damage ---------------------------

TEST_CASE("safetensors: a file shorter than 8 bytes is rejected") {
  check_corrupt("", {"0 bytes", "shorter than the 8-byte header length"});
  check_corrupt(std::string("\x10\x00\x00", 3), {"3 bytes", "shorter than the 8-byte header length"});
}

TEST_CASE("safetensors: a header length beyond the end of the file is rejected") {
  const std::string good = serialize_safetensors(small_file());
  check_corrupt(raw_file("{}", "", 1000), {"header length 1000", "beyond the end of the file"});
  // A save cut off in the middle of its header.
  check_corrupt(good.substr(0, 20), {"beyond the end of the file", "12 bytes follow"});
}

TEST_CASE("safetensors: a file truncated inside its data buffer is rejected") {
  const std::string good = serialize_safetensors(small_file());
  check_corrupt(good.substr(0, good.size() - 5), {"'ids'", "beyond the data buffer (35 bytes)"});
}

TEST_CASE("safetensors: a huge header length is rejected before anything is allocated") {
  check_corrupt(raw_file("{}", "", std::uint64_t(1) << 62), {"exceeds the limit of 100000000 bytes"});
  check_corrupt(raw_file("{}", "", std::numeric_limits<std::uint64_t>::max()), {"exceeds the limit"});
}

TEST_CASE("safetensors: a header that is not JSON is rejected") {
  check_corrupt(raw_file("{\"w\": {\"dtype\": \"F32\",", ""), {"header is not valid JSON"});
  check_corrupt(raw_file("not json at all!", ""), {"header is not valid JSON"});
  check_corrupt(raw_file(std::string("{\"a\xff\": 1}"), ""), {"header is not valid JSON"});  // bad UTF-8
}

TEST_CASE("safetensors: a header that is JSON but not an object is rejected") {
  check_corrupt(raw_file("[1, 2, 3]", ""), {"header is a JSON array, not an object"});
  check_corrupt(raw_file("{\"w\": 5}", ""), {"'w'", "entry is a JSON number, not an object"});
}

TEST_CASE("safetensors: data_offsets beyond the data buffer are rejected") {
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 99]}})"),
                {"'w'", "data_offsets [0, 99]", "beyond the data buffer (24 bytes)"});
  // An offset near 2^64 must not wrap around in a bounds check.
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [18446744073709551615, 18446744073709551615]}})"),
                {"'w'", "beyond the data buffer"});
}

TEST_CASE("safetensors: data_offsets that end before they begin are rejected") {
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "shape": [0], "data_offsets": [8, 4]}})"),
                {"'w'", "data_offsets [8, 4] end before they begin"});
}

TEST_CASE("safetensors: overlapping tensors are rejected") {
  check_corrupt(raw_file(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                         R"( "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})"),
                {"'a' [0, 16]", "'b' [8, 24]", "overlap"});
}

TEST_CASE("safetensors: data bytes not covered by any tensor are rejected") {
  // A gap between two tensors.
  check_corrupt(raw_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                         R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}})"),
                {"data bytes [8, 16]", "not covered by any tensor"});
  // Bytes left over after the last tensor.
  check_corrupt(raw_file(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})"),
                {"data bytes [16, 24]", "not covered by any tensor"});
}

TEST_CASE("safetensors: an unknown dtype string is rejected") {
  check_corrupt(raw_file(R"({"w": {"dtype": "F17", "shape": [6], "data_offsets": [0, 24]}})"),
                {"'w'", "unsupported dtype 'F17'"});
  check_corrupt(raw_file(R"({"w": {"dtype": "BF16", "shape": [12], "data_offsets": [0, 24]}})"),
                {"'w'", "unsupported dtype 'BF16'", "F32, F64, I64"});
}

TEST_CASE("safetensors: a byte count that does not match shape and dtype is rejected") {
  check_corrupt(raw_file(R"({"w": {"dtype": "F64", "shape": [2, 3], "data_offsets": [0, 24]}})"),
                {"'w'", "shape [2, 3] with dtype F64 needs 48 bytes", "data_offsets [0, 24] span 24"});
  // A shape whose element count overflows 64 bits.
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 0], "data_offsets": [0, 0]},)"
                         R"( "x": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]}})"),
                {"'w'", "too many elements"});
}

TEST_CASE("safetensors: an entry missing dtype, shape or data_offsets is rejected") {
  check_corrupt(raw_file(R"({"w": {"shape": [6], "data_offsets": [0, 24]}})"), {"'w'", "missing field \"dtype\""});
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "data_offsets": [0, 24]}})"), {"'w'", "missing field \"shape\""});
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "shape": [6]}})"), {"'w'", "missing field \"data_offsets\""});
}

TEST_CASE("safetensors: fields of the wrong JSON type are rejected") {
  struct Case {
    std::string header;
    std::vector<std::string> reason;
  };
  const std::vector<Case> cases = {
      {R"({"w": {"dtype": 32, "shape": [6], "data_offsets": [0, 24]}})", {"\"dtype\" is a JSON number"}},
      {R"({"w": {"dtype": "F32", "shape": "6", "data_offsets": [0, 24]}})", {"\"shape\" is a JSON string"}},
      {R"({"w": {"dtype": "F32", "shape": [-6], "data_offsets": [0, 24]}})", {"not a non-negative integer"}},
      {R"({"w": {"dtype": "F32", "shape": [6.0], "data_offsets": [0, 24]}})", {"not a non-negative integer"}},
      {R"({"w": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24, 48]}})", {"not an array of two"}},
      {R"({"w": {"dtype": "F32", "shape": [6], "data_offsets": [0, "24"]}})", {"not an array of two"}},
      {R"({"w": {"dtype": "F32", "shape": [6], "data_offsets": {"begin": 0}}})", {"not an array of two"}},
      {R"({"w": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24], "extra": 1}})", {"unknown field \"extra\""}},
      {R"({"__metadata__": [1], "w": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]}})",
       {"\"__metadata__\" is a JSON array"}},
      {R"({"__metadata__": {"step": 5}, "w": {"dtype": "F32", "shape": [6], "data_offsets": [0, 24]}})",
       {"\"__metadata__\" value for 'step' is a JSON number"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.header);
    check_corrupt(raw_file(c.header), c.reason);
  }
}

TEST_CASE("safetensors: duplicate tensor names and duplicate keys are rejected") {
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},)"
                         R"( "w": {"dtype": "F32", "shape": [3], "data_offsets": [12, 24]}})"),
                {"duplicate tensor name 'w'"});
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "dtype": "F64", "shape": [6], "data_offsets": [0, 24]}})"),
                {"duplicate key 'dtype'"});
}

TEST_CASE("safetensors: deeply nested JSON is rejected cheaply") {
  check_corrupt(raw_file(std::string(100000, '[') + std::string(100000, ']'), ""), {"nested deeper"});
  check_corrupt(raw_file(R"({"w": {"dtype": "F32", "shape": [[6]], "data_offsets": [0, 24]}})"), {"nested deeper"});
}

TEST_CASE("safetensors: files from other writers: padding, key order, empty tensors") {
  // Trailing spaces (padding), tensors listed out of buffer order, an empty
  // tensor at offset 0 before a non-empty one: all valid.
  const std::string header =
      R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}, "__metadata__": {"format": "pt"},)"
      R"( "e": {"dtype": "I64", "shape": [0, 3], "data_offsets": [0, 0]},)"
      R"( "a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}     )";
  std::string data(24, '\0');
  const double a[2] = {1.5, -2.0};
  const float b[2] = {3.f, 4.f};
  std::memcpy(&data[0], a, 16);
  std::memcpy(&data[16], b, 8);
  TensorFile out;
  std::string error;
  REQUIRE_MESSAGE(parse_safetensors_bytes(raw_file(header, data), out, error), error);
  REQUIRE(out.size() == 3);
  CHECK(out.entries()[0].name == "e");  // buffer order
  CHECK(out.entries()[1].name == "a");
  CHECK(out.entries()[2].name == "b");
  CHECK(out.get<double>("a", {2})(1) == -2.0);
  CHECK(out.get<float>("b", {2})(0) == 3.f);
  CHECK(out.get<std::int64_t>("e", {0, 3}).size() == 0);
  CHECK(out.metadata.at("format") == "pt");
}

// ---- The in-memory parser (fuzzing entry point) ---------------------------

TEST_CASE("safetensors: parse_safetensors_bytes never throws on damaged input") {
  const std::string good = serialize_safetensors(small_file());
  TensorFile out;
  std::string error;
  REQUIRE(parse_safetensors_bytes(good, out, error));
  CHECK(out.size() == 2);

  // Every prefix is either rejected or (the full file) accepted.
  for (std::size_t len = 0; len < good.size(); ++len) {
    CAPTURE(len);
    std::string err;
    CHECK_FALSE(parse_safetensors_bytes(good.substr(0, len), out, err));
    CHECK_FALSE(err.empty());
  }
  // Flipping bits of any one byte must not crash: the parser either rejects
  // the file with a reason or accepts it (a flip in the data buffer only
  // changes a value; one in a name may give another valid name).
  const std::size_t data_start = good.size() - 40;
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (unsigned char mask : {0x01, 0x20, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(static_cast<unsigned char>(bad[i]) ^ mask);
      std::string err;
      const bool ok = parse_safetensors_bytes(bad, out, err);
      if (i >= data_start) CHECK(ok);
      CHECK(ok == err.empty());
    }
  }
}
}  // namespace test_safetensors_corrupt
