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

// Q4_K group super-block (packed_x8.h): the 6-bit scales of sub-blocks
// 2c (*even) and 2c + 1 (*odd) of chunk c, each row's in its int32 lane.
static inline void Q4KChunkScales(const uint8_t* gb, int c, __m256i* even,
                                  __m256i* odd) {
  *even = _mm256_cvtepu8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(gb + 32 + 16 * c)));
  *odd = _mm256_cvtepu8_epi32(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(gb + 40 + 16 * c)));
}

// Q4_K: sum_s min_s * asum_s per row in int32 (bs: the column's 16
// sub-block sums of 16), the mins' integer part.
static inline __m256i Q4KScaledMins(const uint8_t* gb, const int16_t* bs) {
  __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
    // (asum of sub-block 2p, of 2p+1) as one int16 pair.
    const uint32_t lo = static_cast<uint16_t>(bs[4 * p] + bs[4 * p + 1]);
    const uint32_t hi = static_cast<uint16_t>(bs[4 * p + 2] + bs[4 * p + 3]);
    const __m256i m16 = _mm256_cvtepu8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 96 + 16 * p)));
    msum = _mm256_add_epi32(
        msum,
        _mm256_madd_epi16(
            m16, _mm256_set1_epi32(static_cast<int32_t>(lo | (hi << 16)))));
  }
  return msum;
}

// Q4_K: one super-block's float step for a column with activation scale
// da (dw, dm: the rows' d and dmin; isum: sum_s sc_s * dot_s, msum:
// Q4KScaledMins): the operations every Q4_K x8 tile does per pair, and so
// the bits they give.
static inline void Q4KAccumulate(__m256 dw, __m256 dm, __m256i isum,
                                 __m256i msum, float da, __m256* acc,
                                 __m256* accm) {
  const __m256 vda = _mm256_set1_ps(da);
  *acc =
      _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, vda), *acc);
  *accm =
      _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dm, vda), *accm);
}

using x86::Bcast4;
using x86::PinOrder;

}  // namespace weft::kernels::avx2
