// Helpers shared by the AVX2 x8 tile files (avx2_x8.cc, avx2_x8_kquants.cc).
// Include ONLY from translation units compiled with AVX2 flags; every
// function is `static inline` (see simd_x86.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/packed_x8.h"
#include "kernels/simd_x86.h"

namespace weft::kernels::avx2 {

// Activation rows of a wide tile (TileX8Wide, TileX8Q6KWide): a block's
// codes are decoded once for all of them and their sums live in L1.
constexpr int kX8WideCols = 16;

// Software prefetch distance in bytes along the group's stream.
constexpr size_t kAhead = 2048;

// Prefetches the kBytes of the group block kAhead bytes past gb, one
// line at a time (integer arithmetic: the address may lie past the matrix;
// a prefetch never faults, but a pointer may not point there).
template <int kBytes>
static inline void PrefetchAhead(const uint8_t* gb) {
#pragma GCC unroll 20
  for (int off = 0; off < kBytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(gb) +
                                               kAhead + off),
                 _MM_HINT_T0);
  }
}

// y[0 .. nr) = the first nr lanes of v.
static inline void StoreRows(__m256 v, int nr, float* y) {
  if (nr == kX8Rows) {
    _mm256_storeu_ps(y, v);
    return;
  }
  alignas(32) float tmp[kX8Rows];
  _mm256_store_ps(tmp, v);
  for (int i = 0; i < nr; ++i) y[i] = tmp[i];
}

using x86::Bcast4;
using x86::PinOrder;

}  // namespace weft::kernels::avx2
