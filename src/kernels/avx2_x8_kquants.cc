// AVX2 x8 tiles of the K-quants and IQ4_XS (packed_x8.h's Q2_K .. Q6_K and
// IQ4_XS layouts)
// against Q8_K activations; the legacy formats' tiles and the frame they
// share are described in avx2_x8.cc.
//
// Bitwise contract (kernel_table.h): a pair's float operations do not
// depend on nr, nc or the pair's place in the tile.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/avx2_x8_common.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/x8_internal.h"
#include "tensor/blocks.h"

namespace weft::kernels::avx2 {
namespace {

// Activation rows per 3-row Q4_K / Q6_K tile call: their per-column sums
// leave room for 3 (Q6_K takes up to kX8WideCols at once, TileX8Q6KWide).
constexpr int kX8ColsQ4K = 3;
// Q5_K takes 4 since its tile sums one sub-block at a time (four int16
// and four int32 sums fit beside the codes): BM_TileX8InL1 at 16 columns
// 63 -> 74 GMAC/s, pp512 of Q5_K_M +1-21% over three rounds on a Zen 3
// VM. Q4_K gained less in L1 (85 -> 93) and its files' pp512 did not
// move clearly (Q3_K_M lower in two of three rounds), so it keeps 3.
constexpr int kX8ColsQ5K = 4;
// IQ4_XS takes 4: its int32 sums need no per-column int16 partials, and a
// code vector's table lookups and absolute values then serve 4 columns
// (pp512 on a Zen 3 VM +2-11% over 3, four alternating rounds).
constexpr int kX8ColsIQ4XS = 4;

// Q4_K against Q8_K activations (packed_x8.h's Q4_K layout). Per chunk c,
// one sub-block at a time (2c from the low nibbles, then 2c + 1 from the
// high): a column's maddubs add in int16 over the sub-block's 8 vectors
// (|sum| <= 8 * 2 * 15 * 128), then madd with the row's scale in both
// halves of its lane gives sc * dot in int32; the mins madd against the
// pair (asum_2p, asum_2p+1) of the column. Per lane:
//   acc = fma(float(isum), d * da, acc)
//   accm = fma(float(msum), dmin * da, accm)
//   y = acc - accm
//
// kQ5: Q5_K (the Q5_K layout), each code's 5th bit or-ed in as bit 4 from
// the chunk's h vectors (Bit5); the int16 sums then go to int32 every 4
// vectors (|sum| <= 4 * 2 * 31 * 128).
//
// Both sub-blocks of a chunk at once (as before 2026-12-05) left too few
// registers for 3 columns: GCC spilled ~100 times per call. One at a time,
// BM_TileX8InL1 at 16 columns on a Zen 3 VM: Q4_K 73 -> 84, Q5_K 54 -> 64
// GMAC/s (medians of six rounds). The int32 sums are the same in any
// order, so the outputs did not change.
template <int RC, bool kQ5 = false>
void TileX8Q4K(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
               float* y, size_t y_stride) {
  constexpr int kGB =
      kX8Rows * static_cast<int>(kQ5 ? kX8Q5KBlockBytes : kX8Q4KBlockBytes);
  constexpr int kPer = kQ5 ? 4 : 8;  // vectors per int16 sum
  const BlockQ8_K* xb[RC];
  Q8KColumns<RC>(xq, xq_stride, xb);
  auto sums = [&](const uint8_t* gb, int64_t b, __m256i* isum) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 1
    for (int chunk = 0; chunk < 4; ++chunk) {
      __m256i sca, scb;
      Q4KChunkScales(gb, chunk, &sca, &scb);
      __m256i h_lo, h_hi;
      Q45KChunkHigh<kQ5>(gb, chunk, &h_lo, &h_hi);
      const uint8_t* codes = gb + 160 + 256 * chunk;
#pragma GCC unroll 1
      for (int half = 0; half < 2; ++half) {
        const __m256i sc = half == 0 ? sca : scb;
        const __m256i sc16 = _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));
        const __m256i h = half == 0 ? h_lo : h_hi;
#pragma GCC unroll 2
        for (int q = 0; q < 8 / kPer; ++q) {
          __m256i s16[RC];
#pragma GCC unroll 4
          for (int c = 0; c < RC; ++c) s16[c] = _mm256_setzero_si256();
#pragma GCC unroll 8
          for (int jj = 0; jj < kPer; ++jj) {
            const int j = kPer * q + jj;
            const __m256i v =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 32 * j));
            const __m256i nib = half == 0 ? v : _mm256_srli_epi16(v, 4);
            __m256i code = _mm256_and_si256(nib, m4);
            if constexpr (kQ5) code = _mm256_or_si256(code, Bit5(h, j));
#pragma GCC unroll 4
            for (int c = 0; c < RC; ++c) {
              const int8_t* a = xb[c][b].qs + 64 * chunk + 32 * half + 4 * j;
              s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(code, Bcast4(a)));
              PinOrder(&s16[c]);
            }
          }
#pragma GCC unroll 4
          for (int c = 0; c < RC; ++c) {
            isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(s16[c], sc16));
          }
        }
      }
    }
  };
  TileKFrame<RC, kGB, true>(k, w, nr, y, y_stride, sums,
                            [&](const uint8_t* gb, int64_t b, const __m256i* isum, __m256* acc,
                                __m256* accm) { Q4KFinishBlock<RC>(gb, xb, b, isum, acc, accm); });
}

// Q2_K against Q8_K activations (packed_x8.h's Q2_K layout). Per group s
// and column, the 4 maddubs of its 2-bit codes add in int16 (|sum| <= 4 * 2
// * 3 * 128), and madd with the row's 4-bit scale in both halves of its
// lane gives sc * dot in int32; per super-block the mins madd each pair
// (m_2p, m_2p+1) against the column's (asum_2p, asum_2p+1). Per lane:
//   acc = fma(float(isum), d * da, acc)
//   accm = fma(float(msum), dmin * da, accm)
//   y = acc - accm
template <int RC>
void TileX8Q2K(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride, float* y,
               size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(sizeof(BlockQ2_K));
  const BlockQ8_K* xb[RC];
  Q8KColumns<RC>(xq, xq_stride, xb);
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i m15 = _mm256_set1_epi16(15);
  auto sums = [&](const uint8_t* gb, int64_t b, __m256i* isum) {
#pragma GCC unroll 1
    for (int p = 0; p < 8; ++p) {
      const __m256i sc = _mm256_and_si256(Q2KPair(gb, p), m15);
      const __m256i scs[2] = {_mm256_shufflehi_epi16(_mm256_shufflelo_epi16(sc, 0xa0), 0xa0),
                              _mm256_shufflehi_epi16(_mm256_shufflelo_epi16(sc, 0xf5), 0xf5)};
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kX8Q2KCodes + 32 * s));
        __m256i s16[RC];
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) s16[c] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) {
          const __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, 2 * u), m3);
#pragma GCC unroll 4
          for (int c = 0; c < RC; ++c) {
            s16[c] = _mm256_add_epi16(
                s16[c], _mm256_maddubs_epi16(q, Bcast4(xb[c][b].qs + 16 * s + 4 * u)));
          }
        }
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) {
          isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(s16[c], scs[h]));
        }
      }
    }
  };
  TileKFrame<RC, kGB, true>(k, w, nr, y, y_stride, sums,
                            [&](const uint8_t* gb, int64_t b, const __m256i* isum, __m256* acc,
                                __m256* accm) { Q2KFinishBlock<RC>(gb, xb, b, isum, acc, accm); });
}

// IQ4_XS against Q8_K activations (packed_x8.h's IQ4_XS layout; its d and
// scale pairs sit where Q6_K's do, so Q6KScales reads them). Per sub-block
// and column, each code vector's two table lookups give signed values
// and Q8_0's |w| * sign(a, w) maddubs (|pair| <= 2 * 127 * 127 in int16),
// madd with the row's scale ls - 32 in both halves of its lane:
//   isum = sum_s sc_s * dot_s;  acc = fma(float(isum), d * da, acc)
template <int RC>
void TileX8IQ4XS(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
                 float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(kX8IQ4XSBlockBytes);
  const BlockQ8_K* xb[RC];
  Q8KColumns<RC>(xq, xq_stride, xb);
  const __m256i table = x86::ByteTable16(kIQ4NLValues);
  auto sums = [&](const uint8_t* gb, int64_t b, __m256i* isum) {
#pragma GCC unroll 1
    for (int p = 0; p < 4; ++p) {
      __m256i sc[2];
      Q6KScales(gb, p, &sc[0], &sc[1]);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        // Two code vectors per loop step: all four at once made GCC spill
        // their madd results (pp512 on a Zen 3 VM: +20%, matmul_bench's
        // BM_TileX8InL1 iq4_xs at 16 columns +5-9%).
#pragma GCC unroll 2
        for (int j = 0; j < 4; ++j) {
          const __m256i v = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(gb + kX8IQ4XSCodes + 128 * s + 32 * j));
          __m256i lo, hi;
          TableNibbles(table, v, &lo, &hi);
          const __m256i ulo = _mm256_sign_epi8(lo, lo), uhi = _mm256_sign_epi8(hi, hi);
#pragma GCC unroll 4
          for (int c = 0; c < RC; ++c) {
            const int8_t* a = xb[c][b].qs + 32 * s + 4 * j;
            const __m256i plo = _mm256_maddubs_epi16(ulo, _mm256_sign_epi8(Bcast4(a), lo));
            const __m256i phi = _mm256_maddubs_epi16(uhi, _mm256_sign_epi8(Bcast4(a + 16), hi));
            isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_madd_epi16(plo, sc[h]),
                                                                 _mm256_madd_epi16(phi, sc[h])));
          }
        }
      }
    }
  };
  TileKFrame<RC, kGB, false>(k, w, nr, y, y_stride, sums,
                             [&](const uint8_t* gb, int64_t b, const __m256i* isum, __m256* acc,
                                 __m256*) { IQ4XSFinishBlock<RC>(gb, xb, b, isum, acc); });
}

// Q6_K against Q8_K activations (packed_x8.h's Q6_K layout). Per sub-block
// (4 vectors) and column, the codes' maddubs add in pairs in int16
// (|sum| <= 2 * 2 * 63 * 128) and each pair's madd with the sub-block's
// scale (both halves of the lane) adds in int32; per super-block the
// column's bsums against the scale pairs give the -32 offset in integers:
//   isum = sum_s sc_s * dot_s - 32 * sum_s sc_s * asum_s
//   acc = fma(float(isum), d * da, acc)
//
// kQ3: Q3_K (its layout shares Q6_K's d and scales; Q3KDecode gives its
// 3-bit codes, offset 4).
template <int RC, bool kQ3 = false>
void TileX8Q6K(int64_t k, const void* w, int nr, const void* xq,
               size_t xq_stride, float* y, size_t y_stride) {
  constexpr int kGB =
      kX8Rows * static_cast<int>(kQ3 ? kX8Q3KBlockBytes : sizeof(BlockQ6_K));
  const BlockQ8_K* xb[RC];
  Q8KColumns<RC>(xq, xq_stride, xb);
  auto sums = [&](const uint8_t* gb, int64_t b, __m256i* isum) {
#pragma GCC unroll 1
    for (int p = 0; p < 8; ++p) {
      __m256i sc[2];
      Q6KScales(gb, p, &sc[0], &sc[1]);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        const Q6KCodes q = kQ3 ? Q3KDecode(gb, s) : Q6KDecode(gb, s);
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) {
          isum[c] = _mm256_add_epi32(isum[c],
                                     Q6KSubDot(q, sc[h], xb[c][b].qs + 16 * s));
          PinOrder(&isum[c]);
        }
      }
    }
  };
  TileKFrame<RC, kGB, false>(
      k, w, nr, y, y_stride, sums,
      [&](const uint8_t* gb, int64_t b, const __m256i* isum, __m256* acc, __m256*) {
        Q6KFinishBlock<RC, kQ3 ? 2 : 5>(gb, xb, b, isum, acc);
      });
}

// Q6_K against nc (up to kX8WideCols) activation rows: each sub-block's
// codes are decoded once for every column (TileX8Q6K decodes them once per
// 3), whose integer and float sums live in L1. The same integer sums and
// float operations per (row, column) as TileX8Q6K: the same bits.
void TileX8Q6KWide(int64_t k, const void* w, int nr, const void* xq,
                   size_t xq_stride, int nc, float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(sizeof(BlockQ6_K));
  const int64_t nb = k / kQK_K;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const char* x0 = static_cast<const char*>(xq);
  auto column = [&](int c) {
    return reinterpret_cast<const BlockQ8_K*>(x0 + c * xq_stride);
  };
  alignas(32) float acc[kX8WideCols][kX8Rows];
  alignas(32) int32_t isum[kX8WideCols][kX8Rows];
  for (int c = 0; c < nc; ++c) _mm256_store_ps(acc[c], _mm256_setzero_ps());
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    PrefetchAhead<kGB>(gb);
    for (int c = 0; c < nc; ++c) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(isum[c]),
                         _mm256_setzero_si256());
    }
#pragma GCC unroll 1
    for (int p = 0; p < 8; ++p) {
      __m256i sc[2];
      Q6KScales(gb, p, &sc[0], &sc[1]);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        const Q6KCodes q = Q6KDecode(gb, s);
        for (int c = 0; c < nc; ++c) {
          __m256i* is = reinterpret_cast<__m256i*>(isum[c]);
          _mm256_store_si256(
              is,
              _mm256_add_epi32(_mm256_load_si256(is),
                               Q6KSubDot(q, sc[h], column(c)[b].qs + 16 * s)));
        }
      }
    }
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
    for (int c = 0; c < nc; ++c) {
      _mm256_store_ps(
          acc[c], Q6KAccumulate(gb, dw,
                                _mm256_load_si256(
                                    reinterpret_cast<const __m256i*>(isum[c])),
                                column(c)[b], _mm256_load_ps(acc[c])));
    }
  }
  for (int c = 0; c < nc; ++c)
    StoreRows(_mm256_load_ps(acc[c]), nr, y + c * y_stride);
}

void TileNX8Q6K(int64_t k, const void* w, size_t /*w_stride*/, int nr,
                const void* xq, size_t xq_stride, int nc, float* y,
                size_t y_stride) {
  if (nc > kX8ColsQ4K)
    return TileX8Q6KWide(k, w, nr, xq, xq_stride, nc, y, y_stride);
  WithCols<kX8ColsQ4K>(nc, [&](auto rc) {
    TileX8Q6K<decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

}  // namespace

void FillX8KQuants(KernelTable* t) {
  static_assert(kX8WideCols <= kMaxTileCols && kX8ColsQ4K <= kMaxTileCols);
  const QuantizeActFn q8k =
      t->matmul[static_cast<int>(WeightFormat::kQ4_K)].quantize;
  static_assert(kX8ColsQ4K == 3, "the TileByCols lists below");
  t->matmul_x8[static_cast<int>(WeightFormat::kQ4_K)] = MatMulKernel{
      ActFormat::kQ8K, q8k, nullptr,
      TileByCols<TileX8Q4K<1>, TileX8Q4K<2>, TileX8Q4K<3>>, kX8Rows,
      kX8ColsQ4K};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ5_K)] = MatMulKernel{
      ActFormat::kQ8K, q8k, nullptr,
      TileByCols<TileX8Q4K<1, true>, TileX8Q4K<2, true>, TileX8Q4K<3, true>, TileX8Q4K<4, true>>,
      kX8Rows, kX8ColsQ5K};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ6_K)] = MatMulKernel{
      ActFormat::kQ8K, q8k, nullptr, TileNX8Q6K, kX8Rows, kX8WideCols};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ2_K)] = MatMulKernel{
      ActFormat::kQ8K, q8k, nullptr, TileByCols<TileX8Q2K<1>, TileX8Q2K<2>, TileX8Q2K<3>>,
      kX8Rows, kX8ColsQ4K};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ3_K)] = MatMulKernel{
      ActFormat::kQ8K, q8k, nullptr,
      TileByCols<TileX8Q6K<1, true>, TileX8Q6K<2, true>, TileX8Q6K<3, true>>, kX8Rows,
      kX8ColsQ4K};
  t->matmul_x8[static_cast<int>(WeightFormat::kIQ4_XS)] = MatMulKernel{
      ActFormat::kQ8K, q8k, nullptr,
      TileByCols<TileX8IQ4XS<1>, TileX8IQ4XS<2>, TileX8IQ4XS<3>, TileX8IQ4XS<4>>, kX8Rows,
      kX8ColsIQ4XS};
}

}  // namespace weft::kernels::avx2
