// checkpoint_name.hpp: the name a picture's title gives a checkpoint.
#pragma once

#include <filesystem>
#include <string>

namespace headlab::cli {

// Its run directory's name ("copy-run"), or the file's name when it has no directory; never the
// whole path (a reader's home directory).
inline std::string checkpoint_name(const std::string& checkpoint) {
  const std::filesystem::path path(checkpoint);
  const std::filesystem::path dir = std::filesystem::absolute(path).parent_path().filename();
  return dir.empty() ? path.filename().string() : dir.string();
}

}  // namespace headlab::cli
