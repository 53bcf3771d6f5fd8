// headlab/core/file_writer.hpp: every file headlab writes goes through here, and every write is
// checked, so that a full disk or a kill never leaves a half-written file behind a "wrote" message.
//
//   write_file_atomic(path, bytes, who)  the whole file at once: PATH.tmp.PID is written, fsynced,
//                                        closed and renamed over PATH, then the directory is fsynced.
//                                        A reader sees the old file or the new one, never a mix.
//   write_file_atomic(path, pieces, who) the same, the file being the pieces one after another (a
//                                        checkpoint: its header, then each tensor's own bytes, with
//                                        no copy of the whole file in memory)
//   AppendFile                           a file that grows (metrics.jsonl): each write is all or
//                                        nothing, sync() makes what was written durable (fsync)
//   remove_stale_temp_files(dir)         removes the PATH.tmp.PID files of processes that no longer
//                                        live (a kill -9 during a write leaves one)
//
// Errors: IOError "WHO: 'PATH': REASON", REASON ending in the OS's words (strerror):
//   "heads: 'out/heads.csv': writing 'out/heads.csv.tmp.4242' failed: File too large"
// After a failed write_file_atomic the old PATH is untouched and the temporary file is gone.
// A PATH that exists and is not a regular file (a directory, device, FIFO, socket or symbolic link)
// is refused before anything is written: "explore: '/dev/null': exists and is a device; ...".
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace headlab {

// Test hook of write_file_atomic: write only this many bytes, then fail as a full disk would.
constexpr std::size_t kNoSimulatedFailure = std::numeric_limits<std::size_t>::max();

// Replaces `path` by `bytes` atomically and durably (see above). `who` names the caller in errors
// ("save_safetensors", "heads"). One process must not write the same path from two threads at once
// (they would share PATH.tmp.PID).
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, const std::string& who,
                       std::size_t simulate_failure_after_bytes = kNoSimulatedFailure);
void write_file_atomic(const std::filesystem::path& path, const std::vector<std::string_view>& pieces,
                       const std::string& who, std::size_t simulate_failure_after_bytes = kNoSimulatedFailure);

// A file opened for appending (created if missing, never truncated). write() appends all of its
// bytes or throws IOError; a failed write is cut off again where it can be, so the file never ends
// in half a record. Data reaches the page cache at once (a killed process keeps it); sync() fsyncs
// it to the disk (a power cut keeps it).
class AppendFile {
 public:
  AppendFile(std::filesystem::path path, std::string who);  // IOError if it cannot be opened
  ~AppendFile();
  AppendFile(AppendFile&& other) noexcept;
  AppendFile& operator=(AppendFile&&) = delete;
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void write(std::string_view bytes);
  void sync();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::string who_;
  int fd_ = -1;
};

// Removes every regular file in `dir` named NAME.tmp.PID whose PID is not a live process; returns
// how many. A missing directory has none.
std::size_t remove_stale_temp_files(const std::filesystem::path& dir);

// The output rule of every command, checked before any work: an output PATH that exists and is not
// a regular file, or that is the same file as one of `inputs` (a checkpoint, a metrics file), is a
// ValueError "FLAG: 'PATH' exists and is a device; ..." / "FLAG: 'PATH' is also an input (INPUT)".
void check_output_file(const std::filesystem::path& path, const std::vector<std::filesystem::path>& inputs,
                       const std::string& flag);

// The rule for an output file that a command writes again on each run (a jobs file, a chart):
// PATH may be replaced when it does not exist, is empty, or is an earlier output of the command,
// which `is_own` recognises from its first bytes (up to 4 KiB); any other file is kept and a
// ValueError "FLAG: 'PATH' exists and is not WHAT; remove it or name another file" is thrown before
// any work. Refuses what check_output_file refuses (with `inputs`), too.
void check_replaces_only_own(const std::filesystem::path& path, const std::function<bool(std::string_view)>& is_own,
                             const std::string& flag, const std::string& what,
                             const std::vector<std::filesystem::path>& inputs = {});

// Where an output goes, checked before any work: a ValueError naming FLAG when PATH is empty, or
// its folder does not exist or is not a directory. made_with_parents (an output directory made
// with its missing parents): the nearest folder above PATH that exists must be a directory.
void check_output_location(const std::filesystem::path& path, const std::string& flag, bool made_with_parents = false);

// "PATH.tmp.PID" for this process: the temporary name write_file_atomic uses.
std::filesystem::path temp_path_for(const std::filesystem::path& path);

}  // namespace headlab
