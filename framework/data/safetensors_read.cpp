// safetensors_read.cpp: reading safetensors files (the format is in safetensors.hpp; TensorFile
// and writing are in safetensors.cpp).
//
// Load the whole file, then check every field before trusting it: a file is input from outside,
// so no offset or length is used before it has been compared with the number of bytes actually
// present.
#include "headlab/data/safetensors.hpp"
#include "safetensors_internal.hpp"

#include "headlab/data/input_file.hpp"
#include "headlab/core/json_depth.hpp"
#include "headlab/core/user_input.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace headlab {

using detail::checked_numel;
using detail::ojson;

namespace {

// Thrown inside the parser; parse_safetensors_bytes turns it into its error string.
struct BadFile : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string offsets_str(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

bool parse_dtype(const std::string& name, DType& dtype) {
  for (DType d : {DType::F32, DType::F64, DType::I64}) {
    if (name == dtype_name(d)) {
      dtype = d;
      return true;
    }
  }
  return false;
}

}  // namespace

// ---- Reading --------------------------------------------------------------

namespace {

// Parses the header JSON, rejecting duplicate keys (nlohmann would silently
// keep the last one) and nesting deeper than a valid header ever has.
// A valid header nests at most three levels: the top object (starts at depth
// 0), an entry or "__metadata__" object (depth 1), a shape or data_offsets
// array (depth 2). Stopping at depth 3 keeps a "[[[[..." bomb cheap.
ojson parse_header_json(const char* first, const char* last) {
  std::vector<std::set<std::string>> keys_seen;  // one set per object being parsed
  auto check = [&](int depth, ojson::parse_event_t event, ojson& parsed) {
    using Event = ojson::parse_event_t;
    if (event == Event::object_start || event == Event::array_start) {
      if (depth >= 3) throw BadFile("header is nested deeper than a safetensors header can be");
      if (event == Event::object_start) keys_seen.emplace_back();
    } else if (event == Event::object_end) {
      keys_seen.pop_back();
    } else if (event == Event::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!keys_seen.back().insert(key).second)
        throw BadFile(depth == 1 ? "duplicate tensor name " + quote_clipped(key) + " in the header"
                                 : "duplicate key " + quote_clipped(key) + " inside a header object");
    }
    return true;  // keep every value
  };
  try {
    return ojson::parse(first, last, check);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, a number too large for a double, ...
    throw BadFile("header is not valid JSON: " + json_error_text(e.what()));
  }
}

// An unsigned integer field of the header (nlohmann stores non-negative
// integer literals as number_unsigned; negative ones and 1.5 are other types).
bool is_uint(const ojson& j) { return j.is_number_unsigned(); }

// A tensor after its header entry was checked, before its bytes are copied.
struct Pending {
  TensorEntry entry;  // bytes still empty
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

Pending check_entry(const std::string& name, const ojson& info, std::uint64_t data_size) {
  const std::string where = "tensor " + quote_clipped(name) + ": ";
  if (name.empty()) throw BadFile("a tensor has an empty name");
  if (!info.is_object()) throw BadFile(where + "entry is a JSON " + info.type_name() + ", not an object");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!info.contains(field)) throw BadFile(where + "missing field \"" + field + "\"");
  for (const auto& item : info.items())
    if (item.key() != "dtype" && item.key() != "shape" && item.key() != "data_offsets")
      throw BadFile(where + "unknown field \"" + item.key() + "\"");

  Pending p;
  p.entry.name = name;

  const ojson& dtype = info.at("dtype");
  if (!dtype.is_string()) throw BadFile(where + "\"dtype\" is a JSON " + dtype.type_name() + ", not a string");
  if (!parse_dtype(dtype.get<std::string>(), p.entry.dtype))
    throw BadFile(where + "unsupported dtype " + quote_clipped(dtype.get<std::string>()) + " (headlab reads F32, F64, I64)");

  const ojson& shape = info.at("shape");
  if (!shape.is_array()) throw BadFile(where + "\"shape\" is a JSON " + shape.type_name() + ", not an array");
  for (const ojson& d : shape) {
    if (!is_uint(d)) throw BadFile(where + "\"shape\" " + shape.dump() + " holds a value that is not a non-negative integer");
    p.entry.shape.push_back(d.get<std::uint64_t>());
  }

  const ojson& offsets = info.at("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !is_uint(offsets[0]) || !is_uint(offsets[1]))
    throw BadFile(where + "\"data_offsets\" " + offsets.dump() + " is not an array of two non-negative integers");
  p.begin = offsets[0].get<std::uint64_t>();
  p.end = offsets[1].get<std::uint64_t>();
  const std::string range = offsets_str(p.begin, p.end);
  if (p.end < p.begin) throw BadFile(where + "data_offsets " + range + " end before they begin");
  if (p.end > data_size)
    throw BadFile(where + "data_offsets " + range + " are beyond the data buffer (" + std::to_string(data_size) +
                  " bytes)");

  // Now end - begin <= data_size: a byte count that matches it is small.
  std::uint64_t numel = 0;
  const std::uint64_t elem = dtype_size(p.entry.dtype);
  if (!checked_numel(p.entry.shape, numel) || numel > std::numeric_limits<std::uint64_t>::max() / elem)
    throw BadFile(where + "shape " + shape.dump() + " has too many elements");
  if (numel * elem != p.end - p.begin)
    throw BadFile(where + "shape " + shape_str(p.entry.shape) + " with dtype " + dtype_name(p.entry.dtype) + " needs " +
                  std::to_string(numel * elem) + " bytes but data_offsets " + range + " span " +
                  std::to_string(p.end - p.begin));
  return p;
}

// A file's header after every check, its tensors' bytes not yet copied.
struct CheckedHeader {
  std::uint64_t header_length = 0;        // n, the JSON's bytes after the 8-byte length field
  std::vector<Pending> tensors;           // in offset order, tiling [0, data_size)
  std::map<std::string, std::string> metadata;
};

// Checks the length field and the header, held in the first `present` bytes at `bytes`, against a
// file of `file_size` bytes: everything but the tensors' bytes themselves, so a reader can refuse a
// file whose size disagrees with its header before it reads the data.
CheckedHeader check_header(const char* bytes, std::uint64_t present, std::uint64_t file_size) {
  CheckedHeader out;
  // 1. The length field.
  if (file_size < 8)
    throw BadFile("file is " + std::to_string(file_size) +
                  " bytes, shorter than the 8-byte header length field (truncated?)");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (n > kSafetensorsMaxHeaderBytes)
    throw BadFile("header length " + std::to_string(n) + " exceeds the limit of " +
                  std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  const std::uint64_t after_length = file_size - 8;
  if (n > after_length)
    throw BadFile("header length " + std::to_string(n) + " is beyond the end of the file (only " +
                  std::to_string(after_length) + " bytes follow the length field; truncated?)");
  if (present < 8 + n) throw BadFile("the header was not read whole");  // a caller's bug, not the file's
  out.header_length = n;
  const char* header_begin = bytes + 8;
  const std::uint64_t data_size = after_length - n;

  // 2. The header.
  const ojson header = parse_header_json(header_begin, header_begin + n);
  if (!header.is_object()) throw BadFile(std::string("header is a JSON ") + header.type_name() + ", not an object");

  std::vector<Pending>& tensors = out.tensors;
  for (const auto& item : header.items()) {
    if (item.key() == "__metadata__") {
      if (!item.value().is_object())
        throw BadFile(std::string("\"__metadata__\" is a JSON ") + item.value().type_name() + ", not an object");
      for (const auto& kv : item.value().items()) {
        if (!kv.value().is_string())
          throw BadFile("\"__metadata__\" value for " + quote_clipped(kv.key()) + " is a JSON " + kv.value().type_name() +
                        ", not a string");
        out.metadata[kv.key()] = kv.value().get<std::string>();
      }
      continue;
    }
    tensors.push_back(check_entry(item.key(), item.value(), data_size));
  }

  // 3. The tensors must tile the data buffer: walk them in offset order.
  // Sorting by (begin, end) puts an empty tensor before a non-empty one that
  // starts at the same offset.
  std::stable_sort(tensors.begin(), tensors.end(), [](const Pending& a, const Pending& b) {
    return std::make_pair(a.begin, a.end) < std::make_pair(b.begin, b.end);
  });
  std::uint64_t covered = 0;  // bytes [0, covered) belong to the tensors seen so far
  const Pending* previous = nullptr;
  for (const Pending& p : tensors) {
    if (p.begin < covered)
      throw BadFile("tensors " + quote_clipped(previous->entry.name) + " " + offsets_str(previous->begin, previous->end) +
                    " and " + quote_clipped(p.entry.name) + " " + offsets_str(p.begin, p.end) + " overlap");
    if (p.begin > covered)
      throw BadFile("data bytes " + offsets_str(covered, p.begin) + " are not covered by any tensor (a gap before " +
                    quote_clipped(p.entry.name) + ")");
    covered = p.end;
    previous = &p;
  }
  if (covered != data_size)
    throw BadFile("data bytes " + offsets_str(covered, data_size) +
                  " at the end of the buffer are not covered by any tensor");
  return out;
}

// 4. Everything checked: copy each tensor's bytes out of the data buffer at `data`.
void copy_tensors(CheckedHeader& header, const char* data, TensorFile& out) {
  out.metadata = std::move(header.metadata);
  for (Pending& p : header.tensors) {
    p.entry.bytes.assign(data + p.begin, data + p.end);
    out.add_entry(std::move(p.entry));
  }
}

void parse_or_throw(const std::string& bytes, TensorFile& out) {
  CheckedHeader header = check_header(bytes.data(), bytes.size(), bytes.size());
  copy_tensors(header, bytes.data() + 8 + header.header_length, out);
}

}  // namespace

bool parse_safetensors_bytes(const std::string& bytes, TensorFile& out, std::string& error) {
  out = TensorFile{};
  try {
    parse_or_throw(bytes, out);
    return true;
  } catch (const std::exception& e) {  // BadFile, ValueError from add_entry, std::bad_alloc
    error = e.what();
  } catch (...) {
    error = "unknown error";
  }
  return false;
}

// The length field and the header first; their promise checked against the file's size; then the
// data. A 12 GB file whose header describes 3 KB is refused after reading 3 KB, not 12 GB.
TensorFile load_safetensors(const std::string& path) {
  InputFile input(path, "load_safetensors");  // refuses a FIFO, directory or device before opening it
  auto bad = [&](const std::string& why) { return FormatError("load_safetensors: " + quote_clipped(path) + ": " + why); };
  TensorFile file;
  try {
    std::string head = input.read(8);
    if (head.size() == 8) {
      std::uint64_t n = 0;
      for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(head[i])) << (8 * i);
      if (n <= kSafetensorsMaxHeaderBytes && n <= input.size() - 8) head += input.read(n);
    }
    CheckedHeader header = check_header(head.data(), head.size(), std::max<std::uint64_t>(input.size(), head.size()));
    // The tensors tile the data buffer in offset order: each is read straight into its own bytes
    // (the file is never held twice in memory).
    auto changed = [&] {
      return BadFile("the file changed size while it was read (" + std::to_string(input.size()) + " bytes at open)");
    };
    file.metadata = std::move(header.metadata);
    for (Pending& p : header.tensors) {
      p.entry.bytes.resize(p.end - p.begin);
      const auto want = static_cast<std::uint64_t>(p.entry.bytes.size());
      if (input.read_into(reinterpret_cast<char*>(p.entry.bytes.data()), want) != want) throw changed();
      file.add_entry(std::move(p.entry));
    }
    if (!input.read(1).empty()) throw changed();
  } catch (const BadFile& e) {
    throw bad(e.what());
  } catch (const ValueError& e) {  // from add_entry
    throw bad(e.what());
  }
  file.source = path;
  return file;
}

}  // namespace headlab
