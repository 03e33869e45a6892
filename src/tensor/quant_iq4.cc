// Reference (de)quantization of IQ4_NL: 32-element blocks of 4-bit codes
// into a fixed non-linear table (kIQ4NLValues) times one fp16 scale. The
// quantizer is ggml's quantize_row_iq4_nl_ref, operation for operation (so
// its bytes match, as tests/data/quant/iq4_nl.bin checks): codes for the
// scale that puts the largest magnitude on the table's end, then the
// least-squares scale of those codes with each element weighted by x^2.
// (llama-quantize also tries 15 scales around it; this does not.)
#include <cmath>
#include <cstring>

#include "tensor/blocks.h"
#include "tensor/half.h"
#include "tensor/quant_internal.h"

namespace weft::quant_internal {
namespace {

// The index of the table value nearest x (ties to the upper one), as
// ggml's best_index_int8 over an ascending table.
int NearestValue(float x) {
  const int8_t* v = kIQ4NLValues;
  if (x <= v[0]) return 0;
  if (x >= v[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < v[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

}  // namespace

void QuantizeIQ4_NL(const float* src, uint8_t* dst, int64_t nb) {
  // A block too small to scale keeps the previous block's codes, as ggml's
  // reference does (its code buffer lives across the blocks of a row); its
  // scale is 0, so they decode to zeros all the same.
  int codes[kQK4_NL] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK4_NL;
    float amax = 0, max = 0;
    for (int j = 0; j < kQK4_NL; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    float d = 0;
    if (amax >= 1e-15f) {
      // The largest magnitude on the table's end, then the least-squares
      // scale of those codes, each element weighted by x^2.
      const float id = 1 / (max / kIQ4NLValues[0]);
      float sumqx = 0, sumq2 = 0;
      for (int j = 0; j < kQK4_NL; ++j) {
        codes[j] = NearestValue(id * x[j]);
        const float q = kIQ4NLValues[codes[j]];
        const float w = x[j] * x[j];
        sumqx += w * q * x[j];
        sumq2 += w * q * q;
      }
      d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    }
    BlockIQ4_NL b;
    b.d = Fp32ToFp16(d);
    for (int j = 0; j < kQK4_NL / 2; ++j) {
      b.qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + kQK4_NL / 2] << 4));
    }
    StoreBlock(b, dst, i);
  }
}

void DequantizeIQ4_NL(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockIQ4_NL>(src, i);
    const float d = Fp16ToFp32(b.d);
    float* y = dst + i * kQK4_NL;
    for (int j = 0; j < kQK4_NL / 2; ++j) {
      y[j] = d * kIQ4NLValues[b.qs[j] & 0x0f];
      y[j + kQK4_NL / 2] = d * kIQ4NLValues[b.qs[j] >> 4];
    }
  }
}

}  // namespace weft::quant_internal
