// core/sha256.hpp: SHA-256 (FIPS 180-4) of bytes and of files, as 64 lowercase hex digits.
// Used where a record must say exactly which file it read (`headlab course grade` names the test
// binary it ran and the student's diff by their hashes).
#pragma once

#include <string>

namespace headlab {

std::string sha256_hex(const std::string& bytes);

// The hash of a regular file's contents; IOError when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace headlab
