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
// activation's sign flipped by w, up to 2 * 127 * 128) 1, MXFP4 (the same
// with |w| <= 12) 8. MXFP4's float steps are its scalar twin's
// (scalar_x8.cc), so its outputs are that twin's bits.
//
// Bitwise contract (kernel_table.h): a pair's float operations do not
// depend on nr, nc or the pair's place in the tile.
//
// The K-quant tiles are in avx2_x8_kquants.cc.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/avx2_x8_common.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/simd_x86.h"
#include "kernels/x8_internal.h"
#include "tensor/blocks.h"

namespace weft::kernels::avx2 {
namespace {

using Fmt = X8Fmt;

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
  if constexpr (F == Fmt::kIQ4_NL) {
    // Q4_0's nibbles through the table to signed values, then Q8_0's
    // signed product (|pair| <= 2 * 127 * 128), one int32 step per vector.
    const __m256i table = x86::ByteTable16(kIQ4NLValues);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 16 + 32 * j));
      __m256i lo, hi;
      TableNibbles(table, v, &lo, &hi);
      const __m256i ulo = _mm256_sign_epi8(lo, lo), uhi = _mm256_sign_epi8(hi, hi);
#pragma GCC unroll 4
      for (int c = 0; c < RC; ++c) {
        const __m256i plo = _mm256_maddubs_epi16(ulo, _mm256_sign_epi8(Bcast4(a[c] + 4 * j), lo));
        const __m256i phi =
            _mm256_maddubs_epi16(uhi, _mm256_sign_epi8(Bcast4(a[c] + 16 + 4 * j), hi));
        const __m256i d = _mm256_add_epi32(_mm256_madd_epi16(plo, ones), _mm256_madd_epi16(phi, ones));
        s32[c] = j == 0 ? d : _mm256_add_epi32(s32[c], d);
        PinOrder(&s32[c]);
      }
    }
  } else if constexpr (F == Fmt::kMXFP4) {
    __m256i s16[RC];
    MXFP4Dots16<RC>(gb, a, s16);
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) s32[c] = _mm256_madd_epi16(s16[c], ones);
  } else if constexpr (F == Fmt::kQ8_0) {
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
    __m256i* second = kX8Has5th<F> ? t16 : s16;
    NibbleStep<F, RC, 2>(gb, a, second);
    NibbleStep<F, RC, 3>(gb, a, second);
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      s32[c] = _mm256_madd_epi16(s16[c], ones);
      if constexpr (kX8Has5th<F>) {
        s32[c] = _mm256_add_epi32(s32[c], _mm256_madd_epi16(t16[c], ones));
      }
    }
  }
}

// The weight factor of group block gb's correction term: the rows' mins
// for Q4_1 / Q5_1, else their scales dw (the block's converted d).
template <Fmt F>
static inline __m256 CorrW(const uint8_t* gb, __m256 dw) {
  if constexpr (kX8HasMin<F>) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16)));
  } else {
    return dw;
  }
}

template <Fmt F, int RC>
void TileX8(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
            float* y, size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  Q8x32Row x[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) x[c] = Q8x32RowAt(xq, xq_stride, c, k);
  // The offset correction's chain of FMAs (one per block, each waiting on
  // the last) runs inside the block loop, hidden behind the integer work,
  // for up to 2 columns; for more, its accumulators would not fit in
  // registers beside the columns' sums, and it runs in a second pass over
  // the (cached) block scales. The same FMAs in the same order either way.
  // Q4_1 / Q5_1: the same chain over the mins (cw = m), added at the end.
  constexpr bool kCorr = kX8Offset<F> != 0 || kX8HasMin<F>;
  constexpr bool kCorrInLoop = kCorr && RC <= 2;
  __m256 acc[RC], corr[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) acc[c] = corr[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    PrefetchAhead<kGB>(gb);
    const __m256 dw = X8Scales<F>(gb);
    const int8_t* a[RC];
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) a[c] = x[c].qs + 32 * b;
    __m256i s32[RC];
    BlockDots<F, RC>(gb, a, s32);
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(x[c].d[b]));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32[c]), s, acc[c]);
      if constexpr (kCorrInLoop) {
        corr[c] = _mm256_fmadd_ps(CorrW<F>(gb, dw), _mm256_set1_ps(x[c].ds[b]), corr[c]);
      }
    }
  }
  if constexpr (kCorr && !kCorrInLoop) {
    for (int64_t b = 0; b < nb; ++b) {
      const __m256 dw = CorrW<F>(
          g + b * kGB,
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g + b * kGB))));
#pragma GCC unroll 4
      for (int c = 0; c < RC; ++c) {
        corr[c] = _mm256_fmadd_ps(dw, _mm256_set1_ps(x[c].ds[b]), corr[c]);
      }
    }
  }
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    __m256 v = acc[c];
    if constexpr (kX8HasMin<F>) {
      v = _mm256_add_ps(v, corr[c]);
    } else if constexpr (kX8Offset<F> != 0) {
      v = _mm256_fnmadd_ps(_mm256_set1_ps(static_cast<float>(kX8Offset<F>)),
                           corr[c], v);
    }
    StoreRows(v, nr, y + c * y_stride);
  }
}

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
  constexpr int kGB = kX8GroupBlockBytes<F>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
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
      const Q8x32Row x = Q8x32RowAt(xq, xq_stride, c, k);
      const int8_t* a = x.qs + 32 * b;
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
      const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(x.d[b]));
      _mm256_store_ps(acc[c],
                      _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), s, _mm256_load_ps(acc[c])));
      _mm256_store_ps(corr[c], _mm256_fmadd_ps(dw, _mm256_set1_ps(x.ds[b]),
                                               _mm256_load_ps(corr[c])));
    }
  }
  for (int c = 0; c < nc; ++c) {
    const __m256 v = _mm256_fnmadd_ps(_mm256_set1_ps(static_cast<float>(kX8Offset<F>)),
                                      _mm256_load_ps(corr[c]), _mm256_load_ps(acc[c]));
    StoreRows(v, nr, y + c * y_stride);
  }
}

// Activation rows per Q4_0 / Q5_0 / Q8_0 tile call: a weight vector's load
// and decode serve 4 columns (B = 8 runs as 4 + 4; Q5_0 takes up to
// kX8WideCols at once, TileX8Wide).
constexpr int kX8Cols = 4;

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

}  // namespace

void FillX8(KernelTable* t) {
  static_assert(kX8WideCols <= kMaxTileCols && kX8Rows <= kMaxTileRows);
  const QuantizeActFn q8 =
      t->matmul[static_cast<int>(WeightFormat::kQ8_0)].quantize;
  auto set = [&](WeightFormat f, TileFn tile, int cols) {
    t->matmul_x8[static_cast<int>(f)] =
        MatMulKernel{ActFormat::kQ8x32, q8, nullptr, tile, kX8Rows, cols};
  };
  set(WeightFormat::kQ4_0, TileNX8<Fmt::kQ4_0>, kX8Cols);
  set(WeightFormat::kQ5_0, TileNX8<Fmt::kQ5_0>, kX8WideCols);
  set(WeightFormat::kQ8_0, TileNX8<Fmt::kQ8_0>, kX8Cols);
  set(WeightFormat::kIQ4_NL, TileNX8<Fmt::kIQ4_NL>, kX8Cols);
  set(WeightFormat::kQ4_1, TileNX8<Fmt::kQ4_1>, kX8Cols);
  set(WeightFormat::kQ5_1, TileNX8<Fmt::kQ5_1>, kX8Cols);
  set(WeightFormat::kMXFP4, TileNX8<Fmt::kMXFP4>, kX8Cols);
  FillX8KQuants(t);
}

}  // namespace weft::kernels::avx2
