// core/simd_intrinsics.hpp: the compiler's SIMD intrinsics, first in every translation unit.
//
// With -march=native on an AVX-512 machine, GCC 12 reports ~150 false "-Wmaybe-uninitialized"
// warnings located inside its own <avx512*intrin.h> once xsimd's code (xtensor's SIMD layer) is
// inlined into ours. GCC decides by the location of the warning, so including <immintrin.h> here,
// first, with that warning off and then back on, silences exactly those headers: a warning in
// headlab's own code (or a student's) still shows. The build force-includes this header first in
// every C++ file of such a build (CMakeLists.txt, where it also turns precompiled headers off:
// GCC does not carry this pragma across one).
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
