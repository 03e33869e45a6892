// Reference (de)quantization of the 32-element formats Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0 and Q8_1, operation for operation as ggml's
// quantize_row_*_ref / dequantize_row_* (so results match bit for bit when
// compiled without floating-point contraction; see CMakeLists.txt).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "tensor/blocks.h"
#include "tensor/half.h"
#include "tensor/quant_internal.h"

namespace weft::quant_internal {
namespace {

// The signed value of largest magnitude (the first one on ties).
float SignedAbsMax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void MinMax(const float* x, int n, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

// Packing of 32 quants: element j and j + 16 share byte j of qs (low and
// high nibble); Q5's fifth bits go to bit j of the little-endian qh.
void PackQ4(const int* q, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
}

void PackQ5(const int* q, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
    qh |= static_cast<uint32_t>((q[j] & 0x10) >> 4) << j;
    qh |= static_cast<uint32_t>((q[j + 16] & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

void UnpackQ4(const uint8_t* qs, int* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0x0f;
    q[j + 16] = qs[j] >> 4;
  }
}

void UnpackQ5(const uint8_t* qs, const uint8_t* qh_bytes, int* q) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10);
    q[j + 16] = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
  }
}

// q[j] = clamp(trunc(x[j] * id + add)) for the 32 elements of a block; for
// formats with a minimum, x[j] - min is scaled instead.
void QuantizeBlock32(const float* x, float min, float id, float add, int hi,
                     int* q) {
  for (int j = 0; j < 32; ++j) q[j] = TruncClamp((x[j] - min) * id + add, 0, hi);
}

// y[j] = (q[j] - offset) * d (+ m).
void DequantizeBlock32(const int* q, int offset, float d, const float* m,
                       float* y) {
  for (int j = 0; j < 32; ++j) {
    const float v = static_cast<float>(q[j] - offset) * d;
    y[j] = m != nullptr ? v + *m : v;
  }
}

}  // namespace

// ---- Q4_0 and Q5_0: symmetric, d = signed absmax / -(2^bits / 2) ----

void QuantizeQ4_0(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK4_0;
    const float d = SignedAbsMax(x, kQK4_0) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = Fp32ToFp16(d);
    int q[32];
    QuantizeBlock32(x, 0.0f, id, 8.5f, 15, q);
    PackQ4(q, b.qs);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ4_0(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ4_0>(src, i);
    int q[32];
    UnpackQ4(b.qs, q);
    DequantizeBlock32(q, 8, Fp16ToFp32(b.d), nullptr, dst + i * kQK4_0);
  }
}

void QuantizeQ5_0(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK5_0;
    const float d = SignedAbsMax(x, kQK5_0) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 b;
    b.d = Fp32ToFp16(d);
    int q[32];
    QuantizeBlock32(x, 0.0f, id, 16.5f, 31, q);
    PackQ5(q, b.qs, b.qh);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ5_0(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ5_0>(src, i);
    int q[32];
    UnpackQ5(b.qs, b.qh, q);
    DequantizeBlock32(q, 16, Fp16ToFp32(b.d), nullptr, dst + i * kQK5_0);
  }
}

// ---- Q4_1 and Q5_1: d = (max - min) / (2^bits - 1), plus the minimum ----

void QuantizeQ4_1(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK4_1;
    float min, max;
    MinMax(x, kQK4_1, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = Fp32ToFp16(d);
    b.m = Fp32ToFp16(min);
    int q[32];
    QuantizeBlock32(x, min, id, 0.5f, 15, q);
    PackQ4(q, b.qs);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ4_1(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ4_1>(src, i);
    int q[32];
    UnpackQ4(b.qs, q);
    const float m = Fp16ToFp32(b.m);
    DequantizeBlock32(q, 0, Fp16ToFp32(b.d), &m, dst + i * kQK4_1);
  }
}

void QuantizeQ5_1(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK5_1;
    float min, max;
    MinMax(x, kQK5_1, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_1 b;
    b.d = Fp32ToFp16(d);
    b.m = Fp32ToFp16(min);
    int q[32];
    QuantizeBlock32(x, min, id, 0.5f, 31, q);
    PackQ5(q, b.qs, b.qh);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ5_1(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ5_1>(src, i);
    int q[32];
    UnpackQ5(b.qs, b.qh, q);
    const float m = Fp16ToFp32(b.m);
    DequantizeBlock32(q, 0, Fp16ToFp32(b.d), &m, dst + i * kQK5_1);
  }
}

// ---- Q8_0 ----

void QuantizeQ8_0(const float* src, uint8_t* dst, int64_t nb) {
  constexpr int qk = kQK8_0;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = Fp32ToFp16(d);
    for (int j = 0; j < qk; ++j) {
      b.qs[j] = static_cast<int8_t>(RoundClamp(x[j] * id, -128, 127));
    }
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ8_0(const uint8_t* src, float* dst, int64_t nb) {
  constexpr int qk = kQK8_0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ8_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    float* y = dst + i * qk;
    for (int j = 0; j < qk; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// ---- Q8_1 ----

void QuantizeQ8_1(const float* src, uint8_t* dst, int64_t nb) {
  constexpr int qk = kQK8_1;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_1 b;
    b.d = Fp32ToFp16(d);
    int sum = 0;
    for (int j = 0; j < qk; ++j) {
      b.qs[j] = static_cast<int8_t>(RoundClamp(x[j] * id, -128, 127));
      sum += b.qs[j];
    }
    b.s = Fp32ToFp16(static_cast<float>(sum) * d);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ8_1(const uint8_t* src, float* dst, int64_t nb) {
  constexpr int qk = kQK8_1;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ8_1>(src, i);
    const float d = Fp16ToFp32(b.d);
    float* y = dst + i * qk;
    for (int j = 0; j < qk; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

}  // namespace weft::quant_internal
