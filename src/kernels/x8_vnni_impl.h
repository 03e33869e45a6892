// The x8 tiles with VNNI (vpdpbusd on ymm: AVX512_VNNI + AVX512VL) for the
// 32-element formats and the K-quants (TileQ4K, TileQ6K, below), for the
// AVX-512 table. vpdpbusd multiplies unsigned by signed bytes and adds each
// 4 products into an int32 lane, with no int16 step. The codes go in
// unsigned against the signed activations: Q4_0's and Q5_0's as they are
// (0..15, 0..31, decoded as the AVX2 tiles do), Q8_0's as u = w + 128 (the
// byte with its sign bit flipped). The
// offset comes off in float through the activations' block sums, as in
// the AVX2 Q4_0 / Q5_0 tiles (avx2_x8.cc):
//   acc = fma(float(sum u*x), dw * dx, acc);  corr = fma(dw, dx * sum x, corr)
//   y = acc - offset * corr        (offset 8, 16, 128)
// Per 32 pairs and activation row one vpdpbusd replaces the AVX2 tiles'
// vpmaddubsw and int16 add (Q4_0, Q5_0; plus a share of the widening
// vpmaddwd) or vpsignb, vpmaddubsw, vpmaddwd and vpaddd (Q8_0). The
// integer block sums are exact (|sum| <= 32 * 255 * 128). Each row's block
// sum runs in two chains (the group's even and odd code vectors), added at
// the end of the block, so that 8 chains of vpdpbusd (latency 4-5 cycles)
// are in flight rather than 4: an exact integer sum either way.
// MXFP4 (values |v| <= 12) goes in as |v| against the activations with v's
// sign, exact with no offset: the float steps are then its scalar twin's
// (scalar_x8.cc) and the AVX2 tile's, and so are the bits.
//
// Bitwise contract (kernel_table.h): a pair's float operations do not
// depend on nr, nc or the pair's place in the tile.
//
// Header rules: static functions only, and the includer provides
// _mm256_dpbusd_epi32: avx512_kernels.cc, compiled natively with
// -mavx512vnni -mavx512vl, or, in the tests, compiled for AVX2 with AVX-512
// emulated (tests/kernels/avx512_emulated.cc); everything else is AVX2
// (avx2_x8_common.h, simd_x86.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/avx2_x8_common.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/simd_x86.h"
#include "kernels/x8_internal.h"
#include "tensor/blocks.h"

namespace weft::kernels::x8_vnni {

using avx2::Nibbles;
using x86::Bcast4;

// What the unsigned codes carry on top of the weight (u = w + offset): the
// format's offset, and 128 for Q8_0's flipped sign bit. The AVX-512 panel
// tiles (avx512_panels.cc) take it from here, to give these tiles' bits.
template <X8Fmt F>
inline constexpr float kCodeOffset =
    F == X8Fmt::kQ8_0 || F == X8Fmt::kIQ4_NL ? 128.0f : kX8Offset<F>;

// Software prefetch distance of Tile along the group, in bytes: twice the
// AVX2 tiles' (avx2::kAhead). On a Zen 5 (2 threads, one stream each,
// about 20-40 GB/s per core) 2 KiB in flight per core was short of the
// memory latency; measured with `weft bench model`'s paired probe (6
// alternating runs each, medians), tg went from 88% to 94% of the probe on
// Gemma 3 270M and from 83% to 86% on a 1B Q4_0.
constexpr size_t kTileAhead = 4096;

// Group blocks of format F against RC Q8x32 activation rows.
template <X8Fmt F, int RC>
static void Tile(int64_t k, const void* w, int nr, const void* xq,
                 size_t xq_stride, float* y, size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  constexpr float kOffset = kCodeOffset<F>;
  constexpr bool kCorr = F != X8Fmt::kMXFP4;  // MXFP4's values are exact
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  Q8x32Row x[RC];
  for (int c = 0; c < RC; ++c) x[c] = Q8x32RowAt(xq, xq_stride, c, k);
  __m256 acc[RC], corr[RC];
  for (int c = 0; c < RC; ++c) acc[c] = corr[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    avx2::PrefetchAhead<kGB, kTileAhead>(gb);
    const __m256 dw = avx2::X8Scales<F>(gb);
    // The correction's weight factor: the rows' mins (Q4_1 / Q5_1) or d.
    const __m256 cw =
        kX8HasMin<F>
            ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16)))
            : dw;
    // s[c][0] / s[c][1]: the sums over the even / odd code vectors.
    __m256i s[RC][2];
    for (int c = 0; c < RC; ++c) {
      s[c][0] = s[c][1] = _mm256_setzero_si256();
    }
    if constexpr (F == X8Fmt::kMXFP4) {
      // The values (|v| <= 12) go in as |v|, the activations with v's sign
      // (as the AVX-512 row kernel, avx512_mxfp4.cc): the exact dots, with
      // no offset to take off.
      const __m256i table = x86::ByteTable16(kMXFP4Values);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kX8Codes<F> + 32 * j));
        __m256i lo, hi;
        avx2::TableNibbles(table, v, &lo, &hi);
        const __m256i ulo = _mm256_sign_epi8(lo, lo), uhi = _mm256_sign_epi8(hi, hi);
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = x[c].qs + 32 * b;
          s[c][0] = _mm256_dpbusd_epi32(s[c][0], ulo, _mm256_sign_epi8(Bcast4(a + 4 * j), lo));
          s[c][1] = _mm256_dpbusd_epi32(s[c][1], uhi, _mm256_sign_epi8(Bcast4(a + 16 + 4 * j), hi));
        }
      }
    } else if constexpr (F == X8Fmt::kIQ4_NL) {
      // The table holds each value + 128 (its sign bit flipped): the
      // unsigned codes of the Q8_0 path, straight from the nibbles.
      const __m256i table = x86::ByteTable16Plus128(kIQ4NLValues);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 16 + 32 * j));
        __m256i lo, hi;
        avx2::TableNibbles(table, v, &lo, &hi);
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = x[c].qs + 32 * b;
          s[c][0] = _mm256_dpbusd_epi32(s[c][0], lo, Bcast4(a + 4 * j));
          s[c][1] = _mm256_dpbusd_epi32(s[c][1], hi, Bcast4(a + 16 + 4 * j));
        }
      }
    } else if constexpr (F == X8Fmt::kQ8_0) {
      const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m256i u = _mm256_xor_si256(
            _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(gb + 16 + 32 * j)),
            flip);
        for (int c = 0; c < RC; ++c) {
          s[c][j & 1] = _mm256_dpbusd_epi32(s[c][j & 1], u,
                                            Bcast4(x[c].qs + 32 * b + 4 * j));
        }
      }
    } else if constexpr (F == X8Fmt::kQ4_0) {
      // As below, but the high nibbles go in as 16 * code (v & 0xf0, one
      // instruction where the shift and mask take two): s[c][1] is then
      // exactly 16 times its sum (|16 sum| <= 16 * 240 * 128), shifted back
      // before it joins s[c][0], so s32 is the same integer.
      const __m256i m4 = _mm256_set1_epi8(0x0f);
      const __m256i mf0 = _mm256_set1_epi8(static_cast<char>(0xf0));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256i v = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(gb + 16 + 32 * j));
        const __m256i lo = _mm256_and_si256(v, m4);
        const __m256i hi16 = _mm256_and_si256(v, mf0);
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = x[c].qs + 32 * b;
          s[c][0] = _mm256_dpbusd_epi32(s[c][0], lo, Bcast4(a + 4 * j));
          s[c][1] = _mm256_dpbusd_epi32(s[c][1], hi16, Bcast4(a + 16 + 4 * j));
        }
      }
      for (int c = 0; c < RC; ++c) s[c][1] = _mm256_srai_epi32(s[c][1], 4);
    } else {
      // Vector J of the group: lo = elements 4J..4J+3 of each row, hi =
      // 16+4J..16+4J+3 (avx2::Nibbles).
      auto step = [&](auto jc) {
        constexpr int J = decltype(jc)::value;
        __m256i lo, hi;
        Nibbles<F, J>(gb, &lo, &hi);
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = x[c].qs + 32 * b;
          s[c][0] = _mm256_dpbusd_epi32(s[c][0], lo, Bcast4(a + 4 * J));
          s[c][1] = _mm256_dpbusd_epi32(s[c][1], hi, Bcast4(a + 16 + 4 * J));
        }
      };
      step(std::integral_constant<int, 0>{});
      step(std::integral_constant<int, 1>{});
      step(std::integral_constant<int, 2>{});
      step(std::integral_constant<int, 3>{});
    }
    for (int c = 0; c < RC; ++c) {
      const __m256i s32 = _mm256_add_epi32(s[c][0], s[c][1]);
      const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(x[c].d[b]));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32), sc, acc[c]);
      if constexpr (kCorr) corr[c] = _mm256_fmadd_ps(cw, _mm256_set1_ps(x[c].ds[b]), corr[c]);
    }
  }
  for (int c = 0; c < RC; ++c) {
    // Q4_1 / Q5_1: + sum m * ds; MXFP4: acc (bitwise its scalar twin's,
    // scalar_x8.cc); the others: - offset * sum dw * ds.
    const __m256 v = kX8HasMin<F> ? _mm256_add_ps(acc[c], corr[c])
                     : !kCorr     ? acc[c]
                                  : _mm256_fnmadd_ps(_mm256_set1_ps(kOffset), corr[c], acc[c]);
    avx2::StoreRows(v, nr, y + c * y_stride);
  }
}

// Q4_K against Q8_K activations (packed_x8.h's Q4_K layout): the AVX2
// tile's integers (avx2_x8_kquants.cc, TileX8Q4K) by vpdpbusd. Per chunk c
// and column, the 8 low-nibble vpdpbusd give each row's dot over sub-block
// 2c in int32 and the 8 high-nibble ones sub-block 2c + 1's, each times
// the row's scale (vpmulld) where the AVX2 tile sums maddubs pairs in
// int16 and madds them with the scale: the same exact integer isum
// (|dot| <= 32 * 15 * 128), and the same float step (Q4KFinishBlock), so
// the outputs are bitwise the AVX2 tile's.
// kQ5: Q5_K, the 5th bits or-ed in as the AVX2 tile does (avx2::Bit5).
template <int RC, bool kQ5>
static void TileQ4K(int64_t k, const void* w, int nr, const void* xq,
                    size_t xq_stride, float* y, size_t y_stride) {
  constexpr int kGB =
      kX8Rows * static_cast<int>(kQ5 ? kX8Q5KBlockBytes : kX8Q4KBlockBytes);
  const BlockQ8_K* xb[RC];
  avx2::Q8KColumns<RC>(xq, xq_stride, xb);
  auto sums = [&](const uint8_t* gb, int64_t b, __m256i* isum) {
#pragma GCC unroll 1
    for (int chunk = 0; chunk < 4; ++chunk) {
      __m256i sca, scb;
      avx2::Q4KChunkScales(gb, chunk, &sca, &scb);
      __m256i s_lo[RC], s_hi[RC];
      for (int c = 0; c < RC; ++c) {
        s_lo[c] = s_hi[c] = _mm256_setzero_si256();
      }
      __m256i h_lo, h_hi;
      avx2::Q45KChunkHigh<kQ5>(gb, chunk, &h_lo, &h_hi);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        __m256i lo, hi;
        avx2::Q45KCodes<kQ5>(gb, chunk, j, h_lo, h_hi, &lo, &hi);
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = xb[c][b].qs + 64 * chunk + 4 * j;
          s_lo[c] = _mm256_dpbusd_epi32(s_lo[c], lo, Bcast4(a));
          s_hi[c] = _mm256_dpbusd_epi32(s_hi[c], hi, Bcast4(a + 32));
        }
      }
      for (int c = 0; c < RC; ++c) {
        isum[c] = _mm256_add_epi32(
            isum[c], _mm256_add_epi32(_mm256_mullo_epi32(s_lo[c], sca),
                                      _mm256_mullo_epi32(s_hi[c], scb)));
      }
    }
  };
  avx2::TileKFrame<RC, kGB, true>(
      k, w, nr, y, y_stride, sums,
      [&](const uint8_t* gb, int64_t b, const __m256i* isum, __m256* acc, __m256* accm) {
        avx2::Q4KFinishBlock<RC>(gb, xb, b, isum, acc, accm);
      });
}

// Row r's int8 scales of sub-blocks 2p, 2p + 1 of a Q6_K / IQ4_XS group
// super-block: *pair as int16 in lane r, sc[0] and sc[1] each in its int32
// lane.
static inline void ScalePair(const uint8_t* gb, int p, __m256i* pair, __m256i* sc) {
  *pair = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + 16 + 16 * p)));
  sc[0] = _mm256_srai_epi32(_mm256_slli_epi32(*pair, 16), 16);
  sc[1] = _mm256_srai_epi32(*pair, 16);
}

// Q6_K against Q8_K activations (packed_x8.h's Q6_K layout): the AVX2
// tiles' integers (avx2_x8_kquants.cc, TileX8Q6K / TileX8Q6KWide) by
// vpdpbusd. Per sub-block and column, 4 vpdpbusd give each row's dot of
// its 16 unsigned 6-bit codes in int32, times the row's int8 scale
// (vpmulld), where the AVX2 tiles sum maddubs pairs in int16 and madd them
// with the scale: the same exact isum (|dot| <= 16 * 63 * 128), the same
// -32 offset through the bsums and the same float step (Q6KAccumulate), so
// the outputs are bitwise the AVX2 tiles'.
//
// kQ3: Q3_K, laid out as Q6_K where it can be (avx2::Q3KDecode gives its
// 3-bit codes; offset 4 instead of 32), as the AVX2 tile does.
template <int RC, bool kQ3 = false>
static void TileQ6K(int64_t k, const void* w, int nr, const void* xq,
                    size_t xq_stride, float* y, size_t y_stride) {
  constexpr int kGB =
      kX8Rows * static_cast<int>(kQ3 ? kX8Q3KBlockBytes : sizeof(BlockQ6_K));
  const BlockQ8_K* xb[RC];
  avx2::Q8KColumns<RC>(xq, xq_stride, xb);
  auto sums = [&](const uint8_t* gb, int64_t b, __m256i* isum) {
#pragma GCC unroll 1
    for (int p = 0; p < 8; ++p) {
      __m256i pair, sc[2];
      ScalePair(gb, p, &pair, sc);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        const avx2::Q6KCodes q = kQ3 ? avx2::Q3KDecode(gb, s) : avx2::Q6KDecode(gb, s);
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = xb[c][b].qs + 16 * s;
          __m256i d =
              _mm256_dpbusd_epi32(_mm256_setzero_si256(), q.c0, Bcast4(a));
          d = _mm256_dpbusd_epi32(d, q.c1, Bcast4(a + 4));
          d = _mm256_dpbusd_epi32(d, q.c2, Bcast4(a + 8));
          d = _mm256_dpbusd_epi32(d, q.c3, Bcast4(a + 12));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(d, sc[h]));
        }
      }
    }
  };
  avx2::TileKFrame<RC, kGB, false>(
      k, w, nr, y, y_stride, sums,
      [&](const uint8_t* gb, int64_t b, const __m256i* isum, __m256* acc, __m256*) {
        avx2::Q6KFinishBlock<RC, kQ3 ? 2 : 5>(gb, xb, b, isum, acc);
      });
}

// IQ4_XS against Q8_K activations (packed_x8.h's IQ4_XS layout): the AVX2
// tile's integers (avx2_x8_kquants.cc, TileX8IQ4XS) by vpdpbusd. The table
// gives each value + 128 (its sign bit flipped); per sub-block and column 8
// vpdpbusd give sum u * a in int32, times the row's scale (vpmulld), and the
// +128 comes off per super-block as 128 * sum_s sc_s * asum_s (the
// activation's 32-sums against the scale pairs): the same exact isum
// (|sum u * a| <= 32 * 255 * 128) and float step, so the AVX2 tile's bits.
template <int RC>
static void TileIQ4XS(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
                      float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(kX8IQ4XSBlockBytes);
  const BlockQ8_K* xb[RC];
  avx2::Q8KColumns<RC>(xq, xq_stride, xb);
  const __m256i table = x86::ByteTable16Plus128(kIQ4NLValues);
  auto sums = [&](const uint8_t* gb, int64_t b, __m256i* isum) {
    __m256i off[RC];
    for (int c = 0; c < RC; ++c) off[c] = _mm256_setzero_si256();
#pragma GCC unroll 1
    for (int p = 0; p < 4; ++p) {
      __m256i pair, sc[2];
      ScalePair(gb, p, &pair, sc);
      for (int c = 0; c < RC; ++c) {
        const int16_t* bs = xb[c][b].bsums + 4 * p;
        const uint32_t apair = static_cast<uint16_t>(bs[0] + bs[1]) |
                               static_cast<uint32_t>(static_cast<uint16_t>(bs[2] + bs[3])) << 16;
        off[c] = _mm256_add_epi32(
            off[c], _mm256_madd_epi16(pair, _mm256_set1_epi32(static_cast<int32_t>(apair))));
      }
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        __m256i d[RC];
        for (int c = 0; c < RC; ++c) d[c] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const __m256i v = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(gb + kX8IQ4XSCodes + 128 * s + 32 * j));
          __m256i lo, hi;
          avx2::TableNibbles(table, v, &lo, &hi);
          for (int c = 0; c < RC; ++c) {
            const int8_t* a = xb[c][b].qs + 32 * s + 4 * j;
            d[c] = _mm256_dpbusd_epi32(d[c], lo, Bcast4(a));
            d[c] = _mm256_dpbusd_epi32(d[c], hi, Bcast4(a + 16));
          }
        }
        for (int c = 0; c < RC; ++c) {
          isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(d[c], sc[h]));
        }
      }
    }
    // The +128 of the table's values.
    for (int c = 0; c < RC; ++c) isum[c] = _mm256_sub_epi32(isum[c], _mm256_slli_epi32(off[c], 7));
  };
  avx2::TileKFrame<RC, kGB, false>(
      k, w, nr, y, y_stride, sums,
      [&](const uint8_t* gb, int64_t b, const __m256i* isum, __m256* acc, __m256*) {
        avx2::IQ4XSFinishBlock<RC>(gb, xb, b, isum, acc);
      });
}

// Q2_K against Q8_K activations (packed_x8.h's Q2_K layout): the AVX2
// tile's integers (avx2_x8_kquants.cc, TileX8Q2K) by vpdpbusd. Per group
// and column, 4 vpdpbusd give each row's dot of its 16 2-bit codes in int32,
// times the row's 4-bit scale (vpmulld); the mins and the float step are
// the AVX2 tile's, so its bits.
template <int RC>
static void TileQ2K(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
                    float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(sizeof(BlockQ2_K));
  const BlockQ8_K* xb[RC];
  avx2::Q8KColumns<RC>(xq, xq_stride, xb);
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i m15 = _mm256_set1_epi32(15);
  auto sums = [&](const uint8_t* gb, int64_t b, __m256i* isum) {
#pragma GCC unroll 1
    for (int p = 0; p < 8; ++p) {
      const __m256i pair = avx2::Q2KPair(gb, p);
      const __m256i sc[2] = {_mm256_and_si256(pair, m15),
                             _mm256_and_si256(_mm256_srli_epi32(pair, 16), m15)};
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * p + h;
        const __m256i v =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kX8Q2KCodes + 32 * s));
        __m256i d[RC];
        for (int c = 0; c < RC; ++c) d[c] = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) {
          const __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, 2 * u), m3);
          for (int c = 0; c < RC; ++c) {
            d[c] = _mm256_dpbusd_epi32(d[c], q, Bcast4(xb[c][b].qs + 16 * s + 4 * u));
          }
        }
        for (int c = 0; c < RC; ++c) {
          isum[c] = _mm256_add_epi32(isum[c], _mm256_mullo_epi32(d[c], sc[h]));
        }
      }
    }
  };
  avx2::TileKFrame<RC, kGB, true>(
      k, w, nr, y, y_stride, sums,
      [&](const uint8_t* gb, int64_t b, const __m256i* isum, __m256* acc, __m256* accm) {
        avx2::Q2KFinishBlock<RC>(gb, xb, b, isum, acc, accm);
      });
}

// Activation rows per call.
constexpr int kCols = 4;

// The TileFn entry for format F (nc <= kCols activation rows).
template <X8Fmt F>
static void TileN(int64_t k, const void* w, size_t /*w_stride*/, int nr,
                  const void* xq, size_t xq_stride, int nc, float* y,
                  size_t y_stride) {
  WithCols<kCols>(nc, [&](auto rc) {
    Tile<F, decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

// The TileFn entries of the K-quants and IQ4_XS (nc <= kCols = 4 rows).
static_assert(kCols == 4, "the TileByCols lists below");
template <bool kQ5>
constexpr TileFn kTileQ45K =
    TileByCols<TileQ4K<1, kQ5>, TileQ4K<2, kQ5>, TileQ4K<3, kQ5>, TileQ4K<4, kQ5>>;
constexpr TileFn kTileQ2K = TileByCols<TileQ2K<1>, TileQ2K<2>, TileQ2K<3>, TileQ2K<4>>;
constexpr TileFn kTileQ3K =
    TileByCols<TileQ6K<1, true>, TileQ6K<2, true>, TileQ6K<3, true>, TileQ6K<4, true>>;
constexpr TileFn kTileQ6K = TileByCols<TileQ6K<1>, TileQ6K<2>, TileQ6K<3>, TileQ6K<4>>;
constexpr TileFn kTileIQ4XS =
    TileByCols<TileIQ4XS<1>, TileIQ4XS<2>, TileIQ4XS<3>, TileIQ4XS<4>>;

// The formats with AVX-512 panel and pair-tile paths on top of their TileN
// entry (avx512_panels.cc, avx512_pair_tiles.cc): calls
// set(format, std::integral_constant<X8Fmt, F>{}) for Q4_0, Q5_0 and Q8_0.
template <typename Set>
static inline void ForEachPanelFormat(Set&& set) {
  set(WeightFormat::kQ4_0, std::integral_constant<X8Fmt, X8Fmt::kQ4_0>{});
  set(WeightFormat::kQ5_0, std::integral_constant<X8Fmt, X8Fmt::kQ5_0>{});
  set(WeightFormat::kQ8_0, std::integral_constant<X8Fmt, X8Fmt::kQ8_0>{});
}

}  // namespace weft::kernels::x8_vnni
