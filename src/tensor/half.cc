#include "tensor/half.h"

#include <bit>

namespace weft {

float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) {  // inf / NaN: keep the payload
    return std::bit_cast<float>(sign | 0x7f800000 | (mant << 13));
  }
  if (exp != 0) {  // normal
    return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  }
  if (mant == 0) return std::bit_cast<float>(sign);  // signed zero
  // Subnormal half: mant * 2^-24, exactly representable as a normal float.
  int e = 113;  // biased float exponent of 2^-14
  while ((mant & 0x400) == 0) {
    mant <<= 1;
    --e;
  }
  mant &= 0x3ff;
  return std::bit_cast<float>(sign | (static_cast<uint32_t>(e) << 23) |
                              (mant << 13));
}

uint16_t Fp32ToFp16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7fffffff;
  if (abs > 0x7f800000) return sign | 0x7e00;   // NaN -> quiet NaN (as ggml)
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds to >= 65520: inf
  const int32_t exp = static_cast<int32_t>(abs >> 23) - 127;
  if (exp >= -14) {
    // Normal half. Round the 23-bit mantissa to 10 bits, nearest-even; a
    // carry out of the mantissa correctly bumps the exponent.
    uint32_t h =
        ((static_cast<uint32_t>(exp + 15) << 10) | ((abs >> 13) & 0x3ff));
    const uint32_t rest = abs & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
    return sign | static_cast<uint16_t>(h);
  }
  if (exp < -25) return sign;  // below half the smallest subnormal: zero
  // Subnormal half: value = m * 2^-24 with m = full mantissa >> shift.
  const uint32_t full = (abs & 0x7fffff) | 0x800000;  // 24 significant bits
  const int shift = -exp - 1;  // 14..24: 2^(exp) * full/2^23 = m * 2^-24
  uint32_t m = full >> shift;
  const uint32_t rest = full & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (m & 1))) ++m;
  return sign | static_cast<uint16_t>(m);  // m may carry into the exponent
}

}  // namespace weft
