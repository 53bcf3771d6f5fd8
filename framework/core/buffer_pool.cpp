// buffer_pool.cpp: size-class free lists for tensor storage (see headlab/core/buffer_pool.hpp).
#include "headlab/core/buffer_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "headlab/core/errors.hpp"

namespace headlab {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPooling = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kPooling = false;
#else
constexpr bool kPooling = true;
#endif
#else
constexpr bool kPooling = true;
#endif

constexpr std::size_t kAlign = 64;
constexpr std::size_t kSmall = 4096;  // below this, plain aligned malloc

// The smallest size class >= bytes: 2^k times 1, 1.25, 1.5 or 1.75.
std::size_t size_class(std::size_t bytes) {
  std::size_t base = kSmall;
  while (base * 2 <= bytes) base *= 2;
  for (std::size_t quarter = 0; quarter <= 4; ++quarter) {
    const std::size_t size = base + quarter * (base / 4);
    if (size >= bytes) return size;
  }
  return base * 2;
}

struct Pool {
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> free_blocks;  // size class -> blocks
  BufferPoolStats stats;
};

Pool& the_pool() {
  static Pool* p = new Pool;  // never destroyed: tensors in static storage may be freed after main
  return *p;
}

// "a tensor buffer of 1073741824 floats (4.0 GiB)": what could not be allocated, for OutOfMemory.
std::string buffer_text(std::size_t bytes, std::size_t element_size) {
  std::ostringstream os;
  const char* unit = element_size == 4 ? "floats" : element_size == 8 ? "8-byte values" : "bytes";
  os << "a tensor buffer of " << bytes / std::max<std::size_t>(element_size, 1) << " " << unit << " ("
     << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / double(1ull << 30) << " GiB)";
  return os.str();
}

[[noreturn]] void throw_out_of_memory(std::size_t bytes, std::size_t element_size) {
  const BufferPoolStats st = buffer_pool_stats();
  std::ostringstream os;
  os << "out of memory: " << buffer_text(bytes, element_size) << " could not be allocated ("
     << std::fixed << std::setprecision(1) << static_cast<double>(st.in_use_bytes) / double(1ull << 30)
     << " GiB held by live tensors); use smaller options (headlab train checks them against --max-memory)";
  throw OutOfMemory(os.str());
}

// malloc, and once more after the pool's cached blocks went back to the system.
void* system_allocate(std::size_t bytes, std::size_t element_size) {
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  if (!p) {
    buffer_pool_release();
    p = std::aligned_alloc(kAlign, rounded);
  }
  if (!p) throw_out_of_memory(bytes, element_size);
  return p;
}

}  // namespace

namespace detail {

void* pool_allocate(std::size_t bytes, std::size_t element_size) {
  if (bytes > std::numeric_limits<std::size_t>::max() / 4) throw_out_of_memory(bytes, element_size);  // size_class would overflow
  if (bytes < kSmall || !kPooling) return system_allocate(bytes == 0 ? kAlign : bytes, element_size);
  const std::size_t size = size_class(bytes);
  Pool& p = the_pool();
  auto count_in_use = [&p, size] {  // under the lock
    p.stats.in_use_bytes += size;
    if (p.stats.in_use_bytes > p.stats.peak_in_use_bytes) p.stats.peak_in_use_bytes = p.stats.in_use_bytes;
  };
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    auto it = p.free_blocks.find(size);
    if (it != p.free_blocks.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      p.stats.cached_bytes -= size;
      ++p.stats.hits;
      count_in_use();
      return block;
    }
    ++p.stats.misses;
  }
  void* block = system_allocate(size, element_size);  // a failure throws before anything is counted
  std::lock_guard<std::mutex> lock(p.mutex);
  count_in_use();
  return block;
}

void pool_free(void* block, std::size_t bytes) noexcept {
  if (!block) return;
  if (bytes < kSmall || !kPooling) {
    std::free(block);
    return;
  }
  const std::size_t size = size_class(bytes);
  Pool& p = the_pool();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    p.stats.in_use_bytes -= size;
    // Keep at most as much as the tensors ever held at once: enough to serve the next step.
    if (p.stats.cached_bytes + size <= p.stats.peak_in_use_bytes) {
      try {
        p.free_blocks[size].push_back(block);
        p.stats.cached_bytes += size;
        return;
      } catch (...) {  // no memory for the list entry: give the block back instead
      }
    }
  }
  std::free(block);
}

}  // namespace detail

bool buffer_pool_enabled() { return kPooling; }

BufferPoolStats buffer_pool_stats() {
  Pool& p = the_pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.stats;
}

void buffer_pool_release() {
  Pool& p = the_pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  for (auto& [size, blocks] : p.free_blocks)
    for (void* block : blocks) std::free(block);
  p.free_blocks.clear();
  p.stats.cached_bytes = 0;
}

}  // namespace headlab
