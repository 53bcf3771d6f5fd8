// headlab/data/input_file.hpp: a file opened for reading only after it is known to be a regular file.
//
// A path given by a user may name a FIFO (open() would block until a writer comes, forever), a
// directory or a device (/dev/zero reads without end). InputFile refuses those before it reads:
//   1. stat(path): not a regular file -> IOError "WHO: 'PATH': not a regular file (a FIFO)";
//   2. open(path, O_RDONLY | O_NONBLOCK) (a FIFO swapped in after the stat cannot block either),
//      then fstat on the descriptor and the same check (the file actually opened is the one read);
//   3. O_NONBLOCK is cleared; reads go through read(2), retrying EINTR.
// size() is st_size at open, so a caller can compare what a header promises with what the file
// holds before reading the bulk of it (headlab/data/safetensors.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace headlab {

class InputFile {
 public:
  // `who` starts every message: "load_safetensors: 'ckpt.safetensors': not a regular file (a FIFO)".
  InputFile(const std::string& path, const char* who);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  std::uint64_t size() const { return size_; }  // bytes, from fstat at open
  // Up to n bytes from the current position: fewer only at end of file. IOError on a read error.
  std::string read(std::uint64_t n);
  // The same into `buffer` (n bytes of room): returns how many bytes were read.
  std::uint64_t read_into(char* buffer, std::uint64_t n);
  // Everything up to end of file.
  std::string read_rest();

 private:
  [[noreturn]] void fail(const std::string& why) const;
  std::string path_;
  const char* who_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole of a regular file (InputFile's checks first): TSV corpora, vocabularies, configs.
std::string read_regular_file(const std::string& path, const char* who);

// Bounds of the text files a command reads whole (hypotheses and references, sentences, merges):
// far above any real one, far below what would exhaust memory.
constexpr std::uint64_t kMaxTextFileBytes = 256ull << 20;   // 256 MiB
constexpr std::size_t kMaxTextLineBytes = 1u << 20;          // 1 MiB: a sentence
constexpr std::uint64_t kMaxMergesFileBytes = 64ull << 20;  // 64 MiB: a merges file of 32k merges is ~0.5 MB
constexpr std::size_t kMaxMergesLineBytes = 4096;            // one merge: two symbols
constexpr std::uint64_t kNoSizeLimit = ~std::uint64_t{0} - 1;  // a corpus: as large as it is

// The same for a text file: a leading UTF-8 byte-order mark (EF BB BF, which editors on Windows
// write) is dropped, so that it is never read as part of the first word. A file over `max_bytes`
// is refused from its size before it is read (and a file growing past it while read): FormatError
// "WHO: 'PATH': more than 256 MiB (N bytes), the most headlab reads as a text file"; a file holding
// a NUL byte (UTF-16 text, a binary file) is FormatError "WHO: 'PATH':LINE: holds a NUL byte: ...".
std::string read_text_file(const std::string& path, const char* who, std::uint64_t max_bytes = kMaxTextFileBytes);

// FormatError "WHO: 'PATH':LINE: a line of N bytes, more than the M headlab reads as one line" for
// the first line of `text` longer than `max_line_bytes` (without its line end).
void check_line_lengths(const std::string& text, const std::string& path, const char* who,
                        std::size_t max_line_bytes);

}  // namespace headlab
