// Reference (de)quantization of the K-quants (256-element super-blocks)
// Q4_K, Q5_K, Q6_K and Q8_K (Q2_K and Q3_K are in quant_k_low.cc). The
// quantizers follow ggml's quantize_row_*_ref (no importance matrix) step
// for step, including the order of floating-point operations, so they
// reproduce its bytes when both are compiled without floating-point
// contraction.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/blocks.h"
#include "tensor/half.h"
#include "tensor/quant_internal.h"
#include "tensor/quant_k_search.h"

namespace weft::quant_internal {
namespace {

// Packs 8 6-bit scales and mins into the 12-byte Q4_K / Q5_K layout.
void PackScaleMinK4(const uint8_t ls[8], const uint8_t lm[8],
                    uint8_t scales[kKScaleSize]) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] =
          static_cast<uint8_t>((ls[j] & 0x0f) | ((lm[j] & 0x0f) << 4));
      scales[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

// Shared second half of the Q4_K / Q5_K quantizers: choose the 6-bit
// scales/mins from the per-group optimum and requantize against them.
void QuantizeScalesK4(const float* x, const float scales[8],
                      const float mins[8], int nmax, uint8_t* packed,
                      Fp16Bits* d_out, Fp16Bits* dmin_out, uint8_t L[kQK_K]) {
  float max_scale = 0.0f;
  float max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = std::min<uint8_t>(
        63, static_cast<uint8_t>(NearestInt(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(
        63, static_cast<uint8_t>(NearestInt(inv_min * mins[j])));
  }
  std::memset(packed, 0, kKScaleSize);
  PackScaleMinK4(ls, lm, packed);
  *d_out = Fp32ToFp16(max_scale / 63.f);
  *dmin_out = Fp32ToFp16(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    ScaleMinK4(j, packed, &sc, &m);
    const float d = Fp16ToFp32(*d_out) * sc;
    if (d == 0.0f) continue;
    const float dm = Fp16ToFp32(*dmin_out) * m;
    for (int ii = 0; ii < 32; ++ii) {
      const int l = NearestInt((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
    }
  }
}

// Per-group weights of the Q4_K / Q5_K reference: rms + |x|.
void GroupWeights32(const float* x, float w[32]) {
  float sum_x2 = 0;
  for (int l = 0; l < 32; ++l) sum_x2 += x[l] * x[l];
  const float av_x = std::sqrt(sum_x2 / 32);
  for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(x[l]);
}

// The scale/min search of every 32-group of a Q4_K / Q5_K super-block
// (quants up to nmax, search from rmin in nstep steps), then the packed
// 6-bit scales and mins; L gets the final quants.
void SearchScalesK4(const float* x, int nmax, float rmin, int nstep,
                    uint8_t* packed_scales, Fp16Bits* d, Fp16Bits* dmin,
                    uint8_t* L) {
  uint8_t Laux[32];
  float weights[32];
  float mins[8], scales[8];
  for (int j = 0; j < 8; ++j) {
    GroupWeights32(x + 32 * j, weights);
    scales[j] = MakeQkx2Quants(32, nmax, x + 32 * j, weights, L + 32 * j,
                               &mins[j], Laux, rmin, 0.1f, nstep, false);
  }
  QuantizeScalesK4(x, scales, mins, nmax, packed_scales, d, dmin, L);
}

// Q4_K and Q5_K (Block: BlockQ4_K or BlockQ5_K, whose qh holds the 5th
// bits): 8 groups of 32, x = d * sc * q - dmin * m.
template <typename Block>
inline constexpr bool kHas5th = requires(Block b) { b.qh; };

template <typename Block>
void QuantizeK45(const float* src, uint8_t* dst, int64_t nb) {
  constexpr bool kQ5 = kHas5th<Block>;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    Block b;
    uint8_t L[kQK_K] = {};
    SearchScalesK4(x, kQ5 ? 31 : 15, kQ5 ? -0.5f : -1.f, kQ5 ? 15 : 20, b.scales, &b.d, &b.dmin,
                   L);
    if constexpr (kQ5) std::memset(b.qh, 0, sizeof(b.qh));
    uint8_t* ql = b.qs;
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < kQK_K; n += 64) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j], l2 = L[n + j + 32];
        if constexpr (kQ5) {
          if (l1 > 15) {
            l1 -= 16;
            b.qh[j] |= m1;
          }
          if (l2 > 15) {
            l2 -= 16;
            b.qh[j] |= m2;
          }
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
      ql += 32;
    }
    StoreBlock(b, dst, i);
  }
}

template <typename Block>
void DequantizeK45(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<Block>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float min = Fp16ToFp32(b.dmin);
    float* y = dst + i * kQK_K;
    const uint8_t* ql = b.qs;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, ql += 32) {
      uint8_t sc, m;
      ScaleMinK4(is, b.scales, &sc, &m);
      const float d1 = d * sc, m1 = min * m;
      ScaleMinK4(is + 1, b.scales, &sc, &m);
      const float d2 = d * sc, m2 = min * m;
      // The 5th bit of each code (Q5_K; u1, u2 select it in qh).
      auto high = [&](int l, uint8_t u) {
        if constexpr (kHas5th<Block>) return (b.qh[l] & u) ? 16 : 0;
        return 0;
      };
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0x0f) + high(l, u1)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + high(l, u2)) - m2;
      }
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

}  // namespace

void QuantizeQ4_K(const float* src, uint8_t* dst, int64_t nb) {
  QuantizeK45<BlockQ4_K>(src, dst, nb);
}
void DequantizeQ4_K(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeK45<BlockQ4_K>(src, dst, nb);
}
void QuantizeQ5_K(const float* src, uint8_t* dst, int64_t nb) {
  QuantizeK45<BlockQ5_K>(src, dst, nb);
}
void DequantizeQ5_K(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeK45<BlockQ5_K>(src, dst, nb);
}

// ---- Q6_K ----

void QuantizeQ6_K(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ6_K b;
    std::memset(&b, 0, sizeof(b));
    int8_t L[kQK_K] = {};
    float scales[16];
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = MakeQxQuants(16, 32, x + 16 * ib, L + 16 * ib, 1, nullptr);
    }
    const float max_scale = SignedAbsMax(scales, 16);
    if (std::fabs(max_scale) < kGroupMaxEps) {  // all (near) zero: an all-zero block
      StoreBlock(b, dst, i);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = Fp32ToFp16(1 / iscale);
    for (int ib = 0; ib < 16; ++ib) {
      b.scales[ib] =
          static_cast<int8_t>(std::min(127, NearestInt(iscale * scales[ib])));
    }
    for (int j = 0; j < 16; ++j) {
      const float d = Fp16ToFp32(b.d) * b.scales[j];
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = NearestInt(x[16 * j + ii] / d);
        L[16 * j + ii] = static_cast<int8_t>(std::clamp(l, -32, 31) + 32);
      }
    }
    uint8_t* ql = b.ql;
    uint8_t* qh = b.qh;
    for (int j = 0; j < kQK_K; j += 128) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l] & 0x0f;
        const int q2 = L[j + l + 32] & 0x0f;
        const int q3 = L[j + l + 64] & 0x0f;
        const int q4 = L[j + l + 96] & 0x0f;
        ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<uint8_t>(
            (L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
            ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
      }
      ql += 64;
      qh += 32;
    }
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ6_K(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ6_K>(src, i);
    const float d = Fp16ToFp32(b.d);
    float* y = dst + i * kQK_K;
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int n = 0; n < kQK_K; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * static_cast<float>(q1);
        y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

// ---- Q8_K ----

void QuantizeQ8_K(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ8_K b;
    std::memset(&b, 0, sizeof(b));
    const float max = SignedAbsMax(x, kQK_K);
    if (max != 0.0f) {
      const float iscale = -127.f / max;
      for (int j = 0; j < kQK_K; ++j) {
        b.qs[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * x[j])));
      }
      for (int j = 0; j < kQK_K / 16; ++j) {
        int sum = 0;
        for (int ii = 0; ii < 16; ++ii) sum += b.qs[j * 16 + ii];
        b.bsums[j] = static_cast<int16_t>(sum);
      }
      b.d = 1 / iscale;
    }
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ8_K(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ8_K>(src, i);
    float* y = dst + i * kQK_K;
    for (int j = 0; j < kQK_K; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

}  // namespace weft::quant_internal
