// The AVX-512 score kernels' lane reductions and tail mask
// (avx512_attention.cc, avx512_attention_q8.cc): one tree for every
// position, so a score does not depend on which kernel or block of
// positions computed it.
//
// Include only from files compiled with the AVX-512 flags (and from their
// SIMDe-emulated copy, tests/kernels/avx512_emulated.cc, which renames the
// namespace).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace weft::kernels::avx512 {

// (Always inlined: the SIMDe build for AVX2 CPUs, avx512_emulated.cc, may
// not pass 64-byte vectors between functions.)

// Per 128-bit lane: [a0 + a1, a2 + a3, b0 + b1, b2 + b3].
[[gnu::always_inline]] static inline __m512 Hadd(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88),
                       _mm512_shuffle_ps(a, b, 0xDD));
}

// Lane p = the sum of a[p]'s 16 lanes: ((S0 + S1) + (S2 + S3)), S_k =
// ((x4k + x4k+1) + (x4k+2 + x4k+3)): the same tree for every lane.
[[gnu::always_inline]] static inline __m512 Reduce16(const __m512* a) {
  __m512 t[8], u[4];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) t[i] = Hadd(a[2 * i], a[2 * i + 1]);
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) u[j] = Hadd(t[2 * j], t[2 * j + 1]);
  // u[j]'s 128-bit lane k: a[4j .. 4j+3]'s sums of elements 4k .. 4k+3;
  // A_k: lane j = u[j]'s lane k.
  const __m512 p0 = _mm512_shuffle_f32x4(u[0], u[1], 0x44);
  const __m512 p1 = _mm512_shuffle_f32x4(u[0], u[1], 0xEE);
  const __m512 p2 = _mm512_shuffle_f32x4(u[2], u[3], 0x44);
  const __m512 p3 = _mm512_shuffle_f32x4(u[2], u[3], 0xEE);
  const __m512 a0 = _mm512_shuffle_f32x4(p0, p2, 0x88);
  const __m512 a1 = _mm512_shuffle_f32x4(p0, p2, 0xDD);
  const __m512 a2 = _mm512_shuffle_f32x4(p1, p3, 0x88);
  const __m512 a3 = _mm512_shuffle_f32x4(p1, p3, 0xDD);
  return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
}

static inline __mmask16 TailMask(int64_t n) {
  return static_cast<__mmask16>((1u << n) - 1);
}

// Reduce16's tree for 8 vectors: lane p < 8 of the result = the sum of
// a[p]'s 16 lanes, bitwise Reduce16's (the same additions in the same
// order per vector; the upper half holds copies).
[[gnu::always_inline]] static inline __m512 Reduce8(const __m512* a) {
  const __m512 u0 = Hadd(Hadd(a[0], a[1]), Hadd(a[2], a[3]));
  const __m512 u1 = Hadd(Hadd(a[4], a[5]), Hadd(a[6], a[7]));
  // u[j]'s 128-bit lane k: S_k of a[4j .. 4j+3].
  const __m512 p0 = _mm512_shuffle_f32x4(u0, u1, 0x44);
  const __m512 p1 = _mm512_shuffle_f32x4(u0, u1, 0xEE);
  const __m512 a0 = _mm512_shuffle_f32x4(p0, p0, 0x88);
  const __m512 a1 = _mm512_shuffle_f32x4(p0, p0, 0xDD);
  const __m512 a2 = _mm512_shuffle_f32x4(p1, p1, 0x88);
  const __m512 a3 = _mm512_shuffle_f32x4(p1, p1, 0xDD);
  return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
}

// The same for 4 vectors: lanes 0 .. 3 (128-bit lane k of u: S_k).
[[gnu::always_inline]] static inline __m512 Reduce4(const __m512* a) {
  const __m512 u = Hadd(Hadd(a[0], a[1]), Hadd(a[2], a[3]));
  const __m512 a0 = _mm512_shuffle_f32x4(u, u, 0x00);
  const __m512 a1 = _mm512_shuffle_f32x4(u, u, 0x55);
  const __m512 a2 = _mm512_shuffle_f32x4(u, u, 0xAA);
  const __m512 a3 = _mm512_shuffle_f32x4(u, u, 0xFF);
  return _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
}

}  // namespace weft::kernels::avx512
