// The scalar twins of the K-quant matmul kernels (Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K) against Q8_K activations. Per super-block every sub-block product is
// an exact integer sum; one float expression per super-block combines them.
// The SIMD kernels compute the same integers and differ only in the order of
// their float additions.
#include "kernels/scalar_internal.h"
#include "tensor/blocks.h"
#include "tensor/half.h"

namespace weft::kernels {
namespace {

// The 2-bit code of element i (0..255) of a Q2_K / Q3_K super-block: the
// 32-byte half n = i / 128 holds four codes per byte, element 128n + 32j + l
// at bits 2j of byte l.
inline int Code2(const uint8_t* qs, int i) {
  return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
}

// Q2_K: 16 groups of 16, x = d * (sc & 15) * q - dmin * (sc >> 4).
float DotQ2_K(const BlockQ2_K& w, const BlockQ8_K& a) {
  int sumi = 0, summ = 0;
  for (int g = 0; g < 16; ++g) {
    int sg = 0;
    for (int l = 0; l < 16; ++l) sg += Code2(w.qs, 16 * g + l) * a.qs[16 * g + l];
    sumi += (w.scales[g] & 15) * sg;
    summ += (w.scales[g] >> 4) * a.bsums[g];
  }
  return a.d * (Fp16ToFp32(w.d) * static_cast<float>(sumi) -
                Fp16ToFp32(w.dmin) * static_cast<float>(summ));
}

// The 16 6-bit Q3_K scales minus their bias of 32.
void ScalesQ3K(const uint8_t packed[12], int out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int lo = j < 8 ? (packed[j] & 0x0f) : (packed[j - 8] >> 4);
    const int hi = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = (lo | (hi << 4)) - 32;
  }
}

// Q3_K: 16 groups of 16, x = d * sc * (q2 - 4 * !hbit), the high bit of
// element i at bit i / 32 of hmask[i % 32].
float DotQ3_K(const BlockQ3_K& w, const BlockQ8_K& a) {
  int sc[16];
  ScalesQ3K(w.scales, sc);
  int sumi = 0;
  for (int g = 0; g < 16; ++g) {
    int sg = 0;
    for (int l = 0; l < 16; ++l) {
      const int i = 16 * g + l;
      const int hbit = (w.hmask[i % 32] >> (i / 32)) & 1;
      sg += (Code2(w.qs, i) - (hbit ? 0 : 4)) * a.qs[i];
    }
    sumi += sc[g] * sg;
  }
  return Fp16ToFp32(w.d) * a.d * static_cast<float>(sumi);
}

// Q4_K and Q5_K (Block: BlockQ4_K, or BlockQ5_K with its 5th bits in qh):
// x = d*sc*q - dmin*m per 32-group.
template <typename Block>
float DotQ45K(const Block& w, const BlockQ8_K& a) {
  int sumi = 0, summ = 0;
  for (int j = 0; j < 4; ++j) {
    uint8_t sc0, m0, sc1, m1;
    ScaleMinK4(2 * j, w.scales, &sc0, &m0);
    ScaleMinK4(2 * j + 1, w.scales, &sc1, &m1);
    int s0 = 0, s1 = 0;
    for (int l = 0; l < 32; ++l) {
      int q0 = w.qs[32 * j + l] & 0x0f, q1 = w.qs[32 * j + l] >> 4;
      if constexpr (requires { w.qh; }) {
        q0 |= ((w.qh[l] >> (2 * j)) & 1) << 4;
        q1 |= ((w.qh[l] >> (2 * j + 1)) & 1) << 4;
      }
      s0 += q0 * a.qs[64 * j + l];
      s1 += q1 * a.qs[64 * j + 32 + l];
    }
    sumi += sc0 * s0 + sc1 * s1;
    summ += m0 * (a.bsums[4 * j] + a.bsums[4 * j + 1]) +
            m1 * (a.bsums[4 * j + 2] + a.bsums[4 * j + 3]);
  }
  return a.d * (Fp16ToFp32(w.d) * static_cast<float>(sumi) -
                Fp16ToFp32(w.dmin) * static_cast<float>(summ));
}

float DotQ6_K(const BlockQ6_K& w, const BlockQ8_K& a) {
  int q6[kQK_K];
  const uint8_t* ql = w.ql;
  const uint8_t* qh = w.qh;
  for (int n = 0; n < kQK_K; n += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      q6[n + l] = (ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4);
      q6[n + l + 32] = (ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4);
      q6[n + l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
      q6[n + l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
    }
  }
  int sumi = 0;
  for (int g = 0; g < 16; ++g) {
    int sg = 0;
    for (int l = 0; l < 16; ++l) sg += q6[16 * g + l] * a.qs[16 * g + l];
    sumi += w.scales[g] * (sg - 32 * a.bsums[g]);
  }
  return Fp16ToFp32(w.d) * a.d * static_cast<float>(sumi);
}

}  // namespace

void FillScalarKQuants(KernelTable* t, QuantizeActFn quantize_q8k) {
  auto set = [t, quantize_q8k](WeightFormat f, DotFn d) {
    SetMatMul(t, f, ActFormat::kQ8K, quantize_q8k, d);
  };
  set(WeightFormat::kQ2_K, DotCols<DotSuperBlocks<BlockQ2_K, DotQ2_K>>);
  set(WeightFormat::kQ3_K, DotCols<DotSuperBlocks<BlockQ3_K, DotQ3_K>>);
  set(WeightFormat::kQ4_K, DotCols<DotSuperBlocks<BlockQ4_K, DotQ45K<BlockQ4_K>>>);
  set(WeightFormat::kQ5_K, DotCols<DotSuperBlocks<BlockQ5_K, DotQ45K<BlockQ5_K>>>);
  set(WeightFormat::kQ6_K, DotCols<DotSuperBlocks<BlockQ6_K, DotQ6_K>>);
}

}  // namespace weft::kernels
