// The AVX2 score kernels' lane reductions (avx2_attention.cc,
// avx2_attention_q8.cc): one tree for every position, so a score does not
// depend on which kernel or block of positions computed it.
//
// Include only from files compiled with -mavx2 (the AVX2 dispatch entries).
#pragma once

#include <immintrin.h>

namespace weft::kernels::avx2 {

// Lane p = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) of a[p]: the
// same sum for every lane, whichever position it holds.
static inline __m256 Reduce8(const __m256* a) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                       _mm256_permute2f128_ps(u0, u1, 0x31));
}

// Reduce8's tree for 4 vectors: lane p < 4 = the sum of a[p]'s 8 lanes,
// bitwise Reduce8's (per 128-bit half: (x0 + x1) + (x2 + x3), then the
// halves added).
static inline __m128 Reduce4(const __m256* a) {
  const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

}  // namespace weft::kernels::avx2
