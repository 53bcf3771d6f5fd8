// buffer_pool.cpp: size-class free lists for tensor storage (see headlab/core/buffer_pool.hpp).
#include "headlab/core/buffer_pool.hpp"

#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

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

void* system_allocate(std::size_t bytes) {
  void* p = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

namespace detail {

void* pool_allocate(std::size_t bytes) {
  if (bytes > std::numeric_limits<std::size_t>::max() / 4) throw std::bad_alloc();  // size_class would overflow
  if (bytes < kSmall || !kPooling) return system_allocate(bytes == 0 ? kAlign : bytes);
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
  void* block = system_allocate(size);  // a failure throws before anything is counted
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
