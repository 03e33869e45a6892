// Helpers shared by the AVX2 x8 tile files (avx2_x8.cc, avx2_x8_kquants.cc)
// and the AVX-512 table's VNNI x8 tiles (x8_vnni_impl.h).
// Include ONLY from translation units compiled with AVX2 flags; every
// function is `static inline` (see simd_x86.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/packed_x8.h"
#include "kernels/simd_x86.h"
#include "kernels/x8_internal.h"

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

// Codes of vector J of a Q4_0 / Q5_0 group block: lo = elements 4J..4J+3
// of each row, hi = 16+4J..16+4J+3.
template <X8Fmt F, int J>
static inline void Nibbles(const uint8_t* gb, __m256i* lo, __m256i* hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  constexpr int kCodes = 16 + (F == X8Fmt::kQ5_0 ? 32 : 0);
  const __m256i v = _mm256_loadu_si256(
      reinterpret_cast<const __m256i*>(gb + kCodes + 32 * J));
  *lo = _mm256_and_si256(v, m4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  if constexpr (F == X8Fmt::kQ5_0) {
    const __m256i m16 = _mm256_set1_epi8(0x10);
    const __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 16));
    // Bit J -> bit 4 (left shift 4 - J), bit 4 + J -> bit 4 (right shift J);
    // bits crossing a byte boundary land away from bit 4.
    *lo = _mm256_or_si256(*lo,
                          _mm256_and_si256(_mm256_slli_epi16(h, 4 - J), m16));
    *hi = _mm256_or_si256(*hi, _mm256_and_si256(_mm256_srli_epi16(h, J), m16));
  }
}

using x86::Bcast4;
using x86::PinOrder;

}  // namespace weft::kernels::avx2
