// The AVX-512 table's pair tiles (MatMulKernel::pair_tile, kernel_table.h)
// for Q4_K, Q5_K, Q6_K, Q3_K and IQ4_XS: two consecutive x8 groups (16
// weight rows) against up to 4 Q8_K activation rows, on zmm, as
// avx512_pair_tiles.cc does for Q4_0 / Q5_0 / Q8_0.
//
// The x8 VNNI tiles (x8_vnni_impl.h: TileQ4K, TileQ6K, TileIQ4XS) hold one
// code vector of a group's 8 rows in a ymm. Here group 0's vector sits in a
// zmm's low half and group 1's in its high half, so each code decode, scale
// widening, vpmulld and float step serves 16 rows: per multiply-add, about
// half the x8 tile's instructions besides the vpdpbusd themselves. That
// pays in prefill, where a block of weight rows is re-read from the caches
// for every 4 activation rows and the x8 tiles run at their instruction
// throughput, not the memory's.
//
// Per lane the integers are the x8 tile's exact sums (|each partial| is far
// below 2^31; integer addition in any order gives the same int32) and the
// float operations are its float step's, in the same order, so the outputs
// are bitwise equal to it (avx512_emulated_test checks).
//
// Where the x8 tile uses vpmaddwd (the mins', offsets' and asums' integer
// parts), these take it on the two ymm halves (the AVX2 helpers) and join
// them: SIMDe's _mm512_madd_epi16 native alias breaks the emulated tests'
// build, and the work is per super-block, not per code vector. Bytes widen
// to int32 through vpmovzxbw (ymm) and vpmovzxwd (zmm): the emulated
// tests' _mm512_cvtepu8_epi32 is slow.
//
// Compiled like avx512_kernels.cc (-mavx512f/bw/vl/dq/vnni/bf16, reached
// only through the dispatch table) and, in the tests, for AVX2 with every
// AVX-512 intrinsic emulated (tests/kernels/avx512_emulated.cc includes
// this file too).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

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

// The smallest M that takes these pair tiles. In prefill they take
// 0.73-0.86x of the x8 tiles' time (Q4_K, Q5_K at M = 64); at M = 3 and 4,
// where a product streams its weights from memory, 1.04-1.10x, and at M = 8
// 0.83-1.13x (kernels_bench BM_MatMulPairs on the 2-vCPU Sapphire Rapids
// VM of bench/results/formats-spr.md).
constexpr int kPairKMinM = 16;

// Calls f(std::integral_constant<int, I>{}) for I = 0 .. N-1 in order.
template <int N, typename F>
[[gnu::always_inline]] inline void Unrolled(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f(std::integral_constant<int, I>{}), ...);
  }
  (std::make_integer_sequence<int, N>{});
}

// 8 bytes at a (group 0's rows) and 8 at b (group 1's), zero-extended to
// 16 int32 lanes.
static inline __m512i WidenBytes8(const uint8_t* a, const uint8_t* b) {
  const __m128i v =
      _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                         _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
  return _mm512_cvtepu16_epi32(_mm256_cvtepu8_epi16(v));
}

// The frame of the pair tiles (avx2::TileKFrame on zmm), for RC Q8_K
// activation rows and group blocks of kGB bytes; g0, g1: the two groups.
// Per super-block b, in order: the RC columns' integer sums isum[c] start
// at zero, sums(a, e, b, isum) adds the tile's (a, e: the two groups'
// blocks), and step(a, e, b, isum, acc, accm) adds its float step (accm:
// the mins' part, kMins only). Then y = acc - accm (kMins) or acc.
template <int RC, int kGB, bool kMins, typename Sums, typename Step>
[[gnu::always_inline]] inline void PairKFrame(int64_t k, const uint8_t* g0,
                                              const uint8_t* g1, int nr,
                                              float* y, size_t y_stride,
                                              Sums&& sums, Step&& step) {
  const int64_t nb = k / kQK_K;
  const size_t group_bytes = static_cast<size_t>(nb) * kGB;
  __m512 acc[RC], accm[RC];
  for (int c = 0; c < RC; ++c) acc[c] = accm[c] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* a = g0 + b * kGB;
    const uint8_t* e = g1 + b * kGB;
    PairPrefetch<kGB>(a, e, static_cast<size_t>(b) * kGB, group_bytes);
    __m512i isum[RC];
    for (int c = 0; c < RC; ++c) isum[c] = _mm512_setzero_si512();
    sums(a, e, b, isum);
    step(a, e, b, isum, acc, accm);
  }
  for (int c = 0; c < RC; ++c) {
    StorePairRows(kMins ? _mm512_sub_ps(acc[c], accm[c]) : acc[c], nr,
                  y + c * y_stride);
  }
}

// Q4_K (kQ5: Q5_K): x8_vnni::TileQ4K's integers and Q4KFinishBlock's float
// step on both groups.
template <bool kQ5>
struct PairQ45K {
  static constexpr int kGB =
      kX8Rows * static_cast<int>(kQ5 ? kX8Q5KBlockBytes : kX8Q4KBlockBytes);

  // avx2::Bit5 of vector J: its 5th bits as bit 4 of each byte.
  template <int J>
  static inline __m512i Bit5(__m512i h) {
    const __m512i bit4 = _mm512_set1_epi8(0x10);
    if constexpr (J <= 4)
      return _mm512_and_si512(_mm512_slli_epi16(h, 4 - J), bit4);
    return _mm512_and_si512(_mm512_srli_epi16(h, J - 4), bit4);
  }

  template <int RC>
  static void Run(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr,
                  const void* xq, size_t xq_stride, float* y, size_t y_stride) {
    const BlockQ8_K* xb[RC];
    avx2::Q8KColumns<RC>(xq, xq_stride, xb);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    auto sums = [&](const uint8_t* a, const uint8_t* e, int64_t b,
                    __m512i* isum) {
#pragma GCC unroll 1
      for (int chunk = 0; chunk < 4; ++chunk) {
        const __m512i sca =
            WidenBytes8(a + 32 + 16 * chunk, e + 32 + 16 * chunk);
        const __m512i scb =
            WidenBytes8(a + 40 + 16 * chunk, e + 40 + 16 * chunk);
        __m512i s_lo[RC], s_hi[RC];
        for (int c = 0; c < RC; ++c) s_lo[c] = s_hi[c] = _mm512_setzero_si512();
        __m512i h_lo = _mm512_setzero_si512(), h_hi = h_lo;
        if constexpr (kQ5) {
          const size_t off = kX8Rows * kX8Q4KBlockBytes + 64 * chunk;
          h_lo = Join256(a + off, e + off);
          h_hi = Join256(a + off + 32, e + off + 32);
        }
        Unrolled<8>([&](auto jc) {
          constexpr int J = decltype(jc)::value;
          const size_t off = 160 + 256 * chunk + 32 * J;
          const __m512i v = Join256(a + off, e + off);
          __m512i lo = _mm512_and_si512(v, m4);
          __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
          if constexpr (kQ5) {
            lo = _mm512_or_si512(lo, Bit5<J>(h_lo));
            hi = _mm512_or_si512(hi, Bit5<J>(h_hi));
          }
          for (int c = 0; c < RC; ++c) {
            const int8_t* q = xb[c][b].qs + 64 * chunk + 4 * J;
            s_lo[c] = _mm512_dpbusd_epi32(s_lo[c], lo, Bcast4Z(q));
            s_hi[c] = _mm512_dpbusd_epi32(s_hi[c], hi, Bcast4Z(q + 32));
          }
        });
        for (int c = 0; c < RC; ++c) {
          isum[c] = _mm512_add_epi32(
              isum[c], _mm512_add_epi32(_mm512_mullo_epi32(s_lo[c], sca),
                                        _mm512_mullo_epi32(s_hi[c], scb)));
        }
      }
    };
    auto step = [&](const uint8_t* a, const uint8_t* e, int64_t b,
                    const __m512i* isum, __m512* acc, __m512* accm) {
      const __m512 dw = JoinScales(a, e);
      const __m512 dm = JoinScales(a + 16, e + 16);
      for (int c = 0; c < RC; ++c) {
        const __m512i msum = JoinYmm(avx2::Q4KScaledMins(a, xb[c][b].bsums),
                                     avx2::Q4KScaledMins(e, xb[c][b].bsums));
        const __m512 vda = _mm512_set1_ps(xb[c][b].d);
        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]),
                                 _mm512_mul_ps(dw, vda), acc[c]);
        accm[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(msum),
                                  _mm512_mul_ps(dm, vda), accm[c]);
      }
    };
    PairKFrame<RC, kGB, true>(k, g0, g1, nr, y, y_stride, sums, step);
  }
};

// Row r's int8 scales of sub-blocks 2p, 2p + 1 of both groups' Q6_K / Q3_K
// / IQ4_XS super-blocks (x8_vnni::ScalePair): *pa, *pe as int16 pairs in
// ymm lane r of each group, sc[0] and sc[1] in int32 lane r (group 0) and
// 8 + r (group 1).
static inline void PairScales(const uint8_t* a, const uint8_t* e, int p,
                              __m256i* pa, __m256i* pe, __m512i* sc) {
  *pa = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 16 + 16 * p)));
  *pe = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(e + 16 + 16 * p)));
  const __m512i pair = JoinYmm(*pa, *pe);
  sc[0] = _mm512_srai_epi32(_mm512_slli_epi32(pair, 16), 16);
  sc[1] = _mm512_srai_epi32(pair, 16);
}

// Q6_K (kQ3: Q3_K): x8_vnni::TileQ6K's integers and Q6KFinishBlock's float
// step on both groups.
template <bool kQ3>
struct PairQ6K {
  static constexpr int kGB =
      kX8Rows * static_cast<int>(kQ3 ? kX8Q3KBlockBytes : sizeof(BlockQ6_K));

  struct Codes {
    __m512i c0, c1, c2, c3;
  };

  // avx2::Q6KDecode on both groups.
  static inline Codes Q6KDecode(const uint8_t* a, const uint8_t* e, int s) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i m30 = _mm512_set1_epi8(0x30);
    const size_t off = kX8Q6KCodes + 96 * s;
    const __m512i la = Join256(a + off, e + off);
    const __m512i lb = Join256(a + off + 32, e + off + 32);
    const __m512i hb = Join256(a + off + 64, e + off + 64);
    return {_mm512_or_si512(_mm512_and_si512(la, m4),
                            _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30)),
            _mm512_or_si512(_mm512_and_si512(lb, m4),
                            _mm512_and_si512(_mm512_slli_epi16(hb, 2), m30)),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(la, 4), m4),
                            _mm512_and_si512(hb, m30)),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lb, 4), m4),
                            _mm512_and_si512(_mm512_srli_epi16(hb, 2), m30))};
  }

  // avx2::Q3KBit3: bit `kBit` of hv's bytes moved to bit 2.
  template <int kBit>
  static inline __m512i Bit3(__m512i hv) {
    const __m512i m = _mm512_set1_epi8(4);
    if constexpr (kBit >= 2)
      return _mm512_and_si512(_mm512_srli_epi16(hv, kBit - 2), m);
    return _mm512_and_si512(_mm512_slli_epi16(hv, 2 - kBit), m);
  }

  // avx2::Q3KDecode on both groups; kH = s % 2.
  template <int kH>
  static inline Codes Q3KDecode(const uint8_t* a, const uint8_t* e, int s) {
    const __m512i m3 = _mm512_set1_epi8(3);
    const size_t off = kX8Q3KCodes + 32 * s, hoff = kX8Q3KHigh + 32 * (s / 2);
    const __m512i v = Join256(a + off, e + off);
    const __m512i hv = Join256(a + hoff, e + hoff);
    constexpr int b0 = 4 * kH;
    return {_mm512_or_si512(_mm512_and_si512(v, m3), Bit3<b0>(hv)),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 2), m3),
                            Bit3<b0 + 1>(hv)),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m3),
                            Bit3<b0 + 2>(hv)),
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 6), m3),
                            Bit3<b0 + 3>(hv))};
  }

  template <int RC>
  static void Run(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr,
                  const void* xq, size_t xq_stride, float* y, size_t y_stride) {
    const BlockQ8_K* xb[RC];
    avx2::Q8KColumns<RC>(xq, xq_stride, xb);
    auto sums = [&](const uint8_t* a, const uint8_t* e, int64_t b,
                    __m512i* isum) {
#pragma GCC unroll 1
      for (int p = 0; p < 8; ++p) {
        __m256i pa, pe;
        __m512i sc[2];
        PairScales(a, e, p, &pa, &pe, sc);
        Unrolled<2>([&](auto hc) {
          constexpr int kH = decltype(hc)::value;
          const int s = 2 * p + kH;
          const Codes q = kQ3 ? Q3KDecode<kH>(a, e, s) : Q6KDecode(a, e, s);
          for (int c = 0; c < RC; ++c) {
            // Two chains of two (the x8 tile's one of four): the same
            // exact sum, more vpdpbusd in flight.
            const int8_t* x = xb[c][b].qs + 16 * s;
            __m512i d0 =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), q.c0, Bcast4Z(x));
            __m512i d1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q.c2,
                                             Bcast4Z(x + 8));
            d0 = _mm512_dpbusd_epi32(d0, q.c1, Bcast4Z(x + 4));
            d1 = _mm512_dpbusd_epi32(d1, q.c3, Bcast4Z(x + 12));
            isum[c] = _mm512_add_epi32(
                isum[c], _mm512_mullo_epi32(_mm512_add_epi32(d0, d1), sc[kH]));
          }
        });
      }
    };
    auto step = [&](const uint8_t* a, const uint8_t* e, int64_t b,
                    const __m512i* isum, __m512* acc, __m512*) {
      constexpr int kShift = kQ3 ? 2 : 5;  // log2 of the codes' offset
      const __m512 dw = JoinScales(a, e);
      for (int c = 0; c < RC; ++c) {
        const __m512i asums = JoinYmm(avx2::Q6KScaledAsums(a, xb[c][b].bsums),
                                      avx2::Q6KScaledAsums(e, xb[c][b].bsums));
        const __m512i total =
            _mm512_sub_epi32(isum[c], _mm512_slli_epi32(asums, kShift));
        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total),
                                 _mm512_mul_ps(dw, _mm512_set1_ps(xb[c][b].d)),
                                 acc[c]);
      }
    };
    PairKFrame<RC, kGB, false>(k, g0, g1, nr, y, y_stride, sums, step);
  }
};

// IQ4_XS: x8_vnni::TileIQ4XS's integers and IQ4XSFinishBlock's float step
// on both groups.
struct PairIQ4XS {
  static constexpr int kGB = kX8Rows * static_cast<int>(kX8IQ4XSBlockBytes);

  template <int RC>
  static void Run(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr,
                  const void* xq, size_t xq_stride, float* y, size_t y_stride) {
    const BlockQ8_K* xb[RC];
    avx2::Q8KColumns<RC>(xq, xq_stride, xb);
    // Each value + 128 (its sign bit flipped), in every 128-bit lane.
    const __m256i table256 = x86::ByteTable16Plus128(kIQ4NLValues);
    const __m512i table = JoinYmm(table256, table256);
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    auto sums = [&](const uint8_t* a, const uint8_t* e, int64_t b,
                    __m512i* isum) {
      __m512i off[RC];
      for (int c = 0; c < RC; ++c) off[c] = _mm512_setzero_si512();
#pragma GCC unroll 1
      for (int p = 0; p < 4; ++p) {
        __m256i pa, pe;
        __m512i sc[2];
        PairScales(a, e, p, &pa, &pe, sc);
        for (int c = 0; c < RC; ++c) {
          const int16_t* bs = xb[c][b].bsums + 4 * p;
          const uint32_t apair =
              static_cast<uint16_t>(bs[0] + bs[1]) |
              static_cast<uint32_t>(static_cast<uint16_t>(bs[2] + bs[3])) << 16;
          const __m256i ap = _mm256_set1_epi32(static_cast<int32_t>(apair));
          off[c] = _mm512_add_epi32(off[c], JoinYmm(_mm256_madd_epi16(pa, ap),
                                                    _mm256_madd_epi16(pe, ap)));
        }
        Unrolled<2>([&](auto hc) {
          constexpr int kH = decltype(hc)::value;
          const int s = 2 * p + kH;
          // Per column two chains (low and high nibbles; the x8 tile's
          // one): the same exact sum, more vpdpbusd in flight.
          __m512i d_lo[RC], d_hi[RC];
          for (int c = 0; c < RC; ++c)
            d_lo[c] = d_hi[c] = _mm512_setzero_si512();
          Unrolled<4>([&](auto jc) {
            constexpr int J = decltype(jc)::value;
            const size_t o = kX8IQ4XSCodes + 128 * s + 32 * J;
            const __m512i v = Join256(a + o, e + o);
            const __m512i lo =
                _mm512_shuffle_epi8(table, _mm512_and_si512(v, m4));
            const __m512i hi = _mm512_shuffle_epi8(
                table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
            for (int c = 0; c < RC; ++c) {
              const int8_t* x = xb[c][b].qs + 32 * s + 4 * J;
              d_lo[c] = _mm512_dpbusd_epi32(d_lo[c], lo, Bcast4Z(x));
              d_hi[c] = _mm512_dpbusd_epi32(d_hi[c], hi, Bcast4Z(x + 16));
            }
          });
          for (int c = 0; c < RC; ++c) {
            isum[c] = _mm512_add_epi32(
                isum[c],
                _mm512_mullo_epi32(_mm512_add_epi32(d_lo[c], d_hi[c]), sc[kH]));
          }
        });
      }
      // The +128 of the table's values.
      for (int c = 0; c < RC; ++c) {
        isum[c] = _mm512_sub_epi32(isum[c], _mm512_slli_epi32(off[c], 7));
      }
    };
    auto step = [&](const uint8_t* a, const uint8_t* e, int64_t b,
                    const __m512i* isum, __m512* acc, __m512*) {
      const __m512 dw = JoinScales(a, e);
      for (int c = 0; c < RC; ++c) {
        acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[c]),
                                 _mm512_mul_ps(dw, _mm512_set1_ps(xb[c][b].d)),
                                 acc[c]);
      }
    };
    PairKFrame<RC, kGB, false>(k, g0, g1, nr, y, y_stride, sums, step);
  }
};

// The pair TileFn entry of kernel P: weight rows 0 .. nr-1 (8 < nr <= 16)
// of two consecutive groups, nc <= x8_vnni::kCols activation rows.
template <typename P>
void PairKTileN(int64_t k, const void* w, size_t w_stride, int nr,
                const void* xq, size_t xq_stride, int nc, float* y,
                size_t y_stride) {
  const uint8_t* g0 = static_cast<const uint8_t*>(w);
  const uint8_t* g1 = g0 + kX8Rows * w_stride;
  WithCols<x8_vnni::kCols>(nc, [&](auto rc) {
    P::template Run<decltype(rc)::value>(k, g0, g1, nr, xq, xq_stride, y,
                                         y_stride);
  });
}

}  // namespace

void FillKQuantPairTiles(KernelTable* t) {
  auto set = [t](WeightFormat f, TileFn tile) {
    MatMulKernel& kern = t->matmul_x8[static_cast<int>(f)];
    kern.pair_tile = tile;
    kern.pair_min_m = kPairKMinM;
  };
  set(WeightFormat::kQ4_K, PairKTileN<PairQ45K<false>>);
  set(WeightFormat::kQ5_K, PairKTileN<PairQ45K<true>>);
  set(WeightFormat::kQ6_K, PairKTileN<PairQ6K<false>>);
  set(WeightFormat::kQ3_K, PairKTileN<PairQ6K<true>>);
  set(WeightFormat::kIQ4_XS, PairKTileN<PairIQ4XS>);
}

}  // namespace weft::kernels::avx512
