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

namespace {
// "256 MiB" for a power-of-two multiple of MiB, "4096 bytes" otherwise.
std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}
std::string shown_path(const std::string& path) { return "'" + (path.size() > 200 ? path.substr(0, 200) + "..." : path) + "'"; }
}  // namespace

std::string read_text_file(const std::string& path, const char* who, std::uint64_t max_bytes) {
  InputFile file(path, who);
  const auto too_big = [&](std::uint64_t bytes) {
    return FormatError(std::string(who) + ": " + shown_path(path) + ": more than " + size_text(max_bytes) + " (" +
                       std::to_string(bytes) + " bytes), the most headlab reads as a text file here");
  };
  if (file.size() > max_bytes) throw too_big(file.size());
  // One byte more than allowed tells a file that grew since its size was read (no wrap at the top).
  std::string text = file.read(max_bytes == ~std::uint64_t{0} ? max_bytes : max_bytes + 1);
  if (text.size() > max_bytes) throw too_big(text.size());
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  // A NUL byte is no text: UTF-16 of ASCII letters (every other byte 0) would pass as UTF-8.
  const std::size_t nul = text.find('\0');
  if (nul != std::string::npos)
    throw FormatError(std::string(who) + ": " + shown_path(path) + ":" +
                      std::to_string(1 + std::count(text.begin(), text.begin() + std::ptrdiff_t(nul), '\n')) +
                      ": holds a NUL byte: not a text file (UTF-16? save it as UTF-8)");
  return text;
}

void check_line_lengths(const std::string& text, const std::string& path, const char* who,
                        std::size_t max_line_bytes) {
  std::size_t start = 0;
  for (std::size_t line = 1; start < text.size(); ++line) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::size_t length = end - start;
    if (length > 0 && text[end - 1] == '\r') --length;
    if (length > max_line_bytes)
      throw FormatError(std::string(who) + ": " + shown_path(path) + ":" + std::to_string(line) + ": a line of " +
                        std::to_string(length) + " bytes, more than the " + size_text(max_line_bytes) +
                        " headlab reads as one line here");
    start = end + 1;
  }
}

}  // namespace headlab
