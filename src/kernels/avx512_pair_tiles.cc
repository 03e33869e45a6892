// The AVX-512 table's pair tiles (MatMulKernel::pair_tile,
// kernel_table.h) for Q4_0, Q5_0, Q8_0 and MXFP4: two consecutive x8 groups
// (16 weight rows) against up to 4 activation rows, on zmm.
//
// The x8 tile (x8_vnni_impl.h, Tile<F, RC>) holds one code vector of a
// group's 8 rows in a ymm. Here the same code vector of group 0 sits in a
// zmm's low half and group 1's in its high half (one load and one
// vinserti64x4 per vector), so each nibble decode, vpdpbusd, scale
// conversion and float step serves 16 rows: about half the x8 tile's
// instructions per multiply-add. At M = 1 to 4 (decode) the x8 tile ran
// near its instruction throughput (~37-40 GB/s of weights per thread in
// L1 on a Zen 5, about what one thread reads from memory), so decode's
// matmuls had no slack to hide memory stalls with.
//
// Per lane the integer block sums and the float operations are the x8
// tile's, in the same order, so the outputs are bitwise equal to it:
//   acc = fma(float(s0 + s1), dw * dx, acc);  corr = fma(dw, ds, corr)
//   y = acc - offset * corr            (u = codes, w + 128 for Q8_0)
// (MXFP4: u = |w| against the activations with w's sign, y = acc.)
//
// Compiled like avx512_kernels.cc (-mavx512f/bw/vl/dq/vnni/bf16, reached
// only through the dispatch table) and, in the tests, for AVX2 with every
// AVX-512 intrinsic emulated (tests/kernels/avx512_emulated.cc includes
// this file too).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/avx2_internal.h"
#include "kernels/avx2_x8_common.h"
#include "kernels/avx512_pair_common.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/x8_internal.h"
#include "kernels/x8_vnni_impl.h"
#include "tensor/blocks.h"

// GCC 12's avx512fintrin.h builds casts and reductions on
// _mm512_undefined_*(), which -Wuninitialized flags (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::avx512 {
namespace {

// Vector J of both groups' blocks (avx2::Nibbles on zmm): lo = elements
// 4J..4J+3 of each row, hi = 16+4J..16+4J+3.
template <X8Fmt F, int J>
static inline void PairNibbles(const uint8_t* a, const uint8_t* b, __m512i* lo,
                               __m512i* hi) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  constexpr int kCodes = 16 + (F == X8Fmt::kQ5_0 ? 32 : 0);
  const __m512i v = Join256(a + kCodes + 32 * J, b + kCodes + 32 * J);
  *lo = _mm512_and_si512(v, m4);
  *hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
  if constexpr (F == X8Fmt::kQ5_0) {
    const __m512i m16 = _mm512_set1_epi8(0x10);
    const __m512i h = Join256(a + 16, b + 16);
    // Bit J -> bit 4, bit 4 + J -> bit 4 (as avx2::Nibbles).
    *lo = _mm512_or_si512(*lo,
                          _mm512_and_si512(_mm512_slli_epi16(h, 4 - J), m16));
    *hi = _mm512_or_si512(*hi, _mm512_and_si512(_mm512_srli_epi16(h, J), m16));
  }
}

// The smallest M that takes the pair tiles. At M = 1 and 2 a product
// streams its weights from memory near the bandwidth, and two streams per
// thread (one per group) kept the caches fed worse than the x8 tile's one;
// measured side by side in one process on a Zen 5 (kernels_bench
// BM_MatMulPairs, random interleaving, medians of 7-9), the pair tiles
// took 0.85-1.39x the x8 tiles' time at M = 1 and 2, and 0.68-0.91x at
// M = 4 on all but one shape (Q8_0's 262144 x 640 once took 1.13x).
constexpr int kPairMinM = 3;

// MXFP4's sums of block b of both groups (a, e) with RC activation rows
// into s (as PairTile's): |v| against the activations negated where v < 0
// (no vpsignb on zmm; where v = 0 the product is 0 either way), the x8
// tile's exact sums.
template <int RC>
static inline void PairMXFP4Dots(const uint8_t* a, const uint8_t* e, const Q8x32Row* x,
                                 int64_t b, __m512i (*s)[2]) {
  constexpr int kCodes = kX8Codes<X8Fmt::kMXFP4>;
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Values)));
  const __m512i m4 = _mm512_set1_epi8(0x0f), zero = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512i v = Join256(a + kCodes + 32 * j, e + kCodes + 32 * j);
    const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(v, m4));
    const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
    const __mmask64 nlo = _mm512_movepi8_mask(lo), nhi = _mm512_movepi8_mask(hi);
    const __m512i ulo = _mm512_abs_epi8(lo), uhi = _mm512_abs_epi8(hi);
    for (int c = 0; c < RC; ++c) {
      const int8_t* q = x[c].qs + 32 * b;
      const __m512i alo = Bcast4Z(q + 4 * j), ahi = Bcast4Z(q + 16 + 4 * j);
      s[c][0] = _mm512_dpbusd_epi32(s[c][0], ulo, _mm512_mask_sub_epi8(alo, nlo, zero, alo));
      s[c][1] = _mm512_dpbusd_epi32(s[c][1], uhi, _mm512_mask_sub_epi8(ahi, nhi, zero, ahi));
    }
  }
}

// Groups g0 and g1 (rows 0-7 and 8-15; nr <= 16 valid rows, all 16 read)
// of format F against RC Q8x32 activation rows.
template <X8Fmt F, int RC>
static void PairTile(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr,
                     const void* xq, size_t xq_stride, float* y,
                     size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  constexpr float kOffset = x8_vnni::kCodeOffset<F>;
  constexpr bool kCorr = F != X8Fmt::kMXFP4;  // MXFP4's sums are exact
  const int64_t nb = k / 32;
  Q8x32Row x[RC];
  for (int c = 0; c < RC; ++c) x[c] = Q8x32RowAt(xq, xq_stride, c, k);
  __m512 acc[RC], corr[RC];
  for (int c = 0; c < RC; ++c) acc[c] = corr[c] = _mm512_setzero_ps();
  const size_t group_bytes = static_cast<size_t>(nb) * kGB;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* a = g0 + b * kGB;
    const uint8_t* e = g1 + b * kGB;
    PairPrefetch<kGB>(a, e, static_cast<size_t>(b) * kGB, group_bytes);
    const __m512 dw =
        F == X8Fmt::kMXFP4
            ? _mm512_insertf32x8(_mm512_castps256_ps512(avx2::E8M0Scales(a)),
                                 avx2::E8M0Scales(e), 1)
            : JoinScales(a, e);
    // s[c][0] / s[c][1]: the sums over the even / odd code vectors.
    __m512i s[RC][2];
    for (int c = 0; c < RC; ++c) {
      s[c][0] = s[c][1] = _mm512_setzero_si512();
    }
    if constexpr (F == X8Fmt::kMXFP4) {
      PairMXFP4Dots<RC>(a, e, x, b, s);
    } else if constexpr (F == X8Fmt::kQ8_0) {
      const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i u =
            _mm512_xor_si512(Join256(a + 16 + 32 * j, e + 16 + 32 * j), flip);
        for (int c = 0; c < RC; ++c) {
          s[c][j & 1] = _mm512_dpbusd_epi32(s[c][j & 1], u,
                                            Bcast4Z(x[c].qs + 32 * b + 4 * j));
        }
      }
    } else {
      auto step = [&](auto jc) {
        constexpr int J = decltype(jc)::value;
        __m512i lo, hi;
        PairNibbles<F, J>(a, e, &lo, &hi);
        for (int c = 0; c < RC; ++c) {
          const int8_t* q = x[c].qs + 32 * b;
          s[c][0] = _mm512_dpbusd_epi32(s[c][0], lo, Bcast4Z(q + 4 * J));
          s[c][1] = _mm512_dpbusd_epi32(s[c][1], hi, Bcast4Z(q + 16 + 4 * J));
        }
      };
      step(std::integral_constant<int, 0>{});
      step(std::integral_constant<int, 1>{});
      step(std::integral_constant<int, 2>{});
      step(std::integral_constant<int, 3>{});
    }
    for (int c = 0; c < RC; ++c) {
      const __m512i s32 = _mm512_add_epi32(s[c][0], s[c][1]);
      const __m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(x[c].d[b]));
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s32), sc, acc[c]);
      if constexpr (kCorr) corr[c] = _mm512_fmadd_ps(dw, _mm512_set1_ps(x[c].ds[b]), corr[c]);
    }
  }
  for (int c = 0; c < RC; ++c) {
    StorePairRows(kCorr ? _mm512_fnmadd_ps(_mm512_set1_ps(kOffset), corr[c], acc[c]) : acc[c],
                  nr, y + c * y_stride);
  }
}

// The pair TileFn entry for format F: weight rows 0 .. nr-1 (8 < nr <= 16)
// of two consecutive groups, nc <= x8_vnni::kCols activation rows.
template <X8Fmt F>
void PairTileN(int64_t k, const void* w, size_t w_stride, int nr,
               const void* xq, size_t xq_stride, int nc, float* y,
               size_t y_stride) {
  const uint8_t* g0 = static_cast<const uint8_t*>(w);
  const uint8_t* g1 = g0 + kX8Rows * w_stride;
  WithCols<x8_vnni::kCols>(nc, [&](auto rc) {
    PairTile<F, decltype(rc)::value>(k, g0, g1, nr, xq, xq_stride, y, y_stride);
  });
}

}  // namespace

void FillPairTiles(KernelTable* t) {
  x8_vnni::ForEachPanelFormat([t](WeightFormat f, auto fmt) {
    MatMulKernel& kern = t->matmul_x8[static_cast<int>(f)];
    kern.pair_tile = PairTileN<decltype(fmt)::value>;
    kern.pair_min_m = kPairMinM;
  });
  MatMulKernel& mxfp4 = t->matmul_x8[static_cast<int>(WeightFormat::kMXFP4)];
  mxfp4.pair_tile = PairTileN<X8Fmt::kMXFP4>;
  mxfp4.pair_min_m = kPairMinM;
}

}  // namespace weft::kernels::avx512
