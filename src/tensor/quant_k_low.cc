// Reference (de)quantization of the 2- and 3-bit K-quants, Q2_K and Q3_K,
// following ggml's quantize_row_q{2,3}_K_ref / dequantize_row_q{2,3}_K step
// for step (same float operations in the same order).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/blocks.h"
#include "tensor/half.h"
#include "tensor/quant_internal.h"
#include "tensor/quant_k_search.h"

namespace weft::quant_internal {
namespace {

// Unpacks the 16 6-bit Q3_K scales (still biased by 32).
void UnpackScalesQ3K(const uint8_t packed[12], int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int lo = j < 8 ? (packed[j] & 0x0f) : (packed[j - 8] >> 4);
    const int hi = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>(lo | (hi << 4));
  }
}

// Packs a super-block's 2-bit codes L[0..256) into qs: element 128n + 32j +
// l at bits 2j of byte 32n + l.
template <typename Code>
void PackCodes2(const Code* L, uint8_t* qs) {
  for (int j = 0; j < kQK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) |
                                           (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

}  // namespace

// ---- Q2_K ----

void QuantizeQ2_K(const float* src, uint8_t* dst, int64_t nb) {
  constexpr float q4scale = 15.f;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ2_K b;
    std::memset(&b, 0, sizeof(b));
    uint8_t L[kQK_K] = {};
    uint8_t Laux[16];
    float weights[16];
    float mins[16], scales[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = MakeQkx2Quants(16, 3, x + 16 * j, weights, L + 16 * j,
                                 &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < 16; ++j) {
        b.scales[j] = static_cast<uint8_t>(NearestInt(iscale * scales[j]));
      }
      b.d = Fp32ToFp16(max_scale / q4scale);
    } else {
      b.d = Fp32ToFp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < 16; ++j) {
        b.scales[j] |= static_cast<uint8_t>(NearestInt(iscale * mins[j]) << 4);
      }
      b.dmin = Fp32ToFp16(max_min / q4scale);
    } else {
      b.dmin = Fp32ToFp16(0.f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = Fp16ToFp32(b.d) * (b.scales[j] & 0x0f);
      if (d == 0.0f) continue;
      const float dm = Fp16ToFp32(b.dmin) * (b.scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = NearestInt((x[16 * j + ii] + dm) / d);
        L[16 * j + ii] = static_cast<uint8_t>(std::clamp(l, 0, 3));
      }
    }
    PackCodes2(L, b.qs);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ2_K(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ2_K>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float min = Fp16ToFp32(b.dmin);
    float* y = dst + i * kQK_K;
    const uint8_t* q = b.qs;
    int is = 0;
    for (int n = 0; n < kQK_K; n += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = b.scales[is++];
          const float dl = d * (sc & 0x0f);
          const float ml = min * (sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *y++ =
                dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
          }
        }
      }
      q += 32;
    }
  }
}

// ---- Q3_K ----

void QuantizeQ3_K(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    BlockQ3_K b;
    std::memset(&b, 0, sizeof(b));
    int8_t L[kQK_K] = {};
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = MakeQ3Quants(16, 4, x + 16 * j, L + 16 * j, true);
    const float max_scale = SignedAbsMax(scales, 16);
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        int l = static_cast<int8_t>(NearestInt(iscale * scales[j]));
        l = std::clamp(l, -32, 31) + 32;
        if (j < 8) {
          b.scales[j] = static_cast<uint8_t>(l & 0x0f);
        } else {
          b.scales[j - 8] |= static_cast<uint8_t>((l & 0x0f) << 4);
        }
        l >>= 4;
        b.scales[j % 4 + 8] |= static_cast<uint8_t>(l << (2 * (j / 4)));
      }
      b.d = Fp32ToFp16(1 / iscale);
    } else {
      b.d = Fp32ToFp16(0.f);
    }
    int8_t sc[16];
    UnpackScalesQ3K(b.scales, sc);
    for (int j = 0; j < 16; ++j) {
      const float d = Fp16ToFp32(b.d) * (sc[j] - 32);
      if (d == 0.0f) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = NearestInt(x[16 * j + ii] / d);
        L[16 * j + ii] = static_cast<int8_t>(std::clamp(l, -4, 3) + 4);
      }
    }
    // High bit of element j goes to bit (j / 32) of hmask[j % 32].
    for (int j = 0; j < kQK_K; ++j) {
      if (L[j] > 3) {
        b.hmask[j % 32] |= static_cast<uint8_t>(1 << (j / 32));
        L[j] -= 4;
      }
    }
    PackCodes2(L, b.qs);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ3_K(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ3_K>(src, i);
    const float d_all = Fp16ToFp32(b.d);
    int8_t scales[16];
    UnpackScalesQ3K(b.scales, scales);
    float* y = dst + i * kQK_K;
    const uint8_t* q = b.qs;
    int is = 0;
    uint8_t m = 1;
    for (int n = 0; n < kQK_K; n += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d_all * static_cast<float>(scales[is++] - 32);
          for (int l = 0; l < 16; ++l) {
            const int k = l + 16 * half;
            const int v = ((q[k] >> shift) & 3) - ((b.hmask[k] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
        m = static_cast<uint8_t>(m << 1);
      }
      q += 32;
    }
  }
}

}  // namespace weft::quant_internal
