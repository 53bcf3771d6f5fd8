// Process-wide runtime settings: the allocator, denormals.
#include <cstdlib>  // first: it defines __GLIBC__ where glibc is the C library
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define HEADLAB_HAS_MXCSR 1
#endif

namespace headlab {

void tune_allocator() {
#if defined(__GLIBC__)
  // Tensor storage comes from headlab's buffer pool (buffer_pool.hpp); the
  // rest (mask buffers, closures, graph nodes) from malloc, which would serve
  // the larger requests with mmap and hand freed memory back to the kernel,
  // so each training step paid for fresh zeroed pages again. Keep freed
  // memory in the process instead.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

bool set_flush_denormal(bool on) {
#if defined(HEADLAB_HAS_MXCSR)
  // MXCSR bit 15 (FTZ): results below FLT_MIN become 0; bit 6 (DAZ): such inputs read as 0.
  constexpr unsigned int ftz_daz = 0x8040;
  const unsigned int csr = _mm_getcsr();
  _mm_setcsr(on ? (csr | ftz_daz) : (csr & ~ftz_daz));
  return true;
#else
  return !on;  // nothing to do to turn it off; cannot turn it on here
#endif
}

}  // namespace headlab
