// AVX-512 MXFP4 weights against Q8x32 activations, on the file's rows (MXFP4
// has no x8 layout): two blocks per zmm. The codes become their signed
// values (E2M1 doubled, |v| <= 12) through a vpshufb table; vpdpbusd takes
// |v| as its unsigned operand and the activations with v's sign (negated
// under the mask of negative values: activations are in [-127, 127], so no
// overflow), so each block's integer sum is exact, as in the AVX2 and scalar
// twins (avx2_matmul.cc, scalar_kernels.cc); only the float accumulation
// order differs.
//
// Compiled with the AVX-512 flags (and, like avx512_kernels.cc, for AVX2
// with the intrinsics emulated by SIMDe in tests/kernels/avx512_emulated.cc).
#include <immintrin.h>

#include "kernels/avx2_internal.h"
#include "kernels/simd_x86.h"
#include "tensor/blocks.h"

// GCC 12's avx512fintrin.h builds casts and conversions on
// _mm512_undefined_*(), which -Wuninitialized flags (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::avx512 {
namespace {

// The 64 signed values of blocks b and b + 1 (elements 0..31 of each, in
// NibblesToBytes' order), as one zmm.
static inline __m512i PairValues(const BlockMXFP4* wb, __m512i table) {
  const __m512i codes =
      _mm512_inserti64x4(_mm512_castsi256_si512(x86::NibblesToBytes(wb[0].qs)),
                         x86::NibblesToBytes(wb[1].qs), 1);
  return _mm512_shuffle_epi8(table, codes);
}

static inline __m512 PairScale(float lo, float hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(lo)),
                            _mm256_set1_ps(hi), 1);
}

template <int NC>
void DotMXFP4N(int64_t k, const void* w, const void* xq, size_t stride,
               float* out) {
  const int64_t nb = k / 32;
  const BlockMXFP4* wb = static_cast<const BlockMXFP4*>(w);
  const __m512i table = _mm512_broadcast_i32x4(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMXFP4Values)));
  const __m512i zero = _mm512_setzero_si512();
  Q8x32Row x[NC];
  __m512 acc[NC];
  for (int c = 0; c < NC; ++c) {
    x[c] = Q8x32RowAt(xq, stride, c, k);
    acc[c] = _mm512_setzero_ps();
  }
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m512i v = PairValues(wb + b, table);
    const __m512i av = _mm512_abs_epi8(v);
    const __mmask64 neg = _mm512_movepi8_mask(v);
    const __m512 vdw =
        PairScale(E8M0ToFp32Half(wb[b].e), E8M0ToFp32Half(wb[b + 1].e));
    for (int c = 0; c < NC; ++c) {
      const __m512i a = _mm512_loadu_si512(x[c].qs + 32 * b);
      const __m512i sa = _mm512_mask_sub_epi8(a, neg, zero, a);
      const __m512i s = _mm512_dpbusd_epi32(zero, av, sa);
      const __m512 scale =
          _mm512_mul_ps(vdw, PairScale(x[c].d[b], x[c].d[b + 1]));
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc[c]);
    }
  }
  if (b < nb) {  // the odd last block: its pair half is zero weights
    BlockMXFP4 pair[2] = {wb[b], BlockMXFP4{}};
    const __m512i v = PairValues(pair, table);
    const __m512i av = _mm512_abs_epi8(v);
    const __mmask64 neg = _mm512_movepi8_mask(v);
    const __m512 vdw = PairScale(E8M0ToFp32Half(wb[b].e), 0.0f);
    for (int c = 0; c < NC; ++c) {
      const __m512i a = _mm512_inserti64x4(
          zero,
          _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(x[c].qs + 32 * b)),
          0);
      const __m512i sa = _mm512_mask_sub_epi8(a, neg, zero, a);
      const __m512i s = _mm512_dpbusd_epi32(zero, av, sa);
      const __m512 scale = _mm512_mul_ps(vdw, PairScale(x[c].d[b], 0.0f));
      acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale, acc[c]);
    }
  }
  for (int c = 0; c < NC; ++c) out[c] = _mm512_reduce_add_ps(acc[c]);
}

}  // namespace

void FillMXFP4(KernelTable* t) {
  // The activations as the AVX2 MXFP4 entry quantizes them (plain Q8x32).
  MatMulKernel& e = t->matmul[static_cast<int>(WeightFormat::kMXFP4)];
  SetMatMul(t, WeightFormat::kMXFP4, ActFormat::kQ8x32, e.quantize,
            DotByCols<DotMXFP4N<1>, DotMXFP4N<2>, DotMXFP4N<3>, DotMXFP4N<4>>);
}

}  // namespace weft::kernels::avx512
