#include "tensor/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace weft {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Reference rounding: the nearest half by exhaustive comparison with the two
// neighbouring halves, ties to the even one. Works on doubles, so exact.
uint16_t SlowFp32ToFp16(float f) {
  if (std::isnan(f)) return 0x7e00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;
  // Largest half <= a (halves of one sign are ordered like their bits).
  uint16_t lo = 0;
  for (int bit = 14; bit >= 0; --bit) {
    const uint16_t cand = static_cast<uint16_t>(lo | (1u << bit));
    if (cand <= 0x7bff && Fp16ToFp32(cand) <= a) lo = cand;
  }
  if (static_cast<double>(Fp16ToFp32(lo)) == a) return sign | lo;
  const uint16_t hi = static_cast<uint16_t>(lo + 1);
  const double dlo = a - Fp16ToFp32(lo);
  const double dhi = static_cast<double>(Fp16ToFp32(hi)) - a;
  if (dlo < dhi) return sign | lo;
  if (dhi < dlo) return sign | hi;
  return sign | ((lo & 1) ? hi : lo);
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(Fp32ToFp16(0.0f), 0x0000);
  EXPECT_EQ(Fp32ToFp16(-0.0f), 0x8000);
  EXPECT_EQ(Fp32ToFp16(1.0f), 0x3c00);
  EXPECT_EQ(Fp32ToFp16(-2.0f), 0xc000);
  EXPECT_EQ(Fp32ToFp16(65504.0f), 0x7bff);
  EXPECT_EQ(Fp32ToFp16(65519.0f), 0x7bff);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7c00);  // tie rounds to even = inf
  EXPECT_EQ(Fp32ToFp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(Fp32ToFp16(std::nanf("")), 0x7e00);
  EXPECT_EQ(Fp32ToFp16(5.9604645e-8f), 0x0001);    // 2^-24, smallest subnormal
  EXPECT_EQ(Fp32ToFp16(2.9802322e-8f), 0x0000);    // 2^-25: tie to even 0
  EXPECT_EQ(Fp32ToFp16(8.940697e-8f), 0x0002);     // 1.5 * 2^-24: tie to even 2
  EXPECT_EQ(Fp32ToFp16(1.0f + 0x1p-11f), 0x3c00);  // tie to even
  EXPECT_EQ(Fp32ToFp16(1.0f + 0x3p-11f), 0x3c02);  // tie to even (up)
  EXPECT_EQ(Fp32ToFp16(6.1035156e-5f), 0x0400);    // smallest normal
  EXPECT_EQ(Fp32ToFp16(6.0975552e-5f), 0x03ff);    // largest subnormal
  EXPECT_FLOAT_EQ(Fp16ToFp32(0x3555), 0.33325195f);
  EXPECT_TRUE(std::isinf(Fp16ToFp32(0xfc00)) && Fp16ToFp32(0xfc00) < 0);
  EXPECT_TRUE(std::isnan(Fp16ToFp32(0x7e00)));
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = Fp16ToFp32(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_EQ(Fp32ToFp16(f), (h & 0x8000) | 0x7e00) << h;
    } else {
      EXPECT_EQ(Fp32ToFp16(f), h) << h;
      // Exactness of the widening: compare with ldexp arithmetic.
      const int e = (h >> 10) & 0x1f;
      const int m = h & 0x3ff;
      double want = e == 0    ? std::ldexp(m, -24)
                    : e == 31 ? INFINITY
                              : std::ldexp(1024 + m, e - 25);
      if (h & 0x8000) want = -want;
      EXPECT_EQ(static_cast<double>(f), want) << h;
    }
  }
}

TEST(HalfTest, RandomFloatsRoundToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    // Bias the exponent towards the half range (and around it).
    uint32_t u = bits(rng);
    const uint32_t exp = 100 + (u >> 24) % 50;  // 2^-27 .. 2^22
    u = (u & 0x807fffff) | (exp << 23);
    float f;
    std::memcpy(&f, &u, 4);
    ASSERT_EQ(Fp32ToFp16(f), SlowFp32ToFp16(f)) << f << " bits " << u;
    ++checked;
  }
  // Exact midpoints between neighbouring halves.
  for (uint16_t h = 0; h < 0x7bff; h += 7) {
    const double mid =
        (static_cast<double>(Fp16ToFp32(h)) + Fp16ToFp32(h + 1)) / 2;
    const float f = static_cast<float>(mid);
    if (static_cast<double>(f) != mid) continue;
    ASSERT_EQ(Fp32ToFp16(f), (h & 1) ? h + 1 : h) << h;
    ++checked;
  }
  EXPECT_GT(checked, 200000);
}

TEST(HalfTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(Fp32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bits(Bf16ToFp32(0x3f80)), Bits(1.0f));
  float f;
  uint32_t u = 0x3f808000;  // exactly between 0x3f80 and 0x3f81: to even
  std::memcpy(&f, &u, 4);
  EXPECT_EQ(Fp32ToBf16(f), 0x3f80);
  u = 0x3f818000;  // between 0x3f81 and 0x3f82: to even (up)
  std::memcpy(&f, &u, 4);
  EXPECT_EQ(Fp32ToBf16(f), 0x3f82);
  u = 0x7f800001;  // signalling NaN becomes a quiet NaN
  std::memcpy(&f, &u, 4);
  EXPECT_EQ(Fp32ToBf16(f), 0x7fc0);
}

}  // namespace
}  // namespace weft
