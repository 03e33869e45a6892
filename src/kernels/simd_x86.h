// Small AVX2 helpers shared by the x86 kernel files. Include ONLY from
// translation units compiled with AVX2 (or AVX-512) flags. Every function is
// `static inline` (internal linkage) so that no out-of-line copy with these
// instructions can be shared with, or picked by, another object file.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace weft::kernels::x86 {

static inline float Fp16(uint16_t h) { return _cvtsh_ss(h); }

// Keeps an accumulation in program order: without it GCC reassociates,
// e.g., the x8 tiles' int16 sums into a tree over all of a block's maddubs
// results and spills them (64 stack accesses per Q4_0 block at 3 columns).
static inline void PinOrder(__m256i* v) { __asm__("" : "+x"(*v)); }
static inline void PinOrder(__m256* v) { __asm__("" : "+x"(*v)); }

// The 4 bytes at p in every 32-bit lane.
static inline __m256i Bcast4(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

static inline float HsumPs(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float HmaxPs(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline int HsumEpi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// 16 bytes of packed nibbles -> 32 bytes: the low nibbles (elements 0..15)
// then the high nibbles (elements 16..31).
static inline __m256i NibblesToBytes(const uint8_t* p) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m256i y = _mm256_set_m128i(_mm_srli_epi16(x, 4), x);
  return _mm256_and_si256(y, _mm256_set1_epi8(0x0f));
}

// 16 bytes of IQ4_NL / IQ4_XS codes -> their 32 signed int8 table values
// (`table`: the 16-entry value table, in both 128-bit lanes), in
// NibblesToBytes' element order.
static inline __m256i NonlinearCodesToBytes(const uint8_t* p, __m256i table) {
  return _mm256_shuffle_epi8(table, NibblesToBytes(p));
}

// The 16 int8 values of `values` in both 128-bit lanes (for vpshufb).
static inline __m256i ByteTable16(const int8_t* values) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
}

// The 16 values of a 16-entry code table, each + 128 (its sign bit
// flipped), in both lanes: the codes as unsigned bytes for vpdpbusd /
// TDPBSUD, the +128 taken off through the activations' block sums.
static inline __m256i ByteTable16Plus128(const int8_t* values) {
  return _mm256_xor_si256(ByteTable16(values), _mm256_set1_epi8(static_cast<char>(0x80)));
}

// 32 bits -> 32 bytes, 0xff where the bit is set.
static inline __m256i BitsToBytes(const uint8_t* p) {
  uint32_t x32;
  std::memcpy(&x32, p, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                         0x0101010101010101, 0x0000000000000000);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(x32)), shuf);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
  return _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1));
}

// e^x, relative error ~2e-7; 0 below -87.33, clamped above 88.37
// (Cephes' expf), on any float vector width through Ops (static, always
// inlined): V, Set1, Min, Max, Mul, Add, Fma(a, b, c) = a * b + c,
// Fnma(a, b, c) = c - a * b, Round (to nearest), Pow2(fx) = 2^fx for a
// whole fx in [-126, 128], ZeroBelow(x, lim, y) = x < lim ? 0 : y.
template <typename Ops, typename V>
[[gnu::always_inline]] static inline V ExpSteps(V x) {
  const V lo = Ops::Set1(-87.33f);
  const V x0 = x;
  x = Ops::Min(Ops::Max(x, lo), Ops::Set1(88.37f));
  const V fx = Ops::Round(Ops::Mul(x, Ops::Set1(1.44269504088896341f)));
  x = Ops::Fnma(fx, Ops::Set1(0.693359375f), x);
  x = Ops::Fnma(fx, Ops::Set1(-2.12194440e-4f), x);
  V p = Ops::Set1(1.9875691500e-4f);
  p = Ops::Fma(p, x, Ops::Set1(1.3981999507e-3f));
  p = Ops::Fma(p, x, Ops::Set1(8.3334519073e-3f));
  p = Ops::Fma(p, x, Ops::Set1(4.1665795894e-2f));
  p = Ops::Fma(p, x, Ops::Set1(1.6666665459e-1f));
  p = Ops::Fma(p, x, Ops::Set1(5.0000001201e-1f));
  const V y = Ops::Fma(p, Ops::Mul(x, x), Ops::Add(x, Ops::Set1(1.0f)));
  return Ops::ZeroBelow(x0, lo, Ops::Mul(y, Ops::Pow2(fx)));
}

struct ExpOps8 {
  static __m256 Set1(float a) { return _mm256_set1_ps(a); }
  static __m256 Min(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
  static __m256 Max(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
  static __m256 Mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
  static __m256 Add(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
  static __m256 Fma(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
  static __m256 Fnma(__m256 a, __m256 b, __m256 c) { return _mm256_fnmadd_ps(a, b, c); }
  static __m256 Round(__m256 a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static __m256 Pow2(__m256 fx) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static __m256 ZeroBelow(__m256 x, __m256 lim, __m256 y) {
    return _mm256_andnot_ps(_mm256_cmp_ps(x, lim, _CMP_LT_OQ), y);
  }
};

static inline __m256 ExpPs(__m256 x) { return ExpSteps<ExpOps8>(x); }

// Quantizes 32 * n_vec floats (n_vec in {1..8} groups of 8) with one scale
// d = max|x| / 127 exactly as the scalar twin: writes int8 q and returns
// sum(q) through *sum.
static inline float QuantizeQ8Group(const float* x, int n32, int8_t* q, int* sum) {
  __m256 amax = _mm256_setzero_ps();
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int i = 0; i < n32 * 4; ++i) {
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)));
  }
  const float m = HmaxPs(amax);
  const float d = m / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m256 vid = _mm256_set1_ps(id);
  __m256i vsum = _mm256_setzero_si256();
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int j = 0; j < n32; ++j) {
    const float* p = x + 32 * j;
    __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p), vid));
    __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p + 8), vid));
    __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p + 16), vid));
    __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(p + 24), vid));
    const __m256i lim = _mm256_set1_epi32(127);
    i0 = _mm256_max_epi32(_mm256_min_epi32(i0, lim), _mm256_sub_epi32(_mm256_setzero_si256(), lim));
    i1 = _mm256_max_epi32(_mm256_min_epi32(i1, lim), _mm256_sub_epi32(_mm256_setzero_si256(), lim));
    i2 = _mm256_max_epi32(_mm256_min_epi32(i2, lim), _mm256_sub_epi32(_mm256_setzero_si256(), lim));
    i3 = _mm256_max_epi32(_mm256_min_epi32(i3, lim), _mm256_sub_epi32(_mm256_setzero_si256(), lim));
    vsum = _mm256_add_epi32(vsum, _mm256_add_epi32(_mm256_add_epi32(i0, i1),
                                                   _mm256_add_epi32(i2, i3)));
    __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    packed = _mm256_permutevar8x32_epi32(packed, perm);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * j), packed);
  }
  *sum = HsumEpi32(vsum);
  return d;
}

}  // namespace weft::kernels::x86
