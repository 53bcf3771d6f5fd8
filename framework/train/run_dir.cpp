// run_dir.cpp: the run directory's lock, its refusals and the metrics cut of a resume
// (headlab/train/run_dir.hpp).
#include "headlab/train/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headlab/core/file_writer.hpp"
#include "headlab/core/json_depth.hpp"

namespace headlab {

namespace fs = std::filesystem;

namespace {

// A path as messages show it: quoted, at most about 200 bytes of it.
std::string shown(const fs::path& p) {
  const std::string s = p.string();
  return "'" + (s.size() <= 200 ? s : s.substr(0, 200) + "...") + "'";
}

// The pid written in a lock file, or "" when it cannot be read.
std::string holder_of(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string text = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// Takes DIR/.lock: returns its descriptor, or throws RunDirRefused naming the holder's pid.
// The holder removes the file when it ends, so a process that opened the file just before that
// finds its inode gone after flock() and tries again with the new file.
int take_lock(const fs::path& lock, const RunDirSpec& spec, const fs::path& dir) {
  for (;;) {
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw IOError(spec.command + ": cannot create the lock " + shown(lock) + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string holder = holder_of(fd);
      ::close(fd);
      if (error != EWOULDBLOCK)
        throw IOError(spec.command + ": cannot lock " + shown(lock) + ": " + std::strerror(error));
      throw RunDirRefused(shown(dir) + " is in use by process " +
                          (holder.empty() ? "(unknown pid)" : holder) + " (it holds " + shown(lock) +
                          "); wait for it to end or choose another " + spec.dir_flag);
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && ::stat(lock.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev)
      return fd;
    ::close(fd);  // the previous holder removed this file after we opened it: take the new one
  }
}

void write_holder(int fd, const fs::path& lock, const std::string& command) {
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size()))
    throw IOError(command + ": cannot write the lock " + shown(lock) + ": " + std::strerror(errno));
}

std::string flag_advice(const RunDirSpec& spec) {
  const std::string other = "or choose another " + spec.dir_flag;
  if (spec.can_resume) return "give --resume to continue it or --overwrite to replace it, " + other;
  return "give --overwrite to replace it, " + other;
}

}  // namespace

RunDir::RunDir(fs::path dir, const RunDirSpec& spec) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw IOError(spec.command + ": cannot create " + shown(dir_) + ": " + ec.message());
  const fs::path lock = dir_ / ".lock";
  lock_fd_ = take_lock(lock, spec, dir_);
  try {
    write_holder(lock_fd_, lock, spec.command);

    std::string found;
    for (const std::string& name : spec.markers)
      if (fs::exists(dir_ / name, ec)) found += (found.empty() ? "" : ", ") + name;
    held_run_ = !found.empty();
    if (held_run_ && spec.existing == ExistingRun::refuse)
      throw RunDirRefused(shown(dir_) + " already holds a run (" + found + "); " +
                          flag_advice(spec));
    if (held_run_ && spec.existing == ExistingRun::overwrite) {
      for (const std::string& name : spec.outputs) {
        fs::remove_all(dir_ / name, ec);
        if (ec) throw IOError(spec.command + ": --overwrite: cannot remove " + shown(dir_ / name) + ": " + ec.message());
      }
    }
    // Only once the directory is accepted: a refused command leaves every file as it was.
    remove_stale_temp_files(dir_);
  } catch (...) {
    ::unlink(lock.c_str());  // while still holding it: see take_lock
    ::close(lock_fd_);
    throw;
  }
}

RunDir::~RunDir() {
  ::unlink((dir_ / ".lock").c_str());  // while still holding it: see take_lock
  ::close(lock_fd_);
}

std::string run_dir_holder(const fs::path& dir) {
  // (O_NONBLOCK: a FIFO named .lock must not block the look; O_NOFOLLOW: nor a link lead elsewhere)
  const int fd = ::open((dir / ".lock").c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) return "";
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return "";
  }
  std::string holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
  } else if (errno == EWOULDBLOCK) {
    holder = holder_of(fd);
    if (holder.empty()) holder = "(unknown pid)";
  }
  ::close(fd);
  return holder;
}

RunDirSpec train_run_dir_spec(bool resume, bool overwrite) {
  if (resume && overwrite)
    throw RunDirRefused("--resume continues the run and --overwrite replaces it: give one of them");
  RunDirSpec spec;
  spec.command = "train";
  spec.dir_flag = "--run-dir";
  spec.markers = {"checkpoint.safetensors", "metrics.jsonl", "summary.json"};
  spec.outputs = {"checkpoint.safetensors", "best.safetensors", "metrics.jsonl", "summary.json", "config.ini",
                  "loss.svg", "test.ref.txt", "test.greedy.txt", "test.beam.txt", "showcase.txt",
                  "bpe.source.txt", "bpe.target.txt", "vocab.source.txt", "vocab.target.txt", "checkpoints"};
  spec.can_resume = true;
  spec.existing = resume ? ExistingRun::resume : overwrite ? ExistingRun::overwrite : ExistingRun::refuse;
  return spec;
}

// ---- metrics.jsonl on resume ------------------------------------------------------------------

std::size_t cut_metrics_to_step(const fs::path& file, std::size_t step) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IOError("resume: cannot read " + shown(file) + ": " + std::strerror(errno));
  std::ostringstream all;
  all << in.rdbuf();
  if (in.bad()) throw IOError("resume: error while reading " + shown(file));
  const std::string text = all.str();

  std::string kept;
  std::size_t dropped = 0, line_no = 0;
  for (std::size_t start = 0; start < text.size();) {
    ++line_no;
    const std::size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    const std::string line = text.substr(start, complete ? end - start : std::string::npos);
    start = complete ? end + 1 : text.size();
    const bool last = start >= text.size();
    if (!complete) {  // torn: a kill or a full disk in the middle of the line
      ++dropped;
      continue;
    }
    const std::string where = "resume: " + shown(file) + ":" + std::to_string(line_no) + ": ";
    const nlohmann::json row = nlohmann::json::parse(line, json_depth_limit<nlohmann::json>(where), /*allow_exceptions=*/false);
    const bool has_step = row.is_object() && row.contains("step") && row["step"].is_number();
    if (!has_step) {
      if (last) {  // the end of a torn write
        ++dropped;
        continue;
      }
      throw FormatError("resume: " + shown(file) + ":" + std::to_string(line_no) +
                        ": not a JSON object with a \"step\"; repair or remove the file");
    }
    const double s = row["step"].get<double>();
    if (std::isfinite(s) && s <= static_cast<double>(step)) {
      kept += line;
      kept += '\n';
    } else {
      ++dropped;
    }
  }
  if (dropped > 0) write_file_atomic(file, kept, "resume");
  return dropped;
}

}  // namespace headlab
