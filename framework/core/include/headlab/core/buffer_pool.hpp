// headlab/core/buffer_pool.hpp: where tensor storage comes from.
//
// A training step allocates the same buffers every step: each op's result, each gradient. Handing
// them back to malloc and asking again costs time (page faults for fresh memory) and memory (the
// heap fragments: a freed 8 MB block half reused by 2 MB ones no longer fits the next 8 MB
// request, so the heap grows). The pool keeps freed blocks by size class (4 per doubling, so at
// most 25% slack) and hands them out again; the blocks it keeps never exceed the most memory the
// tensors themselves held at once. Blocks under 4 KiB go straight to malloc.
#pragma once

#include <cstddef>
#include <limits>
#include <new>

namespace headlab {

namespace detail {
// 64-byte aligned. When the system has no memory left, throws OutOfMemory naming the bytes and
// `element_size` (the size of one element of the tensor), never a bare std::bad_alloc.
void* pool_allocate(std::size_t bytes, std::size_t element_size = 1);
void pool_free(void* p, std::size_t bytes) noexcept;  // bytes: as given to pool_allocate
}  // namespace detail

struct BufferPoolStats {
  std::size_t in_use_bytes = 0;    // held by live tensors (pooled sizes)
  std::size_t peak_in_use_bytes = 0;
  std::size_t cached_bytes = 0;    // freed blocks kept for reuse
  std::size_t hits = 0, misses = 0;
};
BufferPoolStats buffer_pool_stats();
// False in sanitizer builds: there every block goes back to the system at once, so that
// AddressSanitizer still sees a use after free.
bool buffer_pool_enabled();
// Returns every cached block to the system (between experiments with different shapes).
void buffer_pool_release();

// The allocator of every tensor's storage (headlab::Array). It lives in a namespace of its own:
// argument-dependent lookup from inside xtensor (its unqualified sum, mean, ... on our arrays)
// must not find headlab's ops.
namespace pool {
template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > max_size()) return static_cast<T*>(detail::pool_allocate(std::numeric_limits<std::size_t>::max(), sizeof(T)));
    return static_cast<T*>(detail::pool_allocate(n * sizeof(T), sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { detail::pool_free(p, n * sizeof(T)); }
  std::size_t max_size() const noexcept { return std::numeric_limits<std::size_t>::max() / 4 / sizeof(T); }
  template <typename U>
  struct rebind {
    using other = PoolAllocator<U>;
  };
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const PoolAllocator<U>&) const noexcept { return false; }
};
}  // namespace pool
using pool::PoolAllocator;

}  // namespace headlab
