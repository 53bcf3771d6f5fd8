// file_writer.cpp: checked, atomic and append-only file writes (headlab/core/file_writer.hpp).
#include "headlab/core/file_writer.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "headlab/core/errors.hpp"
#include "headlab/core/user_input.hpp"

namespace headlab {

namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }
std::string os_reason() { return std::strerror(errno); }

[[noreturn]] void throw_io(const std::string& who, const fs::path& path, const std::string& reason) {
  throw IOError(who + ": " + quoted(path) + ": " + reason);
}

// Writes all of `bytes` to fd (write() may write less than asked, or be interrupted: loop).
// Returns "" or the reason it failed.
std::string write_all(int fd, const char* data, std::size_t size, const fs::path& shown) {
  std::size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, data + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "writing " + quoted(shown) + " failed: " + (n < 0 ? os_reason() : "no progress");
    written += static_cast<std::size_t>(n);
  }
  return "";
}

// Makes a finished rename durable: the directory entry itself must reach the disk. Best effort:
// some file systems cannot fsync a directory, and by now the new file is in place.
void sync_directory_of(const fs::path& path) {
  fs::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// The PID of a name "X.tmp.PID", or 0 when the name does not end that way.
pid_t temp_file_pid(const std::string& name) {
  const std::size_t at = name.rfind(".tmp.");
  if (at == std::string::npos || at == 0) return 0;
  const std::string digits = name.substr(at + 5);
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
    return 0;
  return static_cast<pid_t>(std::stol(digits));
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// What an existing `path` is, when it is something a rename would destroy rather than replace:
// "" for a regular file or a missing path, else "a directory", "a device", ...
std::string not_a_regular_file(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";  // missing (or unreadable: open() will say)
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISLNK(st.st_mode)) return "a symbolic link (it would be replaced, not followed; give the target's path)";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void check_output_file(const fs::path& path, const std::vector<fs::path>& inputs, const std::string& flag) {
  if (path.empty()) return;
  const std::string kind = not_a_regular_file(path);
  if (!kind.empty())
    throw ValueError(flag + ": " + quoted(path) + " exists and is " + kind + "; headlab only replaces regular files");
  for (const fs::path& input : inputs) {
    std::error_code ec;
    if (!input.empty() && fs::equivalent(path, input, ec))
      throw ValueError(flag + ": " + quoted(path) + " is also an input (" + quoted(input) +
                       "); writing it would destroy what is being read");
  }
}

void check_replaces_only_own(const fs::path& path, const std::function<bool(std::string_view)>& is_own,
                             const std::string& flag, const std::string& what, const std::vector<fs::path>& inputs) {
  check_output_file(path, inputs, flag);
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) return;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError(flag + ": cannot read " + quoted(path) + ": " + std::strerror(errno));
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.empty() || is_own(head)) return;
  throw ValueError(flag + ": " + quoted(path) + " exists and is not " + what + "; remove it or name another file");
}

void check_output_location(const fs::path& path, const std::string& flag, bool made_with_parents) {
  if (path.empty()) throw ValueError(flag + ": an empty path; give a file or directory name");
  // The folder the output goes into: its parent, or (folders made with their parents) the nearest
  // one that exists.
  fs::path folder = path.parent_path();
  std::error_code ec;
  if (made_with_parents)
    while (!folder.empty() && !fs::exists(folder, ec) && folder != folder.parent_path()) folder = folder.parent_path();
  if (folder.empty()) return;  // the current directory
  if (!fs::exists(folder, ec))
    throw ValueError(flag + ": " + quote_clipped(path.string()) + ": the folder " + quote_clipped(folder.string()) +
                     " does not exist");
  if (!fs::is_directory(folder, ec))
    throw ValueError(flag + ": " + quote_clipped(path.string()) + ": " + quote_clipped(folder.string()) +
                     " is not a directory");
}

fs::path temp_path_for(const fs::path& path) { return path.string() + ".tmp." + std::to_string(::getpid()); }

void write_file_atomic(const fs::path& path, std::string_view bytes, const std::string& who,
                       std::size_t simulate_failure_after_bytes) {
  write_file_atomic(path, std::vector<std::string_view>{bytes}, who, simulate_failure_after_bytes);
}

void write_file_atomic(const fs::path& path, const std::vector<std::string_view>& pieces, const std::string& who,
                       std::size_t simulate_failure_after_bytes) {
  // A rename would put a regular file in place of a device, FIFO, socket or link (as root even
  // /dev/null): refuse before anything is written.
  const std::string kind = not_a_regular_file(path);
  if (!kind.empty()) throw_io(who, path, "exists and is " + kind + "; headlab only replaces regular files");
  // The pid makes the name unique between processes: two writers of one path never share it.
  const fs::path tmp = temp_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_io(who, path, "cannot create temporary file " + quoted(tmp) + ": " + os_reason());

  std::size_t total = 0, written = 0;
  for (std::string_view piece : pieces) total += piece.size();
  std::string reason;
  for (std::string_view piece : pieces) {
    if (!reason.empty() || written >= simulate_failure_after_bytes) break;
    const std::size_t count = std::min(piece.size(), simulate_failure_after_bytes - written);
    reason = write_all(fd, piece.data(), count, tmp);
    written += count;
  }
  if (reason.empty() && written < total)
    reason = "simulated failure after " + std::to_string(written) + " of " + std::to_string(total) +
             " bytes (test hook)";
  // fsync before rename: otherwise a power cut could leave the new name on a file whose data
  // never reached the disk.
  if (reason.empty() && ::fsync(fd) != 0) reason = "fsync of " + quoted(tmp) + " failed: " + os_reason();
  if (::close(fd) != 0 && reason.empty()) reason = "closing " + quoted(tmp) + " failed: " + os_reason();
  if (reason.empty() && ::rename(tmp.c_str(), path.c_str()) != 0)
    reason = "renaming " + quoted(tmp) + " over it failed: " + os_reason();
  if (!reason.empty()) {
    ::unlink(tmp.c_str());  // the old file at `path` was never touched
    throw_io(who, path, reason);
  }
  sync_directory_of(path);
}

// ---- AppendFile ----------------------------------------------------------------------------------

AppendFile::AppendFile(fs::path path, std::string who) : path_(std::move(path)), who_(std::move(who)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_io(who_, path_, "cannot open for appending: " + os_reason());
}

AppendFile::AppendFile(AppendFile&& other) noexcept
    : path_(std::move(other.path_)), who_(std::move(other.who_)), fd_(other.fd_) {
  other.fd_ = -1;
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::write(std::string_view bytes) {
  struct stat before {};
  const bool known = ::fstat(fd_, &before) == 0;
  const std::string reason = write_all(fd_, bytes.data(), bytes.size(), path_);
  if (reason.empty()) return;
  // Cut off what part of the record did reach the file: the file keeps whole records only.
  if (known) (void)::ftruncate(fd_, before.st_size);
  throw_io(who_, path_, reason);
}

void AppendFile::sync() {
  if (::fsync(fd_) != 0) throw_io(who_, path_, "fsync failed: " + os_reason());
}

// ---- Stale temporary files ------------------------------------------------------------------------

std::size_t remove_stale_temp_files(const fs::path& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  std::size_t removed = 0;
  for (; !ec && it != end; it.increment(ec)) {
    const pid_t pid = temp_file_pid(it->path().filename().string());
    if (pid <= 0 || process_alive(pid)) continue;
    std::error_code kind;
    if (!it->is_regular_file(kind)) continue;
    if (fs::remove(it->path(), kind)) ++removed;
  }
  return removed;
}

}  // namespace headlab
