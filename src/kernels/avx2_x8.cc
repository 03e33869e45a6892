// AVX2 kernels for the x8 weight layout (packed_x8.h) against Q8x32
// activations: 8 weight rows (the 8 lanes of each vector) x RC activation
// rows per call. Per block, vector j of the group holds 4 consecutive codes
// of each of the 8 rows; maddubs against the 4 matching activation bytes
// broadcast to every lane leaves each lane a partial dot of its own row,
// so a block's 8 integer dots come out of one madd with no horizontal sum,
// and its 8 scales convert with one vcvtph2ps.
//
// Per lane (weight row) and activation row, in block order:
//   acc = fma(float(isum), dw * da, acc);  corr = fma(dw, ds, corr)
//   y = acc - offset * corr
// Integer sums stay in int16 while they fit: Q4_0 codes (0..15) 8 maddubs
// (|sum| <= 8 * 2 * 15 * 128), Q5_0 codes (0..31) 4, Q8_0 (|w| with the
// activation's sign flipped by w, up to 2 * 127 * 128) 1.
//
// Bitwise contract (kernel_table.h): a pair's float operations do not
// depend on nr, nc or the pair's place in the tile.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/x8_internal.h"
#include "tensor/blocks.h"

namespace weft::kernels::avx2 {
namespace {

enum class Fmt { kQ4_0, kQ5_0, kQ8_0 };

// Bytes of one block of a group (8 rows): 8 of the format's blocks.
template <Fmt F>
constexpr int kGroupBlockBytes =
    kX8Rows* static_cast<int>(F == Fmt::kQ4_0   ? sizeof(BlockQ4_0)
                              : F == Fmt::kQ5_0 ? sizeof(BlockQ5_0)
                                                : sizeof(BlockQ8_0));
template <Fmt F>
constexpr int kOffset = F == Fmt::kQ4_0   ? 8
                        : F == Fmt::kQ5_0 ? 16
                                          : 0;

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

// Keeps an integer accumulation in program order: without it GCC
// reassociates the int16 sums into a tree over all of a block's maddubs
// results and spills them (64 stack accesses per Q4_0 block at 3 columns).
static inline void PinOrder(__m256i* v) { __asm__("" : "+x"(*v)); }

static inline __m256i Bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Codes of vector J of a Q4_0 / Q5_0 group block: lo = elements 4J..4J+3
// of each row, hi = 16+4J..16+4J+3.
template <Fmt F, int J>
static inline void Nibbles(const uint8_t* gb, __m256i* lo, __m256i* hi) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  constexpr int kCodes = 16 + (F == Fmt::kQ5_0 ? 32 : 0);
  const __m256i v = _mm256_loadu_si256(
      reinterpret_cast<const __m256i*>(gb + kCodes + 32 * J));
  *lo = _mm256_and_si256(v, m4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
  if constexpr (F == Fmt::kQ5_0) {
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

// s16[c] += the products of vector J's codes with activation row c.
template <Fmt F, int RC, int J>
static inline void NibbleStep(const uint8_t* gb, const int8_t* const* a,
                              __m256i* s16) {
  __m256i lo, hi;
  Nibbles<F, J>(gb, &lo, &hi);
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    s16[c] = _mm256_add_epi16(
        s16[c],
        _mm256_add_epi16(_mm256_maddubs_epi16(lo, Bcast4(a[c] + 4 * J)),
                         _mm256_maddubs_epi16(hi, Bcast4(a[c] + 16 + 4 * J))));
    PinOrder(&s16[c]);
  }
}

// s32[c] = the 8 rows' integer dots of one block with activation row c
// (a[c]: its 32 int8 values).
template <Fmt F, int RC>
static inline void BlockDots(const uint8_t* gb, const int8_t* const* a,
                             __m256i* s32) {
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (F == Fmt::kQ8_0) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i v = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(gb + 16 + 32 * j));
      const __m256i u = _mm256_sign_epi8(v, v);
#pragma GCC unroll 4
      for (int c = 0; c < RC; ++c) {
        const __m256i av = _mm256_sign_epi8(Bcast4(a[c] + 4 * j), v);
        const __m256i d = _mm256_madd_epi16(_mm256_maddubs_epi16(u, av), ones);
        // The first vector starts the sum (no add of zero).
        s32[c] = j == 0 ? d : _mm256_add_epi32(s32[c], d);
        PinOrder(&s32[c]);
      }
    }
  } else {
    __m256i s16[RC], t16[RC];
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) s16[c] = t16[c] = _mm256_setzero_si256();
    NibbleStep<F, RC, 0>(gb, a, s16);
    NibbleStep<F, RC, 1>(gb, a, s16);
    // Q4_0's codes fit 8 maddubs in int16, Q5_0's 4: a second sum.
    __m256i* second = F == Fmt::kQ4_0 ? s16 : t16;
    NibbleStep<F, RC, 2>(gb, a, second);
    NibbleStep<F, RC, 3>(gb, a, second);
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      s32[c] = _mm256_madd_epi16(s16[c], ones);
      if constexpr (F == Fmt::kQ5_0) {
        s32[c] = _mm256_add_epi32(s32[c], _mm256_madd_epi16(t16[c], ones));
      }
    }
  }
}

template <Fmt F, int RC>
void TileX8(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
            float* y, size_t y_stride) {
  constexpr int kGB = kGroupBlockBytes<F>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const int8_t* aq[RC];
  const float* ad[RC];
  const float* ads[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    aq[c] = reinterpret_cast<const int8_t*>(static_cast<const char*>(xq) +
                                            c * xq_stride);
    ad[c] = reinterpret_cast<const float*>(aq[c] + k);
    ads[c] = ad[c] + nb;
  }
  __m256 acc[RC], corr[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) acc[c] = corr[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    PrefetchAhead<kGB>(gb);
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
    const int8_t* a[RC];
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) a[c] = aq[c] + 32 * b;
    __m256i s32[RC];
    BlockDots<F, RC>(gb, a, s32);
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(ad[c][b]));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32[c]), s, acc[c]);
    }
  }
  // The offset correction in a second pass over the (cached) block scales:
  // its accumulators would not fit in registers beside 4 columns' sums.
  if constexpr (kOffset<F> != 0) {
    for (int64_t b = 0; b < nb; ++b) {
      const __m256 dw = _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + b * kGB)));
#pragma GCC unroll 4
      for (int c = 0; c < RC; ++c) {
        corr[c] = _mm256_fmadd_ps(dw, _mm256_set1_ps(ads[c][b]), corr[c]);
      }
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    __m256 v = acc[c];
    if constexpr (kOffset<F> != 0) {
      v = _mm256_fnmadd_ps(_mm256_set1_ps(static_cast<float>(kOffset<F>)),
                           corr[c], v);
    }
    StoreRows(v, nr, y + c * y_stride);
  }
}

// Columns of the wide Q5_0 tile.
constexpr int kX8WideCols = 16;

// Q5_0 against nc (up to kX8WideCols) activation rows: each block's codes
// are decoded once into registers and serve every column in turn, whose
// float accumulators live in L1, where TileX8 decodes them again for every
// kX8Cols columns. Per (row, column) the integer dot of each block is the
// same exact sum and the float operations are TileX8's, in the same order:
// the same bits. Q5_0's decode (its 5th bits) is worth it: kernels_bench
// M = 8 and 64 ran 8-12% faster, alternating builds; Q4_0's decode is too
// cheap to repay the accumulators' L1 traffic (the same or slower).
template <Fmt F>
void TileX8Wide(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride, int nc,
                float* y, size_t y_stride) {
  static_assert(F != Fmt::kQ8_0);  // Q4_0 works too, but see above
  constexpr int kGB = kGroupBlockBytes<F>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const char* x0 = static_cast<const char*>(xq);
  alignas(32) float acc[kX8WideCols][kX8Rows];
  alignas(32) float corr[kX8WideCols][kX8Rows];
  for (int c = 0; c < nc; ++c) {
    _mm256_store_ps(acc[c], _mm256_setzero_ps());
    _mm256_store_ps(corr[c], _mm256_setzero_ps());
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    PrefetchAhead<kGB>(gb);
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
    __m256i lo[4], hi[4];
    Nibbles<F, 0>(gb, &lo[0], &hi[0]);
    Nibbles<F, 1>(gb, &lo[1], &hi[1]);
    Nibbles<F, 2>(gb, &lo[2], &hi[2]);
    Nibbles<F, 3>(gb, &lo[3], &hi[3]);
    for (int c = 0; c < nc; ++c) {
      const int8_t* xc = reinterpret_cast<const int8_t*>(x0 + c * xq_stride);
      const int8_t* a = xc + 32 * b;
      const float* ad = reinterpret_cast<const float*>(xc + k);
      // Q4_0's codes fit 8 maddubs in int16, Q5_0's 4 (as in BlockDots).
      __m256i s16 = _mm256_setzero_si256(), t16 = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        __m256i& sum = F == Fmt::kQ5_0 && j >= 2 ? t16 : s16;
        sum = _mm256_add_epi16(
            sum, _mm256_add_epi16(_mm256_maddubs_epi16(lo[j], Bcast4(a + 4 * j)),
                                  _mm256_maddubs_epi16(hi[j], Bcast4(a + 16 + 4 * j))));
        PinOrder(&sum);
      }
      __m256i s32 = _mm256_madd_epi16(s16, ones);
      if constexpr (F == Fmt::kQ5_0) s32 = _mm256_add_epi32(s32, _mm256_madd_epi16(t16, ones));
      const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(ad[b]));
      _mm256_store_ps(acc[c],
                      _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), s, _mm256_load_ps(acc[c])));
      _mm256_store_ps(corr[c], _mm256_fmadd_ps(dw, _mm256_set1_ps(ad[nb + b]),
                                               _mm256_load_ps(corr[c])));
    }
  }
  for (int c = 0; c < nc; ++c) {
    const __m256 v = _mm256_fnmadd_ps(_mm256_set1_ps(static_cast<float>(kOffset<F>)),
                                      _mm256_load_ps(corr[c]), _mm256_load_ps(acc[c]));
    StoreRows(v, nr, y + c * y_stride);
  }
}

// Q4_K against Q8_K activations (packed_x8.h's Q4_K layout). Per chunk c
// (sub-blocks 2c, 2c+1) the 8 low-nibble and 8 high-nibble maddubs of a
// column add in int16 (|sum| <= 8 * 2 * 15 * 128), then madd with the
// row's scale in both halves of its lane gives sc * dot in int32; the
// mins madd against the pair (asum_2p, asum_2p+1) of the column. Per lane:
//   acc = fma(float(isum), d * da, acc)
//   accm = fma(float(msum), dmin * da, accm)
//   y = acc - accm
template <int RC>
void TileX8Q4K(int64_t k, const void* w, int nr, const void* xq,
               size_t xq_stride, float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(kX8Q4KBlockBytes);
  const int64_t nb = k / 256;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const BlockQ8_K* xb[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    xb[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(xq) +
                                               c * xq_stride);
  }
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256 acc[RC], accm[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) acc[c] = accm[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    PrefetchAhead<kGB>(gb);
    const int8_t* aq[RC];
    __m256i isum[RC];
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      aq[c] = xb[c][b].qs;
      isum[c] = _mm256_setzero_si256();
    }
#pragma GCC unroll 1
    for (int chunk = 0; chunk < 4; ++chunk) {
      const __m256i sca = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
          reinterpret_cast<const __m128i*>(gb + 32 + 16 * chunk)));
      const __m256i scb = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
          reinterpret_cast<const __m128i*>(gb + 40 + 16 * chunk)));
      const __m256i sc_lo = _mm256_or_si256(sca, _mm256_slli_epi32(sca, 16));
      const __m256i sc_hi = _mm256_or_si256(scb, _mm256_slli_epi32(scb, 16));
      __m256i s_lo[RC], s_hi[RC];
#pragma GCC unroll 4
      for (int c = 0; c < RC; ++c) s_lo[c] = s_hi[c] = _mm256_setzero_si256();
      const uint8_t* q = gb + 160 + 256 * chunk;
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * j));
        const __m256i lo = _mm256_and_si256(v, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = aq[c] + 64 * chunk + 4 * j;
          s_lo[c] =
              _mm256_add_epi16(s_lo[c], _mm256_maddubs_epi16(lo, Bcast4(a)));
          s_hi[c] = _mm256_add_epi16(s_hi[c],
                                     _mm256_maddubs_epi16(hi, Bcast4(a + 32)));
          PinOrder(&s_lo[c]);
          PinOrder(&s_hi[c]);
        }
      }
#pragma GCC unroll 4
      for (int c = 0; c < RC; ++c) {
        isum[c] = _mm256_add_epi32(
            isum[c], _mm256_add_epi32(_mm256_madd_epi16(s_lo[c], sc_lo),
                                      _mm256_madd_epi16(s_hi[c], sc_hi)));
      }
    }
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
    const __m256 dm = _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16)));
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      const int16_t* bs = xb[c][b].bsums;
      __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        // (asum of sub-block 2p, of 2p+1) as one int16 pair.
        const uint32_t lo = static_cast<uint16_t>(bs[4 * p] + bs[4 * p + 1]);
        const uint32_t hi =
            static_cast<uint16_t>(bs[4 * p + 2] + bs[4 * p + 3]);
        const __m256i m16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(
            reinterpret_cast<const __m128i*>(gb + 96 + 16 * p)));
        msum = _mm256_add_epi32(
            msum,
            _mm256_madd_epi16(
                m16, _mm256_set1_epi32(static_cast<int32_t>(lo | (hi << 16)))));
      }
      const __m256 vda = _mm256_set1_ps(xb[c][b].d);
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]),
                               _mm256_mul_ps(dw, vda), acc[c]);
      accm[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum),
                                _mm256_mul_ps(dm, vda), accm[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    const __m256 v = _mm256_sub_ps(acc[c], accm[c]);
    StoreRows(v, nr, y + c * y_stride);
  }
}

// Q6_K against Q8_K activations (packed_x8.h's Q6_K layout). Per sub-block
// (4 vectors) and column, the codes' maddubs add in pairs in int16
// (|sum| <= 2 * 2 * 63 * 128) and each pair's madd with the sub-block's
// scale (both halves of the lane) adds in int32; per super-block the
// column's bsums against the scale pairs give the -32 offset in integers:
//   isum = sum_s sc_s * dot_s - 32 * sum_s sc_s * asum_s
//   acc = fma(float(isum), d * da, acc)
template <int RC>
void TileX8Q6K(int64_t k, const void* w, int nr, const void* xq,
               size_t xq_stride, float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(sizeof(BlockQ6_K));
  const int64_t nb = k / kQK_K;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const BlockQ8_K* xb[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    xb[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(xq) +
                                               c * xq_stride);
  }
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  __m256 acc[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) acc[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    PrefetchAhead<kGB>(gb);
    __m256i isum[RC];
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) isum[c] = _mm256_setzero_si256();
#pragma GCC unroll 1
    for (int p = 0; p < 8; ++p) {
      // Lane i: (sc_2p, sc_2p+1) of row i; sub-block 2p's scale in both
      // halves of the lane, then 2p+1's.
      const __m256i pair = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16 + 16 * p)));
      const __m256i sc_pair[2] = {
          _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xa0), 0xa0),
          _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xf5), 0xf5)};
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        const __m256i sc = sc_pair[h];
        const uint8_t* sub = gb + kX8Q6KCodes + 96 * s;
        const __m256i la = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub));
        const __m256i lb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub + 32));
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub + 64));
        const __m256i c0 = _mm256_or_si256(_mm256_and_si256(la, m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
        const __m256i c1 = _mm256_or_si256(_mm256_and_si256(lb, m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
        const __m256i c2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
                                           _mm256_and_si256(hb, m30));
        const __m256i c3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                                           _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = xb[c][b].qs + 16 * s;
          const __m256i t0 = _mm256_add_epi16(_mm256_maddubs_epi16(c0, Bcast4(a)),
                                              _mm256_maddubs_epi16(c1, Bcast4(a + 4)));
          const __m256i t1 = _mm256_add_epi16(_mm256_maddubs_epi16(c2, Bcast4(a + 8)),
                                              _mm256_maddubs_epi16(c3, Bcast4(a + 12)));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_madd_epi16(t0, sc),
                                                               _mm256_madd_epi16(t1, sc)));
          PinOrder(&isum[c]);
        }
      }
    }
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      const int16_t* bs = xb[c][b].bsums;
      __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int p = 0; p < 8; ++p) {
        const __m256i pair = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16 + 16 * p)));
        int32_t bpair;  // (asum of sub-block 2p, of 2p+1) as one int16 pair
        std::memcpy(&bpair, bs + 2 * p, 4);
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(pair, _mm256_set1_epi32(bpair)));
      }
      const __m256i total = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(msum, 5));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total),
                               _mm256_mul_ps(dw, _mm256_set1_ps(xb[c][b].d)), acc[c]);
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) StoreRows(acc[c], nr, y + c * y_stride);
}

// Q6_K against nc (up to kX8WideCols) activation rows: each sub-block's
// codes are decoded once for every column (TileX8Q6K decodes them once per
// 3), whose integer and float sums live in L1. The same integer sums and
// float operations per (row, column) as TileX8Q6K: the same bits.
void TileX8Q6KWide(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride, int nc,
                   float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(sizeof(BlockQ6_K));
  const int64_t nb = k / kQK_K;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const char* x0 = static_cast<const char*>(xq);
  auto column = [&](int c) { return reinterpret_cast<const BlockQ8_K*>(x0 + c * xq_stride); };
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  alignas(32) float acc[kX8WideCols][kX8Rows];
  alignas(32) int32_t isum[kX8WideCols][kX8Rows];
  for (int c = 0; c < nc; ++c) _mm256_store_ps(acc[c], _mm256_setzero_ps());
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    PrefetchAhead<kGB>(gb);
    for (int c = 0; c < nc; ++c) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(isum[c]), _mm256_setzero_si256());
    }
#pragma GCC unroll 1
    for (int p = 0; p < 8; ++p) {
      const __m256i pair = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16 + 16 * p)));
      const __m256i sc_pair[2] = {
          _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xa0), 0xa0),
          _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(pair, 0xf5), 0xf5)};
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        const __m256i sc = sc_pair[h];
        const uint8_t* sub = gb + kX8Q6KCodes + 96 * s;
        const __m256i la = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub));
        const __m256i lb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub + 32));
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sub + 64));
        const __m256i c0 = _mm256_or_si256(_mm256_and_si256(la, m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
        const __m256i c1 = _mm256_or_si256(_mm256_and_si256(lb, m4),
                                           _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
        const __m256i c2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), m4),
                                           _mm256_and_si256(hb, m30));
        const __m256i c3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), m4),
                                           _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
        for (int c = 0; c < nc; ++c) {
          const int8_t* a = column(c)[b].qs + 16 * s;
          const __m256i t0 = _mm256_add_epi16(_mm256_maddubs_epi16(c0, Bcast4(a)),
                                              _mm256_maddubs_epi16(c1, Bcast4(a + 4)));
          const __m256i t1 = _mm256_add_epi16(_mm256_maddubs_epi16(c2, Bcast4(a + 8)),
                                              _mm256_maddubs_epi16(c3, Bcast4(a + 12)));
          __m256i* is = reinterpret_cast<__m256i*>(isum[c]);
          _mm256_store_si256(
              is, _mm256_add_epi32(_mm256_load_si256(is),
                                   _mm256_add_epi32(_mm256_madd_epi16(t0, sc),
                                                    _mm256_madd_epi16(t1, sc))));
        }
      }
    }
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
    for (int c = 0; c < nc; ++c) {
      const BlockQ8_K& xb = column(c)[b];
      __m256i msum = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int p = 0; p < 8; ++p) {
        const __m256i pair = _mm256_cvtepi8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16 + 16 * p)));
        int32_t bpair;  // (asum of sub-block 2p, of 2p+1) as one int16 pair
        std::memcpy(&bpair, xb.bsums + 2 * p, 4);
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(pair, _mm256_set1_epi32(bpair)));
      }
      const __m256i total =
          _mm256_sub_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(isum[c])),
                           _mm256_slli_epi32(msum, 5));
      _mm256_store_ps(acc[c], _mm256_fmadd_ps(_mm256_cvtepi32_ps(total),
                                              _mm256_mul_ps(dw, _mm256_set1_ps(xb.d)),
                                              _mm256_load_ps(acc[c])));
    }
  }
  for (int c = 0; c < nc; ++c) StoreRows(_mm256_load_ps(acc[c]), nr, y + c * y_stride);
}

// Calls tile(std::integral_constant<int, RC>{}) with RC = min(nc, kMax):
// the register tile of nc activation rows.
template <int kMax, int RC = 1, typename Tile>
static inline void WithCols(int nc, Tile&& tile) {
  if constexpr (RC < kMax) {
    if (nc > RC) return WithCols<kMax, RC + 1>(nc, tile);
  }
  tile(std::integral_constant<int, RC>{});
}

// Activation rows per Q4_0 / Q5_0 / Q8_0 tile call: a weight vector's load
// and decode serve 4 columns (B = 8 runs as 4 + 4; Q5_0 takes up to
// kX8WideCols at once, TileX8Wide).
constexpr int kX8Cols = 4;
// Q4_K's and Q6_K's tiles: their per-column sums leave room for 3.
constexpr int kX8ColsQ4K = 3;

// TileFn entries: the tiles above for nc activation rows.
template <Fmt F>
void TileNX8(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
             size_t xq_stride, int nc, float* y, size_t y_stride) {
  if constexpr (F == Fmt::kQ5_0) {
    if (nc > kX8Cols) return TileX8Wide<F>(k, w, nr, xq, xq_stride, nc, y, y_stride);
  }
  WithCols<kX8Cols>(nc, [&](auto rc) {
    TileX8<F, decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

void TileNX8Q4K(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                size_t xq_stride, int nc, float* y, size_t y_stride) {
  WithCols<kX8ColsQ4K>(nc, [&](auto rc) {
    TileX8Q4K<decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

void TileNX8Q6K(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                size_t xq_stride, int nc, float* y, size_t y_stride) {
  if (nc > kX8ColsQ4K) return TileX8Q6KWide(k, w, nr, xq, xq_stride, nc, y, y_stride);
  WithCols<kX8ColsQ4K>(nc, [&](auto rc) {
    TileX8Q6K<decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

}  // namespace

void FillX8(KernelTable* t) {
  static_assert(kX8WideCols <= kMaxTileCols && kX8ColsQ4K <= kMaxTileCols &&
                kX8Rows <= kMaxTileRows);
  const QuantizeActFn q8 =
      t->matmul[static_cast<int>(WeightFormat::kQ8_0)].quantize;
  auto set = [&](WeightFormat f, TileFn tile, int cols) {
    t->matmul_x8[static_cast<int>(f)] =
        MatMulKernel{ActFormat::kQ8x32, q8, nullptr, tile, kX8Rows, cols};
  };
  set(WeightFormat::kQ4_0, TileNX8<Fmt::kQ4_0>, kX8Cols);
  set(WeightFormat::kQ5_0, TileNX8<Fmt::kQ5_0>, kX8WideCols);
  set(WeightFormat::kQ8_0, TileNX8<Fmt::kQ8_0>, kX8Cols);
  const QuantizeActFn q8k =
      t->matmul[static_cast<int>(WeightFormat::kQ4_K)].quantize;
  t->matmul_x8[static_cast<int>(WeightFormat::kQ4_K)] =
      MatMulKernel{ActFormat::kQ8K, q8k, nullptr, TileNX8Q4K, kX8Rows, kX8ColsQ4K};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ6_K)] =
      MatMulKernel{ActFormat::kQ8K, q8k, nullptr, TileNX8Q6K, kX8Rows, kX8WideCols};
}

}  // namespace weft::kernels::avx2
