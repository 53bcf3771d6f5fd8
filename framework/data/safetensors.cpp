// safetensors.cpp: the tensors of a safetensors file in memory (TensorFile) and writing them (the
// format is in safetensors.hpp); reading is in safetensors_read.cpp.
//
// Writing: build the JSON header, pad it, append the tensors' bytes, then
// write everything to a temporary file and rename it over the target.
#include "headlab/data/safetensors.hpp"
#include "safetensors_internal.hpp"

#include <cstring>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "headlab/core/file_writer.hpp"
#include "headlab/core/user_input.hpp"

namespace headlab {

using detail::checked_numel;
using detail::ojson;

// ---- dtypes ---------------------------------------------------------------

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::I64: return "I64";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F64: return 8;
    case DType::I64: return 8;
  }
  return 0;
}

template <> DType dtype_of<float>() { return DType::F32; }
template <> DType dtype_of<double>() { return DType::F64; }
template <> DType dtype_of<std::int64_t>() { return DType::I64; }

std::size_t TensorEntry::numel() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

// ---- TensorFile -----------------------------------------------------------

namespace {
// "TensorFile 'ckpt.safetensors'" or just "TensorFile": the prefix of lookup errors.
std::string file_label(const TensorFile& file) {
  return file.source.empty() ? "TensorFile" : "TensorFile " + quote_clipped(file.source);
}
}  // namespace

template <typename T>
void TensorFile::add(const std::string& name, const Array<T>& values) {
  TensorEntry entry;
  entry.name = name;
  entry.dtype = dtype_of<T>();
  entry.shape.assign(values.shape().begin(), values.shape().end());
  // An xarray with row-major layout stores its elements contiguously in that order.
  entry.bytes.resize(values.size() * sizeof(T));
  if (!entry.bytes.empty()) std::memcpy(entry.bytes.data(), values.data(), entry.bytes.size());
  add_entry(std::move(entry));
}

void TensorFile::add_entry(TensorEntry entry) {
  const std::string label = file_label(*this) + ": tensor " + quote_clipped(entry.name) + ": ";
  if (entry.name.empty()) throw ValueError(file_label(*this) + ": a tensor name must not be empty");
  if (entry.name == "__metadata__")
    throw ValueError(label + "the name is reserved for the metadata object");
  if (contains(entry.name)) throw ValueError(label + "a tensor with this name is already present");
  std::uint64_t numel = 0;
  if (!checked_numel(entry.shape, numel) || numel > entry.bytes.max_size() / dtype_size(entry.dtype))
    throw ValueError(label + "shape " + shape_str(entry.shape) + " has too many elements");
  const std::uint64_t expected = numel * dtype_size(entry.dtype);
  if (entry.bytes.size() != expected)
    throw ValueError(label + "shape " + shape_str(entry.shape) + " with dtype " + dtype_name(entry.dtype) +
                     " needs " + std::to_string(expected) + " bytes, got " + std::to_string(entry.bytes.size()));
  index_[entry.name] = entries_.size();
  entries_.push_back(std::move(entry));
}

bool TensorFile::contains(const std::string& name) const { return index_.count(name) != 0; }

const TensorEntry& TensorFile::entry(const std::string& name) const {
  auto it = index_.find(name);
  if (it != index_.end()) return entries_[it->second];
  std::string known;
  for (const auto& e : entries_) known += (known.empty() ? "" : ", ") + e.name;
  throw ValueError(file_label(*this) + ": no tensor named " + quote_clipped(name) +
                   "; present: " + (known.empty() ? "(none)" : known));
}

template <typename T>
Array<T> TensorFile::get(const std::string& name) const {
  const TensorEntry& e = entry(name);
  if (e.dtype != dtype_of<T>())
    throw ValueError(file_label(*this) + ": tensor " + quote_clipped(name) + " has dtype " + dtype_name(e.dtype) +
                     ", expected " + dtype_name(dtype_of<T>()));
  Array<T> out = Array<T>::from_shape(e.shape);
  if (!e.bytes.empty()) std::memcpy(out.data(), e.bytes.data(), e.bytes.size());
  return out;
}

template <typename T>
Array<T> TensorFile::get(const std::string& name, const Shape& expected_shape) const {
  const TensorEntry& e = entry(name);
  if (e.shape != expected_shape)
    throw ShapeError(file_label(*this) + ": tensor " + quote_clipped(name) + " has shape " + shape_str(e.shape) +
                     " (dtype " + dtype_name(e.dtype) + "), expected " + shape_str(expected_shape));
  return get<T>(name);
}

// ---- Writing --------------------------------------------------------------

namespace {
// The 8-byte length and the padded JSON header: everything of the file but the data buffer.
std::string safetensors_header(const TensorFile& file, std::uint64_t& data_bytes) {
  ojson header = ojson::object();
  if (!file.metadata.empty()) {
    ojson meta = ojson::object();
    for (const auto& [key, value] : file.metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const TensorEntry& e : file.entries()) {
    ojson info = ojson::object();
    info["dtype"] = dtype_name(e.dtype);
    info["shape"] = e.shape;
    info["data_offsets"] = ojson::array({offset, offset + e.bytes.size()});
    header[e.name] = std::move(info);
    offset += e.bytes.size();
  }

  std::string text;
  try {
    text = header.dump();  // compact; throws on strings that are not valid UTF-8
  } catch (const nlohmann::json::exception& ex) {
    throw ValueError(std::string("serialize_safetensors: a tensor name or metadata string is not valid UTF-8 (") +
                     ex.what() + ")");
  }
  // Pad with spaces (JSON whitespace) so the data buffer starts 8-byte aligned.
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');

  std::string out;
  out.reserve(8 + text.size());
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));  // little-endian
  out += text;
  data_bytes = offset;
  return out;
}

std::string_view bytes_of(const TensorEntry& e) {
  return {reinterpret_cast<const char*>(e.bytes.data()), e.bytes.size()};
}
}  // namespace

std::string serialize_safetensors(const TensorFile& file) {
  std::uint64_t data_bytes = 0;
  std::string out = safetensors_header(file, data_bytes);
  out.reserve(out.size() + data_bytes);
  for (const TensorEntry& e : file.entries()) out += bytes_of(e);
  return out;
}

void save_safetensors(const std::string& path, const TensorFile& file, const SaveOptions& options) {
  // Everything that can fail for reasons other than I/O happens before the disk is touched.
  std::uint64_t data_bytes = 0;
  const std::string header = safetensors_header(file, data_bytes);
  // The header, then each tensor's bytes where they lie (the file is never copied whole in memory);
  // PATH.tmp.PID, fsync, rename, fsync of the directory (headlab/core/file_writer.hpp).
  std::vector<std::string_view> pieces{header};
  for (const TensorEntry& e : file.entries()) pieces.push_back(bytes_of(e));
  write_file_atomic(path, pieces, "save_safetensors", options.simulate_failure_after_bytes);
}

// ---- Explicit instantiations ----------------------------------------------
#define HEADLAB_SAFETENSORS_INSTANTIATE(T)                                              \
  template void TensorFile::add<T>(const std::string&, const Array<T>&);                \
  template Array<T> TensorFile::get<T>(const std::string&) const;                       \
  template Array<T> TensorFile::get<T>(const std::string&, const Shape&) const;
HEADLAB_SAFETENSORS_INSTANTIATE(float)
HEADLAB_SAFETENSORS_INSTANTIATE(double)
HEADLAB_SAFETENSORS_INSTANTIATE(std::int64_t)
#undef HEADLAB_SAFETENSORS_INSTANTIATE

}  // namespace headlab
