// SHA-256 against FIPS 180-4's examples and Python's hashlib at the padding boundaries
// (55, 56, 64 and 119 bytes: one block, the length spilling into a second, exactly one block, two).
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/core/sha256.hpp"

namespace test_sha256 {

using namespace headlab;

TEST_CASE("sha256: the FIPS 180-4 examples") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256: lengths at the block and padding boundaries (hashlib's digests)") {
  CHECK(sha256_hex(std::string(55, 'a')) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(sha256_hex(std::string(56, 'a')) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(sha256_hex(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  CHECK(sha256_hex(std::string(119, 'a')) == "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
}

TEST_CASE("sha256: of a file, and an IOError for one that cannot be read") {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "headlab_sha256_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string("ab\0c", 4);
  }
  CHECK(sha256_file_hex(path.string()) == sha256_hex(std::string("ab\0c", 4)));
  std::filesystem::remove(path);
  CHECK_THROWS_AS(sha256_file_hex(path.string()), IOError);
}
}  // namespace test_sha256
