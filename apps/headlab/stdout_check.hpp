// stdout_check.hpp: the last thing every command does. A command that printed its results to a
// full disk (`> /dev/full`), a closed stdout or a pipe whose reader went away has lost them; it
// must say so and fail, not exit 0 with a truncated file.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace headlab::cli {

// Flushes std::cout and C's stdout; returns `status`, or 1 after "headlab: error: writing to stdout
// failed: REASON" on stderr when any output was lost (a failed status is kept as it is).
inline int stdout_checked(int status) {
  errno = 0;
  std::cout.flush();
  const bool cout_ok = static_cast<bool>(std::cout);
  const bool c_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (cout_ok && c_ok) return status;
  const std::string reason = errno != 0 ? std::strerror(errno) : "the stream is in a failed state";
  std::cerr << "headlab: error: writing to stdout failed: " << reason << " (the output is incomplete)\n";
  return status == 0 ? 1 : status;
}

}  // namespace headlab::cli
