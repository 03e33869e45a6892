// Per-format reference kernels behind quant.h's dispatch. Each works on
// whole blocks: `nb` blocks of the format at `src`/`dst`, which need no
// particular alignment (blocks are copied in and out with memcpy).
//
// Thread safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace weft::quant_internal {

// Round to nearest, ties to even, as ggml's nearest_int (valid for
// |x| <= 4194303; outside that range the result is garbage but defined).
inline int NearestInt(float x) {
  float v = x + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// (int)trunc(x) clamped to [lo, hi]; NaN gives lo. Identical to a C cast
// for values in range, without the undefined behaviour outside it.
inline int TruncClamp(float x, int lo, int hi) {
  if (!(x >= static_cast<float>(lo))) return lo;
  if (x >= static_cast<float>(hi)) return hi;
  return static_cast<int>(x);
}

// roundf (half away from zero) clamped to [lo, hi]; NaN gives 0.
inline int RoundClamp(float x, int lo, int hi) {
  if (std::isnan(x)) return 0;
  float r = std::round(x);
  if (r <= static_cast<float>(lo)) return lo;
  if (r >= static_cast<float>(hi)) return hi;
  return static_cast<int>(r);
}

// The value of largest magnitude among x[0..n): the first one on ties, 0
// when every one is 0 (its magnitude is then std::fabs of it).
inline float SignedAbsMax(const float* x, int n) {
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

// Block i of a packed array, copied out (no alignment needed).
template <typename Block>
Block LoadBlock(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + i * static_cast<int64_t>(sizeof(Block)), sizeof(b));
  return b;
}

template <typename Block>
void StoreBlock(const Block& b, uint8_t* dst, int64_t i) {
  std::memcpy(dst + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(b));
}

#define WEFT_QUANT_FNS(name)                                         \
  void Dequantize##name(const uint8_t* src, float* dst, int64_t nb); \
  void Quantize##name(const float* src, uint8_t* dst, int64_t nb);

// quant_legacy.cc
WEFT_QUANT_FNS(Q4_0)
WEFT_QUANT_FNS(Q4_1)
WEFT_QUANT_FNS(Q5_0)
WEFT_QUANT_FNS(Q5_1)
WEFT_QUANT_FNS(Q8_0)
WEFT_QUANT_FNS(Q8_1)
// quant_iq4.cc
WEFT_QUANT_FNS(IQ4_NL)
WEFT_QUANT_FNS(IQ4_XS)
WEFT_QUANT_FNS(MXFP4)
// quant_k_low.cc
WEFT_QUANT_FNS(Q2_K)
WEFT_QUANT_FNS(Q3_K)
// quant_k.cc
WEFT_QUANT_FNS(Q4_K)
WEFT_QUANT_FNS(Q5_K)
WEFT_QUANT_FNS(Q6_K)
WEFT_QUANT_FNS(Q8_K)

#undef WEFT_QUANT_FNS

}  // namespace weft::quant_internal
