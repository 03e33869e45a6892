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

// The 32 codes of a Q4 or Q5 block (Q5: the blocks with qh) in and out.
template <typename Block>
void PackCodes(const int* q, Block* b) {
  if constexpr (requires { b->qh; }) {
    PackQ5(q, b->qs, b->qh);
  } else {
    PackQ4(q, b->qs);
  }
}

template <typename Block>
void UnpackCodes(const Block& b, int* q) {
  if constexpr (requires { b.qh; }) {
    UnpackQ5(b.qs, b.qh, q);
  } else {
    UnpackQ4(b.qs, q);
  }
}

// Q4_0 and Q5_0: symmetric, d = signed absmax / -kOffset (2^bits / 2) and
// x = d * (code - kOffset).
template <typename Block, int kOffset>
void QuantizeSymmetric(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * 32;
    const float d = SignedAbsMax(x, 32) / -kOffset;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    Block b;
    b.d = Fp32ToFp16(d);
    int q[32];
    QuantizeBlock32(x, 0.0f, id, kOffset + 0.5f, 2 * kOffset - 1, q);
    PackCodes(q, &b);
    StoreBlock(b, dst, i);
  }
}

template <typename Block, int kOffset>
void DequantizeSymmetric(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<Block>(src, i);
    int q[32];
    UnpackCodes(b, q);
    DequantizeBlock32(q, kOffset, Fp16ToFp32(b.d), nullptr, dst + i * 32);
  }
}

// Q4_1 and Q5_1: d = (max - min) / kMaxCode (2^bits - 1), plus the minimum,
// x = d * code + m.
template <typename Block, int kMaxCode>
void QuantizeWithMin(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * 32;
    float min, max;
    MinMax(x, 32, &min, &max);
    const float d = (max - min) / kMaxCode;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    Block b;
    b.d = Fp32ToFp16(d);
    b.m = Fp32ToFp16(min);
    int q[32];
    QuantizeBlock32(x, min, id, 0.5f, kMaxCode, q);
    PackCodes(q, &b);
    StoreBlock(b, dst, i);
  }
}

template <typename Block>
void DequantizeWithMin(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<Block>(src, i);
    int q[32];
    UnpackCodes(b, q);
    const float m = Fp16ToFp32(b.m);
    DequantizeBlock32(q, 0, Fp16ToFp32(b.d), &m, dst + i * 32);
  }
}

// Q8_0 and Q8_1: d = absmax / 127, x = d * qs; Q8_1 also stores s = d *
// sum(qs).
template <typename Block>
void QuantizeQ8(const float* src, uint8_t* dst, int64_t nb) {
  constexpr int qk = 32;
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    Block b;
    b.d = Fp32ToFp16(d);
    int sum = 0;
    for (int j = 0; j < qk; ++j) {
      b.qs[j] = static_cast<int8_t>(RoundClamp(x[j] * id, -128, 127));
      sum += b.qs[j];
    }
    if constexpr (requires { b.s; }) b.s = Fp32ToFp16(static_cast<float>(sum) * d);
    StoreBlock(b, dst, i);
  }
}

template <typename Block>
void DequantizeQ8(const uint8_t* src, float* dst, int64_t nb) {
  constexpr int qk = 32;
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<Block>(src, i);
    const float d = Fp16ToFp32(b.d);
    float* y = dst + i * qk;
    for (int j = 0; j < qk; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

static_assert(kQK4_0 == 32 && kQK4_1 == 32 && kQK5_0 == 32 && kQK5_1 == 32 && kQK8_0 == 32 &&
              kQK8_1 == 32);

}  // namespace

void QuantizeQ4_0(const float* src, uint8_t* dst, int64_t nb) {
  QuantizeSymmetric<BlockQ4_0, 8>(src, dst, nb);
}
void DequantizeQ4_0(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeSymmetric<BlockQ4_0, 8>(src, dst, nb);
}
void QuantizeQ5_0(const float* src, uint8_t* dst, int64_t nb) {
  QuantizeSymmetric<BlockQ5_0, 16>(src, dst, nb);
}
void DequantizeQ5_0(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeSymmetric<BlockQ5_0, 16>(src, dst, nb);
}
void QuantizeQ4_1(const float* src, uint8_t* dst, int64_t nb) {
  QuantizeWithMin<BlockQ4_1, 15>(src, dst, nb);
}
void DequantizeQ4_1(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeWithMin<BlockQ4_1>(src, dst, nb);
}
void QuantizeQ5_1(const float* src, uint8_t* dst, int64_t nb) {
  QuantizeWithMin<BlockQ5_1, 31>(src, dst, nb);
}
void DequantizeQ5_1(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeWithMin<BlockQ5_1>(src, dst, nb);
}
void QuantizeQ8_0(const float* src, uint8_t* dst, int64_t nb) { QuantizeQ8<BlockQ8_0>(src, dst, nb); }
void DequantizeQ8_0(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeQ8<BlockQ8_0>(src, dst, nb);
}
void QuantizeQ8_1(const float* src, uint8_t* dst, int64_t nb) { QuantizeQ8<BlockQ8_1>(src, dst, nb); }
void DequantizeQ8_1(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeQ8<BlockQ8_1>(src, dst, nb);
}

}  // namespace weft::quant_internal
