// headlab/data/safetensors.hpp: named tensors on disk in the Hugging Face safetensors format.
//
// This is the storage layer of checkpoints. A file is
//
//   [8 bytes]  N, the header length, an unsigned 64-bit little-endian integer
//   [N bytes]  the header: a UTF-8 JSON object
//                {"__metadata__": {"step": "100", ...},            (optional, string -> string)
//                 "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
//                 ...}
//              padded with spaces so that 8 + N is a multiple of 8
//   [rest]     the data buffer: every tensor's elements, row-major, little-endian
//
// data_offsets = [begin, end) are byte offsets into the data buffer (not the
// file). A valid file has end - begin == prod(shape) * sizeof(dtype), and the
// tensors tile the buffer exactly: no overlaps, no gaps, no bytes left over.
// A shape [] is a scalar (one element); a shape containing 0 has no bytes.
// headlab reads and writes three dtypes:
//   "F32" float (4 bytes)   "F64" double (8 bytes)   "I64" std::int64_t (8 bytes)
// The writer lays the buffer out in the order the tensors were added.
//
// Errors (all derive from headlab::Error, see errors.hpp):
//   IOError      the file cannot be opened, read, written or renamed
//   FormatError  (an IOError) the bytes were read but are not a valid file;
//                the message names the file and the problem, e.g.
//                "load_safetensors: 'ckpt.safetensors': tensor 'w': data_offsets
//                 [0, 99] are beyond the data buffer (48 bytes)"
//   ValueError / ShapeError  asking a TensorFile for a missing tensor, or for
//                the wrong dtype / shape (the message names the tensor,
//                what was expected and what was found)
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "headlab/core/tensor.hpp"

namespace headlab {

enum class DType { F32, F64, I64 };

const char* dtype_name(DType dtype);   // "F32", "F64", "I64"
std::size_t dtype_size(DType dtype);   // bytes per element: 4, 8, 8
// The dtype of a C++ element type: float -> F32, double -> F64, std::int64_t -> I64.
template <typename T> DType dtype_of();
template <> DType dtype_of<float>();
template <> DType dtype_of<double>();
template <> DType dtype_of<std::int64_t>();

// One named tensor, stored as raw bytes so that one container holds every dtype.
struct TensorEntry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;                       // [] for a scalar
  std::vector<unsigned char> bytes;  // numel() * dtype_size(dtype) bytes, row-major, little-endian

  std::size_t numel() const;  // prod(shape); 1 for a scalar
};

// The contents of one safetensors file: ordered named tensors + string metadata.
class TensorFile {
 public:
  // The "__metadata__" object: free-form string pairs (step, config, ...).
  std::map<std::string, std::string> metadata;
  // The file this was loaded from ("" when built in memory); error messages name it.
  std::string source;

  // Adds a copy of `values` under `name`. T is float, double or std::int64_t
  // (an IndexArray is an Array<std::int64_t>). Throws ValueError for an empty
  // name, the reserved name "__metadata__", or a name already present.
  template <typename T>
  void add(const std::string& name, const Array<T>& values);
  // Adds raw bytes (same name rules; ValueError when the byte count does not
  // match the shape and dtype).
  void add_entry(TensorEntry entry);

  bool contains(const std::string& name) const;
  std::size_t size() const { return entries_.size(); }
  // In the order added (or, for a loaded file, in data-buffer order).
  const std::vector<TensorEntry>& entries() const { return entries_; }
  // Throws ValueError listing the names present when `name` is missing.
  const TensorEntry& entry(const std::string& name) const;

  // A typed copy of tensor `name`. Throws ValueError when it is missing or
  // stored with another dtype, and (second form) ShapeError when its shape is
  // not `expected_shape`; the messages name the tensor, expected and found.
  template <typename T>
  Array<T> get(const std::string& name) const;
  template <typename T>
  Array<T> get(const std::string& name, const Shape& expected_shape) const;

 private:
  std::vector<TensorEntry> entries_;
  std::map<std::string, std::size_t> index_;  // name -> position in entries_
};

// ---- Writing --------------------------------------------------------------
struct SaveOptions {
  static constexpr std::size_t never = std::numeric_limits<std::size_t>::max();
  // Test hook: write only this many bytes of the file, then fail as if the disk
  // had filled up. Tests use it to prove that a failed save leaves the
  // previous file at `path` untouched.
  std::size_t simulate_failure_after_bytes = never;
};

// The complete file contents (8-byte length, padded header, data buffer).
// Throws ValueError when a name or metadata string is not valid UTF-8.
std::string serialize_safetensors(const TensorFile& file);

// Writes `file` to `path` atomically: the bytes go to `path + ".tmp.<pid>"`,
// which is fsync'ed and then renamed over `path`. A rename within one
// directory replaces the old file in one step, so a reader (or a crash) sees
// either the old file or the new one, never half of each. On any error the
// temporary file is removed and IOError (naming the path and the reason) is
// thrown; the previous file at `path`, if any, is untouched.
void save_safetensors(const std::string& path, const TensorFile& file, const SaveOptions& options = {});

// ---- Reading --------------------------------------------------------------
// The largest header accepted (the reference implementation's limit): a bad
// length field must not make the reader allocate gigabytes.
constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// Reads and validates the whole file. Throws IOError when it cannot be read and
// FormatError when it is not a valid safetensors file with F32/F64/I64 tensors:
//   shorter than 8 bytes, header length above the cap or beyond the file,
//   header not UTF-8 JSON or not an object, duplicate keys, an entry that is
//   not an object or lacks dtype / shape / data_offsets or has extra keys,
//   fields of the wrong JSON type, an unsupported dtype, end < begin, offsets
//   beyond the data buffer, end - begin != prod(shape) * dtype size,
//   overlapping tensors, data bytes covered by no tensor, a "__metadata__"
//   that is not an object of strings.
TensorFile load_safetensors(const std::string& path);

// The parser behind load_safetensors, on bytes already in memory. It never
// throws and never reads outside `bytes` (a fuzzing entry point): on success
// it fills `out` and returns true; otherwise it sets `error` to the reason
// (without a file name) and returns false, leaving `out` unspecified.
bool parse_safetensors_bytes(const std::string& bytes, TensorFile& out, std::string& error);

}  // namespace headlab
