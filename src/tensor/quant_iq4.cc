// Reference (de)quantization of the 4-bit codebook formats: IQ4_NL, IQ4_XS
// and MXFP4 (at the end). IQ4_NL: 32-element blocks of 4-bit codes
// into a fixed non-linear table (kIQ4NLValues) times one fp16 scale. The
// quantizer is ggml's quantize_row_iq4_nl_ref, operation for operation (so
// its bytes match, as tests/data/quant/iq4_nl.bin checks): codes for the
// scale that puts the largest magnitude on the table's end, then the
// least-squares scale of those codes with each element weighted by x^2.
// (llama-quantize also tries 15 scales around it; this does not.)
#include <algorithm>
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

// The scale of one 32-element sub-block as ggml's quantize_row_iq4_nl_impl
// finds it with ntry = 7 (what IQ4_XS uses): the scale that puts the
// largest magnitude on the table's end, its codes' least-squares scale,
// then 15 trial scales around it, keeping the one that explains most of
// the block (elements weighted by x^2). 0 for a block too small to scale.
float SubBlockScale(const float* x) {
  constexpr int kTries = 7;
  const int8_t* values = kIQ4NLValues;
  const float max = SignedAbsMax(x, 32);
  if (std::fabs(max) < 1e-15f) return 0;
  float d = -max / values[0];
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < 32; ++j) {
    const float q = values[NearestValue(id * x[j])];
    const float w = x[j] * x[j];
    sumqx += w * q * x[j];
    sumq2 += w * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int t = -kTries; t <= kTries; ++t) {
    id = (t + values[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = values[NearestValue(id * x[j])];
      const float w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

}  // namespace

void QuantizeIQ4_NL(const float* src, uint8_t* dst, int64_t nb) {
  // A block too small to scale keeps the previous block's codes, as ggml's
  // reference does (its code buffer lives across the blocks of a row); its
  // scale is 0, so they decode to zeros all the same.
  int codes[kQK4_NL] = {};
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK4_NL;
    const float max = SignedAbsMax(x, kQK4_NL);
    float d = 0;
    if (std::fabs(max) >= 1e-15f) {
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

// ggml's quantize_row_iq4_xs_ref: each sub-block's scale (SubBlockScale),
// one super-block scale d = -(the largest by magnitude) / 32, each
// sub-block's 6-bit multiple of d, and the codes for that multiple.
void QuantizeIQ4_XS(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_K;
    float scales[kQK_K / 32];
    for (int ib = 0; ib < kQK_K / 32; ++ib) scales[ib] = SubBlockScale(x + 32 * ib);
    const float max_scale = SignedAbsMax(scales, kQK_K / 32);
    BlockIQ4_XS b;
    std::memset(&b, 0, sizeof(b));
    const float d = -max_scale / 32;
    b.d = Fp32ToFp16(d);
    const float id = d != 0 ? 1 / d : 0.f;
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      const int l = std::max(-32, std::min(31, NearestInt(id * scales[ib])));
      const float dl = d * l;
      const float idl = dl != 0 ? 1 / dl : 0.f;
      int codes[32];
      for (int j = 0; j < 32; ++j) codes[j] = NearestValue(idl * x[32 * ib + j]);
      for (int j = 0; j < 16; ++j) {
        b.qs[16 * ib + j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
      }
      const int ls = l + 32;
      b.scales_l[ib / 2] |= static_cast<uint8_t>((ls & 0xf) << (4 * (ib % 2)));
      b.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * ib));
    }
    StoreBlock(b, dst, i);
  }
}

void DequantizeIQ4_XS(const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<BlockIQ4_XS>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      const float dl = d * static_cast<float>(IQ4XSScale(b, ib));
      float* y = dst + i * kQK_K + 32 * ib;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kIQ4NLValues[b.qs[16 * ib + j] & 0x0f];
        y[j + 16] = dl * kIQ4NLValues[b.qs[16 * ib + j] >> 4];
      }
    }
  }
}

namespace {

float BlockScale(const BlockIQ4_NL& b) { return Fp16ToFp32(b.d); }
float BlockScale(const BlockMXFP4& b) { return E8M0ToFp32Half(b.e); }

// A 32-element block of 4-bit codes into a 16-value codebook, packed as in
// Q4_0 (element j low nibble of qs[j], element j + 16 the high one), times
// the block's scale: IQ4_NL and MXFP4.
template <typename Block>
void DequantizeCodebook4(const int8_t* values, const uint8_t* src, float* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const auto b = LoadBlock<Block>(src, i);
    const float d = BlockScale(b);
    float* y = dst + i * 32;
    for (int j = 0; j < 16; ++j) {
      y[j] = d * values[b.qs[j] & 0x0f];
      y[j + 16] = d * values[b.qs[j] >> 4];
    }
  }
}

// The code of the MXFP4 value nearest x / d (the first on ties), as
// ggml's best_index_mxfp4.
int NearestMXFP4(float x, float d) {
  int best = 0;
  float best_err = std::fabs(kMXFP4Values[0] * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(kMXFP4Values[i] * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

void DequantizeIQ4_NL(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeCodebook4<BlockIQ4_NL>(kIQ4NLValues, src, dst, nb);
}

void DequantizeMXFP4(const uint8_t* src, float* dst, int64_t nb) {
  DequantizeCodebook4<BlockMXFP4>(kMXFP4Values, src, dst, nb);
}

// ggml's quantize_row_mxfp4_ref: the shared exponent puts the block's
// largest magnitude in [4, 8) times 2^(e - 128), i.e. at or under the
// largest code (12 doubled = 6), then each element's nearest code. (ggml
// converts a negative exponent to uint8_t, undefined behaviour, for blocks
// whose largest magnitude is below 2^-125; this clamps it to 0.)
void QuantizeMXFP4(const float* src, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * kQK_MXFP4;
    float amax = 0;
    for (int j = 0; j < kQK_MXFP4; ++j) amax = std::max(amax, std::fabs(x[j]));
    int e = 0;
    if (amax > 0.0f) {
      e = std::clamp(static_cast<int>(std::floor(std::log2(amax)) - 2 + 127), 0, 255);
    }
    BlockMXFP4 b;
    b.e = static_cast<uint8_t>(e);
    const float d = E8M0ToFp32Half(b.e);
    for (int j = 0; j < kQK_MXFP4 / 2; ++j) {
      b.qs[j] = static_cast<uint8_t>(NearestMXFP4(x[j], d) |
                                     (NearestMXFP4(x[j + kQK_MXFP4 / 2], d) << 4));
    }
    StoreBlock(b, dst, i);
  }
}

}  // namespace weft::quant_internal
