// Process-wide runtime settings: OpenBLAS threads and the allocator.
// The only file that includes <cblas.h> for OpenBLAS's thread control.
#include <cblas.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace headlab {

void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }

void tune_allocator() {
#if defined(__GLIBC__)
  // Every op allocates its result; glibc would serve the larger ones with
  // mmap and hand freed memory back to the kernel, so each training step paid
  // for fresh zeroed pages again (measured: a third of the copy task's time
  // in the kernel). Keep freed memory in the process instead.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

}  // namespace headlab
