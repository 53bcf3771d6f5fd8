// safetensors: checkpoints on disk. Round trips must be bit-exact, every kind
// of corrupt file must be rejected with FormatError naming the file and the
// problem (never a crash or an out-of-bounds read: the suite also runs under
// ASan), and a failed save must leave the previous file intact.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "headlab/data/safetensors.hpp"
#include "test_support.hpp"

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::TempDir;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file made by hand: 8-byte little-endian length, header text, data bytes.
std::string raw_file(const std::string& header, const std::string& data, std::uint64_t length) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return out + header + data;
}
std::string raw_file(const std::string& header, const std::string& data = std::string(24, '\0')) {
  return raw_file(header, data, header.size());
}

// A small valid file: "w" F32 [2, 3] (24 bytes) then "ids" I64 [2] (16 bytes).
TensorFile small_file() {
  TensorFile f;
  Array<float> w = {{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}};
  IndexArray ids = {7, -8};
  f.add("w", w);
  f.add("ids", ids);
  f.metadata["step"] = "12";
  return f;
}

template <typename E>
void check_error(const std::function<void()>& call, const std::vector<std::string>& must_mention) {
  bool thrown = false;
  try {
    call();
  } catch (const E& e) {
    thrown = true;
    const std::string msg = e.what();
    for (const auto& s : must_mention)
      CHECK_MESSAGE(msg.find(s) != std::string::npos, "message '" << msg << "' lacks '" << s << "'");
  } catch (const std::exception& e) {
    thrown = true;
    FAIL_CHECK("wrong exception type: " << std::string(e.what()));
  }
  CHECK_MESSAGE(thrown, "no exception");
}

// Writes `bytes` to a file and checks that loading it throws FormatError
// whose message names the file and contains every `reason` fragment.
void check_corrupt(const std::string& bytes, const std::vector<std::string>& reason) {
  TempDir dir;
  const std::string path = dir.file("corrupt.safetensors");
  write_bytes(path, bytes);
  std::vector<std::string> must = reason;
  must.push_back("load_safetensors");
  must.push_back(path);
  check_error<FormatError>([&] { load_safetensors(path); }, must);
}

// The bytes of an entry as a string, for bit-exact comparisons (NaN != NaN).
std::string bytes_of(const TensorEntry& e) { return std::string(e.bytes.begin(), e.bytes.end()); }
template <typename A>
std::string bytes_of(const A& a) {
  return std::string(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(typename A::value_type));
}

}  // namespace

// ---- Round trips ----------------------------------------------------------

TEST_CASE("safetensors: round trip of float, double and int64 tensors and metadata is bit-exact") {
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  const float finf = std::numeric_limits<float>::infinity();
  const float fden = std::numeric_limits<float>::denorm_min();
  Array<float> w = {{-0.0f, fnan, finf}, {fden, 1e-38f, 3.14159265f}};
  Array<double> b = {0.1, -std::numeric_limits<double>::infinity(), std::nan("0x123"), 1e308};
  IndexArray ids = {{std::numeric_limits<std::int64_t>::min(), -1}, {0, std::numeric_limits<std::int64_t>::max()}};
  Array<double> scalar = Array<double>::from_shape({});
  scalar() = 2.5;
  Array<float> empty = Array<float>::from_shape({0, 4});

  TensorFile f;
  f.add("layer.weight", w);
  f.add("layer.bias", b);
  f.add("ids", ids);
  f.add("scale", scalar);
  f.add("empty", empty);
  f.metadata["step"] = "100";
  f.metadata["note"] = "ünïcode ✓, \"quotes\" and \\ backslash";

  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  save_safetensors(path, f);

  // The layout: length N, a header padded so the data starts 8-byte aligned, the data.
  const std::string raw = read_bytes(path);
  REQUIRE(raw.size() >= 8);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[i])) << (8 * i);
  CHECK((8 + n) % 8 == 0);
  CHECK(raw.size() == 8 + n + (6 * 4 + 4 * 8 + 4 * 8 + 8 + 0));
  CHECK(raw[8] == '{');

  const TensorFile g = load_safetensors(path);
  CHECK(g.source == path);
  CHECK(g.metadata == f.metadata);
  REQUIRE(g.size() == f.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    CAPTURE(f.entries()[i].name);
    CHECK(g.entries()[i].name == f.entries()[i].name);  // buffer order == order added
    CHECK(g.entries()[i].dtype == f.entries()[i].dtype);
    CHECK(g.entries()[i].shape == f.entries()[i].shape);
    CHECK(bytes_of(g.entries()[i]) == bytes_of(f.entries()[i]));
  }
  CHECK(bytes_of(g.get<float>("layer.weight", {2, 3})) == bytes_of(w));
  CHECK(bytes_of(g.get<double>("layer.bias", {4})) == bytes_of(b));
  CHECK(bytes_of(g.get<std::int64_t>("ids", {2, 2})) == bytes_of(ids));
  CHECK(g.get<double>("scale", {})() == 2.5);
  CHECK(g.get<float>("empty", {0, 4}).size() == 0);
  CHECK(std::signbit(g.get<float>("layer.weight")(0, 0)));  // -0.0 stays negative
  CHECK(dir.listing() == std::vector<std::string>{"ckpt.safetensors"});  // no temp file left

  // Saving again over the same path replaces the file.
  TensorFile h;
  h.add("only", ids);
  save_safetensors(path, h);
  const TensorFile k = load_safetensors(path);
  CHECK(k.size() == 1);
  CHECK(k.metadata.empty());
  CHECK(bytes_of(k.get<std::int64_t>("only")) == bytes_of(ids));
}

TEST_CASE("safetensors: an empty file (no tensors, no metadata) round trips") {
  TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  save_safetensors(path, TensorFile{});
  CHECK(read_bytes(path).size() == 16);  // "{}" padded to 8 bytes
  const TensorFile g = load_safetensors(path);
  CHECK(g.size() == 0);
  CHECK(g.metadata.empty());
}

TEST_CASE("safetensors: typed getters name the tensor, the expected and the found shape and dtype") {
  TensorFile f = small_file();
  f.source = "model.safetensors";
  check_error<ShapeError>([&] { f.get<float>("w", {3, 2}); }, {"model.safetensors", "'w'", "[2, 3]", "[3, 2]"});
  check_error<ValueError>([&] { f.get<double>("w"); }, {"'w'", "F32", "F64"});
  check_error<ValueError>([&] { f.get<double>("w", {2, 3}); }, {"'w'", "F32", "F64"});
  check_error<ValueError>([&] { f.get<float>("nope"); }, {"'nope'", "w, ids"});
  CHECK(f.contains("ids"));
  CHECK_FALSE(f.contains("nope"));
}

TEST_CASE("safetensors: add rejects empty, reserved and duplicate names and wrong byte counts") {
  TensorFile f = small_file();
  Array<float> x = {1.f};
  check_error<ValueError>([&] { f.add("w", x); }, {"'w'", "already"});
  check_error<ValueError>([&] { f.add("", x); }, {"empty"});
  check_error<ValueError>([&] { f.add("__metadata__", x); }, {"reserved"});
  TensorEntry e;
  e.name = "raw";
  e.dtype = DType::F64;
  e.shape = {3};
  e.bytes.resize(20);
  check_error<ValueError>([&] { f.add_entry(e); }, {"'raw'", "24 bytes", "20"});
  CHECK(f.size() == 2);
}

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

// ---- Atomic save ----------------------------------------------------------

TEST_CASE("safetensors: a failed save leaves the previous file intact and no temp file behind") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  const TensorFile a = small_file();
  save_safetensors(path, a);
  const std::string a_bytes = read_bytes(path);

  TensorFile b;
  Array<double> big = Array<double>::from_shape({64, 64});
  for (std::size_t i = 0; i < big.size(); ++i) big.data()[i] = static_cast<double>(i);
  b.add("big", big);
  const std::size_t b_size = serialize_safetensors(b).size();

  for (std::size_t cut : {std::size_t(0), std::size_t(5), b_size / 2, b_size - 1}) {
    CAPTURE(cut);
    SaveOptions crash;
    crash.simulate_failure_after_bytes = cut;
    check_error<IOError>([&] { save_safetensors(path, b, crash); },
                         {"save_safetensors", path, "simulated failure after " + std::to_string(cut)});
    CHECK(read_bytes(path) == a_bytes);  // byte for byte the old file
    CHECK(dir.listing() == std::vector<std::string>{"ckpt.safetensors"});
    const TensorFile loaded = load_safetensors(path);
    CHECK(bytes_of(loaded.get<float>("w", {2, 3})) == bytes_of(a.get<float>("w")));
    CHECK(loaded.metadata.at("step") == "12");
  }

  // A limit at or past the end is no failure: the save goes through.
  SaveOptions no_crash;
  no_crash.simulate_failure_after_bytes = b_size;
  save_safetensors(path, b, no_crash);
  CHECK(load_safetensors(path).contains("big"));
  CHECK(dir.listing() == std::vector<std::string>{"ckpt.safetensors"});
}

TEST_CASE("safetensors: I/O failures throw IOError naming the path") {
  TempDir dir;
  // Loading a file that is not there is an IOError but not a FormatError.
  const std::string missing = dir.file("missing.safetensors");
  bool format_error = false;
  try {
    load_safetensors(missing);
  } catch (const FormatError&) {
    format_error = true;
  } catch (const IOError& e) {
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
    CHECK(std::string(e.what()).find("cannot open") != std::string::npos);
  }
  CHECK_FALSE(format_error);
  check_error<IOError>([&] { load_safetensors(dir.path.string()); }, {"not a regular file"});

  // Saving into a directory that does not exist.
  const std::string nowhere = dir.file("no/such/dir/ckpt.safetensors");
  check_error<IOError>([&] { save_safetensors(nowhere, small_file()); }, {nowhere, "cannot create temporary file"});
  // Saving over a directory: refused before anything is written (write_file_atomic replaces
  // regular files only), no temporary file left.
  fs::create_directories(dir.path / "taken");
  const std::string taken = dir.file("taken");
  check_error<IOError>([&] { save_safetensors(taken, small_file()); }, {taken, "exists and is a directory"});
  CHECK(dir.listing() == std::vector<std::string>{"taken"});
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
