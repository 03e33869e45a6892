// The NEON x8 tiles (packed_x8.h: Q4_0 / Q5_0 / Q8_0 against Q8x32
// activations, Q4_K / Q6_K against Q8_K), written once over a 4-row integer dot policy `D`:
//   D::Acc    accumulator of 4 rows' int32 dots
//   D::Zero() / D::Add(acc, w, x) / D::Sum(acc) -> int32x4_t (row per lane)
// where w holds 4 codes of each of 4 rows (row i in bytes 4i .. 4i+3) and
// x the 4 matching activation bytes repeated. Included only by
// neon_x8.cc (SMULL + SADALP) and neon_x8_dotprod.cc (SDOT), which are
// compiled with different flags: every function here is `static` or a
// template over the file's own D (a type in that file's anonymous
// namespace), so each file gets its own copies and the linker never mixes
// them.
//
// Per (row, activation row), as avx2_x8.cc: integer block dots, then
//   acc = fma(float(isum), dw * da, acc);  corr = fma(dw, ds, corr)
//   y = acc - offset * corr
// with the same operations whatever nr, nc or the row's place in the tile.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/x8_internal.h"
#include "tensor/blocks.h"

namespace weft::kernels::neon {

using Fmt = X8Fmt;

// Activation rows per tile call.
constexpr int kCols = 4;

// The 4 activation bytes at p in every lane.
static inline int8x16_t Dup4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// The 8 rows' fp16 scales at p, as rows 0-3 and 4-7.
static inline void Scales(const uint8_t* p, float32x4_t* lo, float32x4_t* hi) {
  const uint16x8_t h = vld1q_u16(reinterpret_cast<const uint16_t*>(p));
  *lo = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(h)));
  *hi = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(h)));
}

// Codes of vector J of a Q4_0 / Q5_0 group block, rows 0-3 (half 0) or
// 4-7 (half 1): lo = elements 4J..4J+3, hi = 16+4J..16+4J+3.
template <Fmt F, int J>
static inline void Nibbles(const uint8_t* gb, int half, int8x16_t* lo,
                           int8x16_t* hi) {
  constexpr int kCodes = 16 + (F == Fmt::kQ5_0 ? 32 : 0);
  const uint8x16_t v = vld1q_u8(gb + kCodes + 32 * J + 16 * half);
  uint8x16_t l = vandq_u8(v, vdupq_n_u8(0x0f));
  uint8x16_t h = vshrq_n_u8(v, 4);
  if constexpr (F == Fmt::kQ5_0) {
    // Bit J of each h byte is element 4J+t's 5th bit, bit 4+J element
    // 16+4J+t's.
    const uint8x16_t hb = vld1q_u8(gb + 16 + 16 * half);
    const uint8x16_t m16 = vdupq_n_u8(0x10);
    l = vorrq_u8(l, vandq_u8(vshlq_n_u8(hb, 4 - J), m16));
    if constexpr (J == 0) {
      h = vorrq_u8(h, vandq_u8(hb, m16));
    } else {
      h = vorrq_u8(h, vandq_u8(vshrq_n_u8(hb, J), m16));
    }
  }
  *lo = vreinterpretq_s8_u8(l);
  *hi = vreinterpretq_s8_u8(h);
}

// isum[c][half] = the 4 rows' integer dots of one block with activation
// row c (a[c]: its 32 int8 values).
template <class D, Fmt F, int RC>
static inline void BlockDots(const uint8_t* gb, const int8_t* const* a,
                             int32x4_t (*isum)[2]) {
  for (int half = 0; half < 2; ++half) {
    typename D::Acc s[RC];
    for (int c = 0; c < RC; ++c) s[c] = D::Zero();
    if constexpr (F == Fmt::kQ8_0) {
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const int8x16_t w = vld1q_s8(
            reinterpret_cast<const int8_t*>(gb + 16 + 32 * j + 16 * half));
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) D::Add(&s[c], w, Dup4(a[c] + 4 * j));
      }
    } else {
      auto step = [&](auto jc) {
        constexpr int J = decltype(jc)::value;
        int8x16_t lo, hi;
        Nibbles<F, J>(gb, half, &lo, &hi);
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) {
          D::Add(&s[c], lo, Dup4(a[c] + 4 * J));
          D::Add(&s[c], hi, Dup4(a[c] + 16 + 4 * J));
        }
      };
      step(std::integral_constant<int, 0>{});
      step(std::integral_constant<int, 1>{});
      step(std::integral_constant<int, 2>{});
      step(std::integral_constant<int, 3>{});
    }
    for (int c = 0; c < RC; ++c) isum[c][half] = D::Sum(s[c]);
  }
}

template <class D, Fmt F, int RC>
static void TileX8(int64_t k, const void* w, int nr, const void* xq,
                   size_t xq_stride, float* y, size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  Q8x32Row x[RC];
  for (int c = 0; c < RC; ++c) x[c] = Q8x32RowAt(xq, xq_stride, c, k);
  float32x4_t acc[RC][2], corr[RC][2];
  for (int c = 0; c < RC; ++c) {
    acc[c][0] = acc[c][1] = corr[c][0] = corr[c][1] = vdupq_n_f32(0.0f);
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    __builtin_prefetch(gb + 2048);
    float32x4_t dw[2];
    Scales(gb, &dw[0], &dw[1]);
    const int8_t* a[RC];
    for (int c = 0; c < RC; ++c) a[c] = x[c].qs + 32 * b;
    int32x4_t isum[RC][2];
    BlockDots<D, F, RC>(gb, a, isum);
    for (int c = 0; c < RC; ++c) {
      for (int half = 0; half < 2; ++half) {
        const float32x4_t s = vmulq_n_f32(dw[half], x[c].d[b]);
        acc[c][half] = vfmaq_f32(acc[c][half], vcvtq_f32_s32(isum[c][half]), s);
        if constexpr (kX8Offset<F> != 0) {
          corr[c][half] = vfmaq_n_f32(corr[c][half], dw[half], x[c].ds[b]);
        }
      }
    }
  }
  for (int c = 0; c < RC; ++c) {
    alignas(16) float out[kX8Rows];
    for (int half = 0; half < 2; ++half) {
      float32x4_t v = acc[c][half];
      if constexpr (kX8Offset<F> != 0) {
        v = vfmsq_n_f32(v, corr[c][half], static_cast<float>(kX8Offset<F>));
      }
      vst1q_f32(out + 4 * half, v);
    }
    for (int i = 0; i < nr; ++i) y[c * y_stride + i] = out[i];
  }
}

// TileFn: the tile above for nc (1..kCols) activation rows.
template <class D, Fmt F>
static void TileN(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                  size_t xq_stride, int nc, float* y, size_t y_stride) {
  WithCols<kCols>(nc, [&](auto rc) {
    TileX8<D, F, decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

// ---- K-quants against Q8_K activations ----

// Activation rows per Q4_K / Q6_K tile call (their per-row sums take more
// registers).
constexpr int kColsK = 3;

// p[0], p[stride], p[2 * stride], p[3 * stride] as int32 lanes.
template <typename T>
static inline int32x4_t Gather4(const T* p, int stride) {
  const int32_t v[4] = {p[0], p[stride], p[2 * stride], p[3 * stride]};
  return vld1q_s32(v);
}

// Q4_K (packed_x8.h), per row and super-block, as scalar_x8.cc:
//   isum = sum_s sc_s * dot_s,  msum = sum_s m_s * (bsums[2s] + bsums[2s+1])
//   acc = fma(float(isum), d * da, acc);  accm = fma(float(msum), dmin * da, accm)
//   y = acc - accm
template <class D, int RC>
static void TileX8Q4K(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
                      float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(kX8Q4KBlockBytes);
  const int64_t nb = k / kQK_K;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const BlockQ8_K* xb[RC];
  for (int c = 0; c < RC; ++c) {
    xb[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(xq) + c * xq_stride);
  }
  float32x4_t acc[RC][2], accm[RC][2];
  for (int c = 0; c < RC; ++c) acc[c][0] = acc[c][1] = accm[c][0] = accm[c][1] = vdupq_n_f32(0);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    __builtin_prefetch(gb + 2048);
    float32x4_t d[2], dmin[2];
    Scales(gb, &d[0], &d[1]);
    Scales(gb + 16, &dmin[0], &dmin[1]);
    for (int half = 0; half < 2; ++half) {
      int32x4_t isum[RC];
      for (int c = 0; c < RC; ++c) isum[c] = vdupq_n_s32(0);
      for (int chunk = 0; chunk < 4; ++chunk) {
        // Rows' 6-bit scales of sub-blocks 2 chunk (low nibbles), 2 chunk + 1.
        const int32x4_t sc_lo = Gather4(gb + 32 + 8 * (2 * chunk) + 4 * half, 1);
        const int32x4_t sc_hi = Gather4(gb + 32 + 8 * (2 * chunk + 1) + 4 * half, 1);
        typename D::Acc lo_acc[RC], hi_acc[RC];
        for (int c = 0; c < RC; ++c) lo_acc[c] = hi_acc[c] = D::Zero();
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
          const uint8x16_t v = vld1q_u8(gb + 160 + 256 * chunk + 32 * j + 16 * half);
          const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f)));
          const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
          for (int c = 0; c < RC; ++c) {
            const int8_t* a = xb[c][b].qs + 64 * chunk + 4 * j;
            D::Add(&lo_acc[c], lo, Dup4(a));
            D::Add(&hi_acc[c], hi, Dup4(a + 32));
          }
        }
        for (int c = 0; c < RC; ++c) {
          isum[c] = vmlaq_s32(isum[c], D::Sum(lo_acc[c]), sc_lo);
          isum[c] = vmlaq_s32(isum[c], D::Sum(hi_acc[c]), sc_hi);
        }
      }
      for (int c = 0; c < RC; ++c) {
        const int16_t* bs = xb[c][b].bsums;
        int32x4_t msum = vdupq_n_s32(0);
        for (int s = 0; s < 8; ++s) {
          // Row i's min of sub-block s: byte 96 + 16 (s / 2) + 2 i + s % 2.
          const int32x4_t m = Gather4(gb + 96 + 16 * (s / 2) + 8 * half + s % 2, 2);
          msum = vmlaq_n_s32(msum, m, bs[2 * s] + bs[2 * s + 1]);
        }
        const float da = xb[c][b].d;
        acc[c][half] = vfmaq_f32(acc[c][half], vcvtq_f32_s32(isum[c]), vmulq_n_f32(d[half], da));
        accm[c][half] =
            vfmaq_f32(accm[c][half], vcvtq_f32_s32(msum), vmulq_n_f32(dmin[half], da));
      }
    }
  }
  for (int c = 0; c < RC; ++c) {
    alignas(16) float out[kX8Rows];
    vst1q_f32(out, vsubq_f32(acc[c][0], accm[c][0]));
    vst1q_f32(out + 4, vsubq_f32(acc[c][1], accm[c][1]));
    for (int i = 0; i < nr; ++i) y[c * y_stride + i] = out[i];
  }
}

// Q6_K (packed_x8.h), per row and super-block, as scalar_x8.cc:
//   isum = sum_s sc_s * (dot_s - 32 * bsums[s]);  acc = fma(float(isum), d * da, acc)
template <class D, int RC>
static void TileX8Q6K(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
                      float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(sizeof(BlockQ6_K));
  const int64_t nb = k / kQK_K;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const BlockQ8_K* xb[RC];
  for (int c = 0; c < RC; ++c) {
    xb[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(xq) + c * xq_stride);
  }
  const uint8x16_t m4 = vdupq_n_u8(0x0f), m30 = vdupq_n_u8(0x30);
  float32x4_t acc[RC][2];
  for (int c = 0; c < RC; ++c) acc[c][0] = acc[c][1] = vdupq_n_f32(0);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    __builtin_prefetch(gb + 2048);
    float32x4_t d[2];
    Scales(gb, &d[0], &d[1]);
    for (int half = 0; half < 2; ++half) {
      int32x4_t isum[RC];
      for (int c = 0; c < RC; ++c) isum[c] = vdupq_n_s32(0);
      for (int s = 0; s < 16; ++s) {
        const uint8_t* sub = gb + kX8Q6KCodes + 96 * s + 16 * half;
        const uint8x16_t la = vld1q_u8(sub), lb = vld1q_u8(sub + 32), h = vld1q_u8(sub + 64);
        // Codes of vectors 0..3 (elements 16 s + 4 j ..): nibble | top 2 bits.
        const int8x16_t c0 =
            vreinterpretq_s8_u8(vorrq_u8(vandq_u8(la, m4), vandq_u8(vshlq_n_u8(h, 4), m30)));
        const int8x16_t c1 =
            vreinterpretq_s8_u8(vorrq_u8(vandq_u8(lb, m4), vandq_u8(vshlq_n_u8(h, 2), m30)));
        const int8x16_t c2 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(la, 4), vandq_u8(h, m30)));
        const int8x16_t c3 =
            vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(lb, 4), vandq_u8(vshrq_n_u8(h, 2), m30)));
        // Row i's int8 scale of sub-block s: byte 16 + 16 (s / 2) + 2 i + s % 2.
        const int32x4_t sc = Gather4(
            reinterpret_cast<const int8_t*>(gb + 16 + 16 * (s / 2) + 8 * half + s % 2), 2);
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = xb[c][b].qs + 16 * s;
          typename D::Acc t = D::Zero();
          D::Add(&t, c0, Dup4(a));
          D::Add(&t, c1, Dup4(a + 4));
          D::Add(&t, c2, Dup4(a + 8));
          D::Add(&t, c3, Dup4(a + 12));
          const int32x4_t dot = vsubq_s32(D::Sum(t), vdupq_n_s32(32 * xb[c][b].bsums[s]));
          isum[c] = vmlaq_s32(isum[c], dot, sc);
        }
      }
      for (int c = 0; c < RC; ++c) {
        acc[c][half] = vfmaq_f32(acc[c][half], vcvtq_f32_s32(isum[c]),
                                 vmulq_n_f32(d[half], xb[c][b].d));
      }
    }
  }
  for (int c = 0; c < RC; ++c) {
    alignas(16) float out[kX8Rows];
    vst1q_f32(out, acc[c][0]);
    vst1q_f32(out + 4, acc[c][1]);
    for (int i = 0; i < nr; ++i) y[c * y_stride + i] = out[i];
  }
}

// TileFn entries of the K-quant tiles for nc (1..kColsK) activation rows.
template <class D>
static void TileNQ4K(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                     size_t xq_stride, int nc, float* y, size_t y_stride) {
  WithCols<kColsK>(nc, [&](auto rc) {
    TileX8Q4K<D, decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

template <class D>
static void TileNQ6K(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                     size_t xq_stride, int nc, float* y, size_t y_stride) {
  WithCols<kColsK>(nc, [&](auto rc) {
    TileX8Q6K<D, decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

// Sets t's x8 tiles: Q4_0, Q5_0 and Q8_0 against Q8x32 activations, Q4_K
// and Q6_K against Q8_K (the table's own activation conversions).
template <class D>
static void FillTiles(KernelTable* t) {
  const QuantizeActFn q8 =
      t->matmul[static_cast<int>(WeightFormat::kQ8_0)].quantize;
  auto set = [&](WeightFormat f, TileFn tile) {
    t->matmul_x8[static_cast<int>(f)] =
        MatMulKernel{ActFormat::kQ8x32, q8, nullptr, tile, kX8Rows, kCols};
  };
  set(WeightFormat::kQ4_0, TileN<D, Fmt::kQ4_0>);
  set(WeightFormat::kQ5_0, TileN<D, Fmt::kQ5_0>);
  set(WeightFormat::kQ8_0, TileN<D, Fmt::kQ8_0>);
  const QuantizeActFn q8k = t->matmul[static_cast<int>(WeightFormat::kQ4_K)].quantize;
  t->matmul_x8[static_cast<int>(WeightFormat::kQ4_K)] =
      MatMulKernel{ActFormat::kQ8K, q8k, nullptr, TileNQ4K<D>, kX8Rows, kColsK};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ6_K)] =
      MatMulKernel{ActFormat::kQ8K, q8k, nullptr, TileNQ6K<D>, kX8Rows, kColsK};
}

}  // namespace weft::kernels::neon
