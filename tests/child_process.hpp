// child_process.hpp: a forked child process with a pipe back to the test, for what a test cannot
// do in its own process (hold a lock while it is killed, live under a file-size limit).
#pragma once

#include <doctest/doctest.h>

#include <sys/types.h>
#include <unistd.h>

#include <functional>

namespace headlab::testing {

struct Child {
  pid_t pid;       // of the child
  int from_child;  // the read end of the pipe; the test closes it
};

// Forks: the child runs `body` with the pipe's write end and exits (_exit(0)) when it returns.
inline Child fork_child(const std::function<void(int to_parent)>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    body(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

}  // namespace headlab::testing
