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

}  // namespace

// ---- Q4_0 ----

void QuantizeQ4_0(const float* src, uint8_t* dst, int64_t nb) {
  constexpr int qk = kQK4_0;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    const float max = SignedAbsMax(x, qk);
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = Fp32ToFp16(d);
    for (int j = 0; j < qk / 2; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[qk / 2 + j] * id;
      const int q0 = TruncClamp(x0 + 8.5f, 0, 15);
      const int q1 = TruncClamp(x1 + 8.5f, 0, 15);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ4_0(const uint8_t* src, float* dst, int64_t nb) {
  constexpr int qk = kQK4_0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ4_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      const int x0 = (b.qs[j] & 0x0f) - 8;
      const int x1 = (b.qs[j] >> 4) - 8;
      y[j] = static_cast<float>(x0) * d;
      y[j + qk / 2] = static_cast<float>(x1) * d;
    }
  }
}

// ---- Q4_1 ----

void QuantizeQ4_1(const float* src, uint8_t* dst, int64_t nb) {
  constexpr int qk = kQK4_1;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    float min, max;
    MinMax(x, qk, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = Fp32ToFp16(d);
    b.m = Fp32ToFp16(min);
    for (int j = 0; j < qk / 2; ++j) {
      const float x0 = (x[j] - min) * id;
      const float x1 = (x[qk / 2 + j] - min) * id;
      const int q0 = TruncClamp(x0 + 0.5f, 0, 15);
      const int q1 = TruncClamp(x1 + 0.5f, 0, 15);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ4_1(const uint8_t* src, float* dst, int64_t nb) {
  constexpr int qk = kQK4_1;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ4_1>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float m = Fp16ToFp32(b.m);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      y[j] = static_cast<float>(b.qs[j] & 0x0f) * d + m;
      y[j + qk / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

// ---- Q5_0 ----

void QuantizeQ5_0(const float* src, uint8_t* dst, int64_t nb) {
  constexpr int qk = kQK5_0;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    const float max = SignedAbsMax(x, qk);
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 b;
    b.d = Fp32ToFp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < qk / 2; ++j) {
      const int q0 = TruncClamp(x[j] * id + 16.5f, 0, 31);
      const int q1 = TruncClamp(x[qk / 2 + j] * id + 16.5f, 0, 31);
      b.qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
      qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + qk / 2);
    }
    std::memcpy(b.qh, &qh, 4);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ5_0(const uint8_t* src, float* dst, int64_t nb) {
  constexpr int qk = kQK5_0;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ5_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      const int h0 = ((qh >> j) << 4) & 0x10;
      const int h1 = (qh >> (j + 12)) & 0x10;
      const int x0 = ((b.qs[j] & 0x0f) | h0) - 16;
      const int x1 = ((b.qs[j] >> 4) | h1) - 16;
      y[j] = static_cast<float>(x0) * d;
      y[j + qk / 2] = static_cast<float>(x1) * d;
    }
  }
}

// ---- Q5_1 ----

void QuantizeQ5_1(const float* src, uint8_t* dst, int64_t nb) {
  constexpr int qk = kQK5_1;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    float min, max;
    MinMax(x, qk, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_1 b;
    b.d = Fp32ToFp16(d);
    b.m = Fp32ToFp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < qk / 2; ++j) {
      const int q0 = TruncClamp((x[j] - min) * id + 0.5f, 0, 31);
      const int q1 = TruncClamp((x[qk / 2 + j] - min) * id + 0.5f, 0, 31);
      b.qs[j] = static_cast<uint8_t>((q0 & 0x0f) | ((q1 & 0x0f) << 4));
      qh |= static_cast<uint32_t>((q0 & 0x10) >> 4) << j;
      qh |= static_cast<uint32_t>((q1 & 0x10) >> 4) << (j + qk / 2);
    }
    std::memcpy(b.qh, &qh, 4);
    StoreBlock(b, dst, i);
  }
}

void DequantizeQ5_1(const uint8_t* src, float* dst, int64_t nb) {
  constexpr int qk = kQK5_1;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockQ5_1>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float m = Fp16ToFp32(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    float* y = dst + i * qk;
    for (int j = 0; j < qk / 2; ++j) {
      const int h0 = ((qh >> j) << 4) & 0x10;
      const int h1 = (qh >> (j + 12)) & 0x10;
      const int x0 = (b.qs[j] & 0x0f) | h0;
      const int x1 = (b.qs[j] >> 4) | h1;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + qk / 2] = static_cast<float>(x1) * d + m;
    }
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
