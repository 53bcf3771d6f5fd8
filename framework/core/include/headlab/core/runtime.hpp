// headlab/core/runtime.hpp: process-wide settings: the allocator, subnormal floats. (Threads:
// headlab/core/threads.hpp.)
#pragma once

namespace headlab {
// Keeps freed memory in the process (glibc): training allocates the same
// sizes every step, and returning them to the kernel costs page faults.
void tune_allocator();
// Treats subnormal floats (|x| < 1.2e-38 in float) as zero, in inputs and results, on the
// calling thread (and threads it starts later): torch.set_flush_denormal. Off by default.
// Arithmetic on subnormals is slow on x86 (a saturated softmax produces them; measured: the
// translate benchmark step runs ~15% faster with it on). Returns false where unsupported.
bool set_flush_denormal(bool on);
}  // namespace headlab
