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
float DotQ2_K(int64_t k, const void* w, const void* x) {
  const BlockQ2_K* wb = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* a = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    int sumi = 0, summ = 0;
    for (int g = 0; g < 16; ++g) {
      int sg = 0;
      for (int l = 0; l < 16; ++l) sg += Code2(wb[b].qs, 16 * g + l) * a[b].qs[16 * g + l];
      sumi += (wb[b].scales[g] & 15) * sg;
      summ += (wb[b].scales[g] >> 4) * a[b].bsums[g];
    }
    s += a[b].d * (Fp16ToFp32(wb[b].d) * static_cast<float>(sumi) -
                   Fp16ToFp32(wb[b].dmin) * static_cast<float>(summ));
  }
  return s;
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
float DotQ3_K(int64_t k, const void* w, const void* x) {
  const BlockQ3_K* wb = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* a = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    int sc[16];
    ScalesQ3K(wb[b].scales, sc);
    int sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int sg = 0;
      for (int l = 0; l < 16; ++l) {
        const int i = 16 * g + l;
        const int hbit = (wb[b].hmask[i % 32] >> (i / 32)) & 1;
        sg += (Code2(wb[b].qs, i) - (hbit ? 0 : 4)) * a[b].qs[i];
      }
      sumi += sc[g] * sg;
    }
    s += Fp16ToFp32(wb[b].d) * a[b].d * static_cast<float>(sumi);
  }
  return s;
}

// Q4_K and Q5_K (qh null for Q4_K): x = d*sc*q - dmin*m per 32-group.
float DotQ45K(const uint8_t* scales, const uint8_t* qs, const uint8_t* qh,
              float d, float dmin, const BlockQ8_K& a) {
  int sumi = 0, summ = 0;
  for (int j = 0; j < 4; ++j) {
    uint8_t sc0, m0, sc1, m1;
    ScaleMinK4(2 * j, scales, &sc0, &m0);
    ScaleMinK4(2 * j + 1, scales, &sc1, &m1);
    int s0 = 0, s1 = 0;
    for (int l = 0; l < 32; ++l) {
      int q0 = qs[32 * j + l] & 0x0f, q1 = qs[32 * j + l] >> 4;
      if (qh != nullptr) {
        q0 |= ((qh[l] >> (2 * j)) & 1) << 4;
        q1 |= ((qh[l] >> (2 * j + 1)) & 1) << 4;
      }
      s0 += q0 * a.qs[64 * j + l];
      s1 += q1 * a.qs[64 * j + 32 + l];
    }
    sumi += sc0 * s0 + sc1 * s1;
    summ += m0 * (a.bsums[4 * j] + a.bsums[4 * j + 1]) +
            m1 * (a.bsums[4 * j + 2] + a.bsums[4 * j + 3]);
  }
  return a.d * (d * static_cast<float>(sumi) - dmin * static_cast<float>(summ));
}

float DotQ4_K(int64_t k, const void* w, const void* x) {
  const BlockQ4_K* wb = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* a = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    s += DotQ45K(wb[b].scales, wb[b].qs, nullptr, Fp16ToFp32(wb[b].d),
                 Fp16ToFp32(wb[b].dmin), a[b]);
  }
  return s;
}

float DotQ5_K(int64_t k, const void* w, const void* x) {
  const BlockQ5_K* wb = static_cast<const BlockQ5_K*>(w);
  const BlockQ8_K* a = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    s += DotQ45K(wb[b].scales, wb[b].qs, wb[b].qh, Fp16ToFp32(wb[b].d),
                 Fp16ToFp32(wb[b].dmin), a[b]);
  }
  return s;
}

float DotQ6_K(int64_t k, const void* w, const void* x) {
  const BlockQ6_K* wb = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* a = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    int q6[kQK_K];
    const uint8_t* ql = wb[b].ql;
    const uint8_t* qh = wb[b].qh;
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
      for (int l = 0; l < 16; ++l) sg += q6[16 * g + l] * a[b].qs[16 * g + l];
      sumi += wb[b].scales[g] * (sg - 32 * a[b].bsums[g]);
    }
    s += Fp16ToFp32(wb[b].d) * a[b].d * static_cast<float>(sumi);
  }
  return s;
}

}  // namespace

void FillScalarKQuants(KernelTable* t, QuantizeActFn quantize_q8k) {
  auto set = [t, quantize_q8k](WeightFormat f, DotFn d) {
    t->matmul[static_cast<int>(f)] = MatMulKernel{ActFormat::kQ8K, quantize_q8k, d};
  };
  set(WeightFormat::kQ2_K, DotCols<DotQ2_K>);
  set(WeightFormat::kQ3_K, DotCols<DotQ3_K>);
  set(WeightFormat::kQ4_K, DotCols<DotQ4_K>);
  set(WeightFormat::kQ5_K, DotCols<DotQ5_K>);
  set(WeightFormat::kQ6_K, DotCols<DotQ6_K>);
}

}  // namespace weft::kernels
