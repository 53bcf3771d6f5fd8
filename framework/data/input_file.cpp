// input_file.cpp: reading a file only once it is known to be a regular file (headlab/data/input_file.hpp).
#include "headlab/data/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "headlab/core/errors.hpp"

namespace headlab {

namespace {
// What a stat says a path is, for the message: "a FIFO", "a directory", ...
const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}
}  // namespace

void InputFile::fail(const std::string& why) const {
  std::string shown = path_.size() > 200 ? path_.substr(0, 200) + "..." : path_;
  throw IOError(std::string(who_) + ": '" + shown + "': " + why);
}

InputFile::InputFile(const std::string& path, const char* who) : path_(path), who_(who) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(std::string("cannot open: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(std::string("not a regular file (") + kind_of(st.st_mode) + ")");
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) fail(std::string("cannot open: ") + std::strerror(errno));
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    fail("not a regular file (it changed after it was checked)");
  }
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint64_t InputFile::read_into(char* buffer, std::uint64_t n) {
  std::uint64_t done = 0;
  while (done < n) {
    const std::uint64_t want = std::min<std::uint64_t>(std::uint64_t(1) << 30, n - done);
    const ssize_t got = ::read(fd_, buffer + done, static_cast<std::size_t>(want));
    if (got == 0) break;  // end of file
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(std::string("read failed: ") + std::strerror(errno));
    }
    done += static_cast<std::uint64_t>(got);
  }
  return done;
}

std::string InputFile::read(std::uint64_t n) {
  std::string bytes;
  char chunk[1 << 16];
  while (bytes.size() < n) {
    const std::uint64_t got = read_into(chunk, std::min<std::uint64_t>(sizeof chunk, n - bytes.size()));
    if (got == 0) break;  // end of file
    bytes.append(chunk, static_cast<std::size_t>(got));
  }
  return bytes;
}

std::string InputFile::read_rest() {
  std::string bytes;
  bytes.reserve(static_cast<std::size_t>(size_));  // a hint: the file may have grown
  for (;;) {
    std::string more = read(1 << 20);
    if (more.empty()) return bytes;
    bytes += more;
  }
}

std::string read_regular_file(const std::string& path, const char* who) {
  InputFile file(path, who);
  return file.read_rest();
}

std::string read_text_file(const std::string& path, const char* who) {
  std::string text = read_regular_file(path, who);
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  return text;
}

}  // namespace headlab
