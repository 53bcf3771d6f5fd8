// The only file that includes <cblas.h> for OpenBLAS's thread control.
#include <cblas.h>

namespace headlab {
void set_blas_threads(int n) { openblas_set_num_threads(n < 1 ? 1 : n); }
}  // namespace headlab
