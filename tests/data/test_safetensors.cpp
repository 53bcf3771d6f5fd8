// safetensors: checkpoints on disk. Round trips must be bit-exact, and a failed save must leave
// the previous file intact; every kind of corrupt file is in test_safetensors_corrupt.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "headlab/data/safetensors.hpp"
#include "safetensors_test_files.hpp"
#include "test_support.hpp"

namespace test_safetensors {

using namespace headlab;
namespace fs = std::filesystem;
using headlab::testing::check_error;
using headlab::testing::small_file;
using headlab::testing::TempDir;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
}  // namespace test_safetensors
