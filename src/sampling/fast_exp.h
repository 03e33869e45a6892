// ExpApprox: exp(x) in float from plain IEEE arithmetic (Cody-Waite range
// reduction + degree-7 polynomial, relative error < 2e-7), so that the
// sampler's weights, and therefore the token a draw picks, are bit-identical
// on every platform (libm's expf is not), and cheap enough for 262144-token
// vocabularies. Bit-exactness needs -ffp-contract=off (no fused multiply-add),
// which weft_sampling compiles with; callers elsewhere get close values.
//
// Thread safety: pure function.
#pragma once

#include <bit>
#include <cstdint>

namespace weft::sampling {

// exp(x); 0 for x <= -87 and for NaN, clamped at x = 88. Branch-free so
// loops over it vectorize.
inline float ExpApprox(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;  // few mantissa bits: n*hi exact
  constexpr float kLn2Lo = 1.428606765330187045e-06f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: float round-to-nearest
  // Clamped so the float->int conversion below is always defined (NaN too).
  const float c = x > -87.0f ? (x < 88.0f ? x : 88.0f) : -87.0f;
  const float nf = (c * kLog2e + kRound) - kRound;  // round(c / ln 2)
  const float r = (c - nf * kLn2Hi) - nf * kLn2Lo;   // |r| <= ~0.35
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n for n in [-126, 127]: a normal float built from its exponent bits.
  const int32_t n = static_cast<int32_t>(nf);
  const float scale = std::bit_cast<float>((n + 127) << 23);
  return x > -87.0f ? p * scale : 0.0f;
}

}  // namespace weft::sampling
