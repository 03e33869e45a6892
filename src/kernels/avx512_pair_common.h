// Helpers shared by the AVX-512 table's pair tiles (avx512_pair_tiles.cc:
// Q4_0, Q5_0, Q8_0; avx512_pair_kquants.cc: the K-quants and IQ4_XS): two
// consecutive x8 groups a call, group 0's vector in a zmm's low half and
// group 1's in its high half.
// Header rules: static inline functions only; include ONLY from files
// compiled with the AVX-512 flags (or, in the tests, with AVX-512 emulated:
// tests/kernels/avx512_emulated.cc, which includes both pair files into one
// translation unit, so they share these rather than each defining its own).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/avx2_x8_common.h"
#include "kernels/x8_vnni_impl.h"

namespace weft::kernels::avx512 {

// 32 bytes at a in the low half, 32 bytes at b in the high half.
static inline __m512i Join256(const uint8_t* a, const uint8_t* b) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// lo in the low half, hi in the high half.
static inline __m512i JoinYmm(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// The 8 fp16 scales at a (group 0) and at b (group 1) as 16 floats.
static inline __m512 JoinScales(const uint8_t* a, const uint8_t* b) {
  const __m256i h = _mm256_inserti128_si256(
      _mm256_castsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
  return _mm512_cvtph_ps(h);
}

// 4 bytes at p in every int32 lane.
static inline __m512i Bcast4Z(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Software prefetch distance along each of the two groups, in bytes (as
// the x8 tile's, x8_vnni::kTileAhead).
constexpr size_t kPairAhead = x8_vnni::kTileAhead;

// Prefetches kPairAhead bytes ahead along both groups, for the kGB-byte
// group blocks at a and e, `done` bytes into groups of group_bytes each;
// past a group's end, into the next pair's (which starts 2 groups on: the
// narrow tiles' stream runs into the next group, one group on, which here
// is already being read).
template <int kGB>
static inline void PairPrefetch(const uint8_t* a, const uint8_t* e, size_t done,
                                size_t group_bytes) {
  const size_t skip = done + kPairAhead >= group_bytes ? group_bytes : 0;
  avx2::PrefetchAhead<kGB, kPairAhead>(a, skip);
  avx2::PrefetchAhead<kGB, kPairAhead>(e, skip);
}

// Stores the first nr (<= 16) lanes of v at y.
static inline void StorePairRows(__m512 v, int nr, float* y) {
  _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << nr) - 1), v);
}

}  // namespace weft::kernels::avx512
