// Helpers shared by the AVX2 x8 tile files (avx2_x8.cc, avx2_x8_kquants.cc)
// and the AVX-512 table's VNNI x8 tiles (x8_vnni_impl.h).
// Include ONLY from translation units compiled with AVX2 flags; every
// function is `static inline` (see simd_x86.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/packed_x8.h"
#include "kernels/simd_x86.h"
#include "kernels/x8_internal.h"
#include "tensor/blocks.h"

namespace weft::kernels::avx2 {

// Activation rows of a wide tile (TileX8Wide, TileX8Q6KWide): a block's
// codes are decoded once for all of them and their sums live in L1.
constexpr int kX8WideCols = 16;

// Software prefetch distance in bytes along the group's stream.
constexpr size_t kAhead = 2048;

// Prefetches the kBytes of the group block kDist bytes past gb, one line
// at a time (integer arithmetic: the address may lie past the matrix; a
// prefetch never faults, but a pointer may not point there).
// `extra`: further bytes on top of kDist.
template <int kBytes, size_t kDist = kAhead>
static inline void PrefetchAhead(const uint8_t* gb, size_t extra = 0) {
#pragma GCC unroll 20
  for (int off = 0; off < kBytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(gb) +
                                               kDist + extra + off),
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

// The 8 rows' E8M0 scale bytes at p (an MXFP4 group block) as floats,
// bitwise E8M0ToFp32Half: 2^(e - 128), the denormals 2^-128 and 2^-127 for
// e = 0 and 1.
static inline __m256 E8M0Scales(const uint8_t* p) {
  const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i denormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i is_normal = _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1));
  return _mm256_castsi256_ps(_mm256_blendv_epi8(denormal, normal, is_normal));
}

// The 8 rows' block scales dw of a 32-element format's group block: fp16,
// or MXFP4's E8M0 bytes.
template <X8Fmt F>
static inline __m256 X8Scales(const uint8_t* gb) {
  if constexpr (F == X8Fmt::kMXFP4) {
    return E8M0Scales(gb);
  } else {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
  }
}

// MXFP4: s16[c] = the 8 rows' dots of one group block's values (its codes
// through kMXFP4Values, |v| <= 12) with activation row c (a[c]: its 32
// int8 values), as int16 pairs: |v| against the activations with v's sign
// (vpmaddubsw's unsigned operand), each maddubs pair at most 2 * 12 * 128
// in magnitude, so the block's 8 maddubs per lane sum exactly in int16
// (<= 8 * 3072). vpmaddwd with ones then gives the int32 dots.
template <int RC>
static inline void MXFP4Dots16(const uint8_t* gb, const int8_t* const* a, __m256i* s16) {
  const __m256i table = x86::ByteTable16(kMXFP4Values);
  const __m256i m4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m256i v =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kX8Codes<X8Fmt::kMXFP4> + 32 * j));
    const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, m4));
    const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    const __m256i ulo = _mm256_sign_epi8(lo, lo), uhi = _mm256_sign_epi8(hi, hi);
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      const __m256i p = _mm256_add_epi16(
          _mm256_maddubs_epi16(ulo, _mm256_sign_epi8(x86::Bcast4(a[c] + 4 * j), lo)),
          _mm256_maddubs_epi16(uhi, _mm256_sign_epi8(x86::Bcast4(a[c] + 16 + 4 * j), hi)));
      s16[c] = j == 0 ? p : _mm256_add_epi16(s16[c], p);
      x86::PinOrder(&s16[c]);
    }
  }
}

// Codes of vector J of a Q4_0 / Q5_0 / Q4_1 / Q5_1 group block: lo =
// elements 4J..4J+3 of each row, hi = 16+4J..16+4J+3.
template <X8Fmt F, int J>
static inline void Nibbles(const uint8_t* gb, __m256i* lo, __m256i* hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  constexpr int kCodes = kX8Codes<F>;
  const __m256i v = _mm256_loadu_si256(
      reinterpret_cast<const __m256i*>(gb + kCodes + 32 * J));
  *lo = _mm256_and_si256(v, m4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  if constexpr (kX8Has5th<F>) {
    const __m256i m16 = _mm256_set1_epi8(0x10);
    const __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kX8High<F>));
    // Bit J -> bit 4 (left shift 4 - J), bit 4 + J -> bit 4 (right shift J);
    // bits crossing a byte boundary land away from bit 4.
    *lo = _mm256_or_si256(*lo,
                          _mm256_and_si256(_mm256_slli_epi16(h, 4 - J), m16));
    *hi = _mm256_or_si256(*hi, _mm256_and_si256(_mm256_srli_epi16(h, J), m16));
  }
}

// The low and high nibbles of v's bytes through a 16-byte table
// (x86::ByteTable16): IQ4_NL / IQ4_XS codes to their values.
static inline void TableNibbles(__m256i table, __m256i v, __m256i* lo, __m256i* hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  *lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, m4));
  *hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
}

using x86::Bcast4;
using x86::PinOrder;

// The Q8_K blocks of RC activation rows xq_stride bytes apart: xb[c] is
// row c's (the K-quant x8 tiles' columns).
template <int RC>
static inline void Q8KColumns(const void* xq, size_t xq_stride,
                              const BlockQ8_K** xb) {
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    xb[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(xq) +
                                               c * xq_stride);
  }
}

// Q5_K: the 5th bits of vector j's codes as bit 4 of each byte, from a
// chunk's h vector (bit j of each byte; packed_x8.h).
static inline __m256i Bit5(__m256i h, int j) {
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  return j <= 4 ? _mm256_and_si256(_mm256_slli_epi16(h, 4 - j), bit4)
                : _mm256_and_si256(_mm256_srli_epi16(h, j - 4), bit4);
}

// Q2_K group super-block (packed_x8.h): pair p's scale bytes (sc | m << 4
// of groups 2p, 2p + 1), row i's as two int16 in lane i.
static inline __m256i Q2KPair(const uint8_t* gb, int p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 32 + 16 * p)));
}

// Q2_K: sum_s m_s * asum_s per row in int32 (bs: the column's 16 group
// sums), the mins' integer part.
static inline __m256i Q2KScaledMins(const uint8_t* gb, const int16_t* bs) {
  __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) {
    int32_t pair;  // (asum of group 2p, of 2p + 1) as one int16 pair
    std::memcpy(&pair, bs + 2 * p, 4);
    msum = _mm256_add_epi32(msum, _mm256_madd_epi16(_mm256_srli_epi16(Q2KPair(gb, p), 4),
                                                     _mm256_set1_epi32(pair)));
  }
  return msum;
}

// Q2_K: super-block b's float step for RC columns (xb: Q8KColumns; isum[c]:
// column c's sum_s sc_s * dot_s per row), as Q4KFinishBlock.
template <int RC>
static inline void Q2KFinishBlock(const uint8_t* gb, const BlockQ8_K* const* xb, int64_t b,
                                  const __m256i* isum, __m256* acc, __m256* accm) {
  const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
  const __m256 dm =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16)));
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    const __m256i msum = Q2KScaledMins(gb, xb[c][b].bsums);
    const __m256 vda = _mm256_set1_ps(xb[c][b].d);
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_mul_ps(dw, vda), acc[c]);
    accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dm, vda), accm[c]);
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

// Q4_K (kQ5: Q5_K) chunk c's 5th-bit vectors (h_lo: sub-block 2c's, h_hi:
// 2c + 1's; zero for Q4_K).
template <bool kQ5>
static inline void Q45KChunkHigh(const uint8_t* gb, int chunk, __m256i* h_lo, __m256i* h_hi) {
  *h_lo = *h_hi = _mm256_setzero_si256();
  if constexpr (kQ5) {
    const uint8_t* h = gb + kX8Rows * kX8Q4KBlockBytes + 64 * chunk;
    *h_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h));
    *h_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + 32));
  }
}

// The codes of vector j of Q4_K (kQ5: Q5_K) chunk c: *lo of sub-block 2c,
// *hi of 2c + 1, each row's 4 in its lane (h_lo, h_hi: Q45KChunkHigh).
template <bool kQ5>
static inline void Q45KCodes(const uint8_t* gb, int chunk, int j, __m256i h_lo, __m256i h_hi,
                             __m256i* lo, __m256i* hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i v =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 160 + 256 * chunk + 32 * j));
  *lo = _mm256_and_si256(v, m4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  if constexpr (kQ5) {
    *lo = _mm256_or_si256(*lo, Bit5(h_lo, j));
    *hi = _mm256_or_si256(*hi, Bit5(h_hi, j));
  }
}

// Q4_K: super-block b's float step for RC columns (xb: Q8KColumns; isum[c]:
// column c's sum_s sc_s * dot_s per row): the operations every Q4_K x8 tile
// does per pair, and so the bits they give.
template <int RC>
static inline void Q4KFinishBlock(const uint8_t* gb, const BlockQ8_K* const* xb,
                                  int64_t b, const __m256i* isum, __m256* acc,
                                  __m256* accm) {
  const __m256 dw =
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
  const __m256 dm = _mm256_cvtph_ps(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16)));
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    const __m256i msum = Q4KScaledMins(gb, xb[c][b].bsums);
    const __m256 vda = _mm256_set1_ps(xb[c][b].d);
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]),
                             _mm256_mul_ps(dw, vda), acc[c]);
    accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_mul_ps(dm, vda),
                              accm[c]);
  }
}

// Q6_K group super-block pieces (packed_x8.h), shared by the AVX2 tiles
// (TileX8Q6K, TileX8Q6KWide) and the VNNI one (x8_vnni_impl.h).

// The int8 scales of sub-blocks 2p (`even`) and 2p + 1 (`odd`), each row's
// in both int16 halves of its lane.
static inline void Q6KScales(const uint8_t* gb, int p, __m256i* even,
                             __m256i* odd) {
  const __m256i pair = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16 + 16 * p)));
  *even = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xa0), 0xa0);
  *odd = _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xf5), 0xf5);
}

// The 6-bit codes of sub-block s: vectors 0..3 (elements 16s + 4j ..).
struct Q6KCodes {
  __m256i c0, c1, c2, c3;
};

static inline Q6KCodes Q6KDecode(const uint8_t* gb, int s) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  const uint8_t* sub = gb + kX8Q6KCodes + 96 * s;
  const __m256i la = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub));
  const __m256i lb =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub + 32));
  const __m256i hb =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub + 64));
  return {_mm256_or_si256(_mm256_and_si256(la, m4),
                          _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30)),
          _mm256_or_si256(_mm256_and_si256(lb, m4),
                          _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
                          _mm256_and_si256(hb, m30)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                          _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30))};
}

// The 3-bit codes u (0..7) of Q3_K group s (packed_x8.h), as Q6KCodes: the
// low 2 bits from the group's vector, the 3rd (bit 4h + u of the pair's h
// vector, h = s % 2) moved to bit 2.
static inline __m256i Q3KBit3(__m256i hv, int bit) {
  const __m256i m = _mm256_set1_epi8(4);
  return bit >= 2 ? _mm256_and_si256(_mm256_srli_epi16(hv, bit - 2), m)
                  : _mm256_and_si256(_mm256_slli_epi16(hv, 2 - bit), m);
}

static inline Q6KCodes Q3KDecode(const uint8_t* gb, int s) {
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i v =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kX8Q3KCodes + 32 * s));
  const __m256i hv =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kX8Q3KHigh + 32 * (s / 2)));
  const int b0 = 4 * (s % 2);
  return {_mm256_or_si256(_mm256_and_si256(v, m3), Q3KBit3(hv, b0)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 2), m3), Q3KBit3(hv, b0 + 1)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m3), Q3KBit3(hv, b0 + 2)),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 6), m3), Q3KBit3(hv, b0 + 3))};
}

// sc * (the sub-block's codes . a), per row in int32 (a: its 16 int8
// activations).
static inline __m256i Q6KSubDot(const Q6KCodes& q, __m256i sc,
                                const int8_t* a) {
  const __m256i t0 =
      _mm256_add_epi16(_mm256_maddubs_epi16(q.c0, Bcast4(a)),
                       _mm256_maddubs_epi16(q.c1, Bcast4(a + 4)));
  const __m256i t1 =
      _mm256_add_epi16(_mm256_maddubs_epi16(q.c2, Bcast4(a + 8)),
                       _mm256_maddubs_epi16(q.c3, Bcast4(a + 12)));
  return _mm256_add_epi32(_mm256_madd_epi16(t0, sc), _mm256_madd_epi16(t1, sc));
}

// sum_s sc_s * asum_s per row (bsums: the column's 16 sub-block sums): the
// -32 offset's integer part.
static inline __m256i Q6KScaledAsums(const uint8_t* gb, const int16_t* bsums) {
  __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) {
    const __m256i pair = _mm256_cvtepi8_epi16(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16 + 16 * p)));
    int32_t bpair;  // (asum of sub-block 2p, of 2p+1) as one int16 pair
    std::memcpy(&bpair, bsums + 2 * p, 4);
    msum = _mm256_add_epi32(msum,
                            _mm256_madd_epi16(pair, _mm256_set1_epi32(bpair)));
  }
  return msum;
}

// Q6_K: super-block b's float step for one column (xb: its Q8_K block;
// isum: sum_s sc_s * dot_s per row; dw: the rows' d): the -32 offset in
// integers, then the scale, as every Q6_K x8 tile does per pair, and so
// the bits they give. Returns the new accumulator.
// kShift: log2 of the codes' offset (Q6_K 32; Q3_K, laid out alike, 4).
template <int kShift = 5>
static inline __m256 Q6KAccumulate(const uint8_t* gb, __m256 dw, __m256i isum,
                                   const BlockQ8_K& xb, __m256 acc) {
  const __m256i total = _mm256_sub_epi32(
      isum, _mm256_slli_epi32(Q6KScaledAsums(gb, xb.bsums), kShift));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(total),
                         _mm256_mul_ps(dw, _mm256_set1_ps(xb.d)), acc);
}

// Q6_K (kShift 2: Q3_K): super-block b's float step for RC columns, by
// Q6KAccumulate.
template <int RC, int kShift>
static inline void Q6KFinishBlock(const uint8_t* gb, const BlockQ8_K* const* xb, int64_t b,
                                  const __m256i* isum, __m256* acc) {
  const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) acc[c] = Q6KAccumulate<kShift>(gb, dw, isum[c], xb[c][b], acc[c]);
}

// IQ4_XS: super-block b's float step for RC columns (isum[c]: column c's
// sum_s sc_s * dot_s per row).
template <int RC>
static inline void IQ4XSFinishBlock(const uint8_t* gb, const BlockQ8_K* const* xb, int64_t b,
                                    const __m256i* isum, __m256* acc) {
  const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]),
                             _mm256_mul_ps(dw, _mm256_set1_ps(xb[c][b].d)), acc[c]);
  }
}

// The frame of the K-quant and IQ4_XS x8 tiles (here and x8_vnni_impl.h),
// for RC Q8_K activation rows (xb: Q8KColumns) and group blocks of kGB
// bytes. Per super-block b, in order: the RC columns' integer sums isum[c]
// start at zero, sums(gb, b, isum) adds the tile's, and step(gb, b, isum,
// acc, accm) adds its float step (accm: the mins' part, kMins only). Then
// y = acc - accm (kMins) or acc.
template <int RC, int kGB, bool kMins, typename Sums, typename Step>
[[gnu::always_inline]] static inline void TileKFrame(int64_t k, const void* w, int nr, float* y,
                                                     size_t y_stride, Sums&& sums, Step&& step) {
  const int64_t nb = k / kQK_K;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  __m256 acc[RC], accm[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) acc[c] = accm[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    PrefetchAhead<kGB>(gb);
    __m256i isum[RC];
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) isum[c] = _mm256_setzero_si256();
    sums(gb, b, isum);
    step(gb, b, isum, acc, accm);
  }
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    StoreRows(kMins ? _mm256_sub_ps(acc[c], accm[c]) : acc[c], nr, y + c * y_stride);
  }
}

}  // namespace weft::kernels::avx2
