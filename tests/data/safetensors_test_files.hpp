// safetensors_test_files.hpp: helpers of the safetensors tests (test_safetensors.cpp,
// test_safetensors_corrupt.cpp): files made by hand, a small valid file, and checks of the error
// a call throws.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "headlab/data/safetensors.hpp"
#include "test_support.hpp"

namespace headlab::testing {

// A file made by hand: 8-byte little-endian length, header text, data bytes.
inline std::string raw_file(const std::string& header, const std::string& data, std::uint64_t length) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return out + header + data;
}
inline std::string raw_file(const std::string& header, const std::string& data = std::string(24, '\0')) {
  return raw_file(header, data, header.size());
}

// A small valid file: "w" F32 [2, 3] (24 bytes) then "ids" I64 [2] (16 bytes).
inline TensorFile small_file() {
  TensorFile f;
  Array<float> w = {{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}};
  IndexArray ids = {7, -8};
  f.add("w", w);
  f.add("ids", ids);
  f.metadata["step"] = "12";
  return f;
}

// Checks that `call` throws an E whose message contains every `must_mention` fragment.
template <typename E>
inline void check_error(const std::function<void()>& call, const std::vector<std::string>& must_mention) {
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
inline void check_corrupt(const std::string& bytes, const std::vector<std::string>& reason) {
  TempDir dir;
  const std::string path = dir.write("corrupt.safetensors", bytes);
  std::vector<std::string> must = reason;
  must.push_back("load_safetensors");
  must.push_back(path);
  check_error<FormatError>([&] { load_safetensors(path); }, must);
}

}  // namespace headlab::testing
