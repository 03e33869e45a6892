// Packed block layouts of ggml's quantized weight formats, byte for byte as
// they sit in GGUF files (little-endian, no padding). Each struct's size is
// checked against the type table in types.cc.
//
// Thread safety: plain data.
#pragma once

#include <cstdint>
#include <cstring>

namespace weft {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;
inline constexpr int kQK_K = 256;  // super-block of the K-quants
inline constexpr int kKScaleSize = 12;

// IEEE half, stored as its bits.
using Fp16Bits = uint16_t;

// x[i] = d * (q[i] - 8); element j in the low nibble of qs[j], element j+16
// in the high nibble.
struct BlockQ4_0 {
  Fp16Bits d;
  uint8_t qs[kQK4_0 / 2];
};

// x[i] = d * q[i] + m.
struct BlockQ4_1 {
  Fp16Bits d;
  Fp16Bits m;
  uint8_t qs[kQK4_1 / 2];
};

// x[i] = d * (q[i] - 16); bit 4 of element j is bit j of qh.
struct BlockQ5_0 {
  Fp16Bits d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};

// x[i] = d * q[i] + m.
struct BlockQ5_1 {
  Fp16Bits d;
  Fp16Bits m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};

// x[i] = d * qs[i].
struct BlockQ8_0 {
  Fp16Bits d;
  int8_t qs[kQK8_0];
};

// x[i] = d * qs[i]; s = d * sum(qs) (used by dot products).
struct BlockQ8_1 {
  Fp16Bits d;
  Fp16Bits s;
  int8_t qs[kQK8_1];
};

// 16 groups of 16: x = d * (scales & 0xF) * q - dmin * (scales >> 4),
// 2-bit q.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  Fp16Bits d;
  Fp16Bits dmin;
};

// 16 groups of 16: x = d * (scale6 - 32) * (q2 - (hmask bit ? 0 : 4)).
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];  // 16 6-bit scales, packed
  Fp16Bits d;
};

// 8 groups of 32: x = d * sc * q - dmin * m, 6-bit sc and m packed in
// `scales`, 4-bit q.
struct BlockQ4_K {
  Fp16Bits d;
  Fp16Bits dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQK_K / 2];
};

// The 6-bit scale and min of sub-block j (0..7) from the 12 scale bytes q
// of a Q4_K / Q5_K block. static: internal linkage, so a copy compiled with
// ISA flags is never shared with other files.
static inline void ScaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// As Q4_K with a fifth bit per element in qh.
struct BlockQ5_K {
  Fp16Bits d;
  Fp16Bits dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 groups of 16: x = d * scales[g] * (q6 - 32).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  Fp16Bits d;
};

// IQ4_NL: x[i] = d * kIQ4NLValues[code i], the codes packed as in Q4_0
// (element j in the low nibble of qs[j], element j + 16 in the high one).
inline constexpr int kQK4_NL = 32;
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
struct BlockIQ4_NL {
  Fp16Bits d;
  uint8_t qs[kQK4_NL / 2];
};

// MXFP4 (OCP microscaling FP4): x[i] = 2^(e - 128) * kMXFP4Values[code i],
// kMXFP4Values the E2M1 values doubled (hence the halved scale), the codes
// packed as in Q4_0. `e` is an E8M0 exponent byte (E8M0ToFp32Half).
inline constexpr int kQK_MXFP4 = 32;
inline constexpr int8_t kMXFP4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK_MXFP4 / 2];
};

// 2^(e - 128) as a float, exactly (e = 0 and 1 are denormals), as ggml's
// ggml_e8m0_to_fp32_half.
inline float E8M0ToFp32Half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// IQ4_XS: a super-block of 8 IQ4_NL-coded sub-blocks of 32 with 6-bit
// scales: sub-block ib has x = d * (ls - 32) * kIQ4NLValues[code], ls = the
// ib-th nibble of scales_l (low 4 bits) | bits 2 ib, 2 ib + 1 of scales_h
// << 4; the codes of sub-block ib are qs[16 ib .. 16 ib + 15], packed as
// IQ4_NL's.
struct BlockIQ4_XS {
  Fp16Bits d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

// Intermediate format for dot products: x = d * qs, bsums = sums of 16.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

// The 6-bit scale of sub-block ib (0..7) of an IQ4_XS block, minus 32.
static inline int IQ4XSScale(const BlockIQ4_XS& b, int ib) {
  return (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) |
          (((b.scales_h >> (2 * ib)) & 3) << 4)) -
         32;
}
static_assert(alignof(BlockQ4_0) == 2 && alignof(BlockQ8_K) == 4);

}  // namespace weft
