// IEEE half and bfloat16 conversions (scalar, exact, round-to-nearest-even).
#pragma once

#include <bit>
#include <cstdint>

namespace weft {

float Fp16ToFp32(uint16_t h);
uint16_t Fp32ToFp16(float f);

inline float Bf16ToFp32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}
// Round-to-nearest-even; NaN stays a quiet NaN (as ggml does).
inline uint16_t Fp32ToBf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 64);
  return static_cast<uint16_t>((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

}  // namespace weft
