// AVX2 matmul kernels for the K-quants (Q2_K .. Q6_K) and IQ4_XS against Q8_K
// activations. Sub-block scales are applied in integer arithmetic
// (maddubs -> madd with the 6/8-bit scale), so one float conversion per
// 256-element super-block and activation row is all the float work. Each
// super-block is decoded once for up to kMaxDotCols activation rows.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2_internal.h"
#include "kernels/simd_x86.h"
#include "tensor/blocks.h"

namespace weft::kernels::avx2 {
namespace {

using x86::Fp16;
using x86::HsumPs;

// The 8 6-bit scales and 8 mins of a Q4_K / Q5_K super-block, as bytes:
// scales in the low 8 bytes, mins in the high 8 (llama.cpp's kmask
// unpacking of the 12 packed bytes).
static inline __m128i ScalesMinsK4(const uint8_t* q) {
  uint32_t u[4];
  std::memcpy(u, q, 12);
  u[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  const uint32_t mins_lo = u[1] & 0x3f3f3f3fu;
  u[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  u[2] = mins_lo;
  u[0] &= 0x3f3f3f3fu;
  return _mm_set_epi32(static_cast<int>(u[3]), static_cast<int>(u[2]),
                       static_cast<int>(u[1]), static_cast<int>(u[0]));
}

// Scale j (16 bits) broadcast from 8 int16 scales repeated in both lanes.
static inline __m256i ScaleK(__m256i sc16, int j) {
  return _mm256_shuffle_epi8(sc16, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * j)));
}

// The activation side of a K-quant dot for NC Q8_K rows: acc gathers each
// super-block's integer sums times d * da; out = acc.
template <int NC>
struct Q8KDot {
  const BlockQ8_K* a[NC];
  __m256 acc[NC];

  Q8KDot(const void* xq, size_t stride) {
    for (int c = 0; c < NC; ++c) {
      a[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(xq) + c * stride);
      acc[c] = _mm256_setzero_ps();
    }
  }
  // Super-block b: isum[c] its integer sums, d its scale.
  [[gnu::always_inline]] void Finish(int64_t b, const __m256i* isum, float d) {
    for (int c = 0; c < NC; ++c) {
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_set1_ps(d * a[c][b].d), acc[c]);
    }
  }
  void Store(float* out) const {
    for (int c = 0; c < NC; ++c) out[c] = HsumPs(acc[c]);
  }
};

// With block minimums (Q4_K, Q5_K, Q2_K): accm gathers the mins against
// the activations' 16-element sums times dmin * da; out = acc - accm.
template <int NC>
struct MinsDot : Q8KDot<NC> {
  __m256 accm[NC];

  MinsDot(const void* xq, size_t stride) : Q8KDot<NC>(xq, stride) {
    for (int c = 0; c < NC; ++c) accm[c] = _mm256_setzero_ps();
  }
  // Super-block b: isum[c] its integer sums, m16 its 16 mins (int16), d
  // and dmin its scales.
  [[gnu::always_inline]] void Finish(int64_t b, const __m256i* isum, __m256i m16, float d,
                                     float dmin) {
    const BlockQ8_K* const* a = this->a;
    for (int c = 0; c < NC; ++c) {
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[c][b].bsums));
      const __m256i msum = _mm256_madd_epi16(bs, m16);
      this->acc[c] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[c]), _mm256_set1_ps(d * a[c][b].d), this->acc[c]);
      accm[c] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dmin * a[c][b].d), accm[c]);
    }
  }
  void Store(float* out) const {
    for (int c = 0; c < NC; ++c) out[c] = HsumPs(this->acc[c]) - HsumPs(accm[c]);
  }
};

template <int NC, bool kQ5>
void DotQ45KN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const int64_t nb = k / kQK_K;
  MinsDot<NC> m(xq, stride);
  const BlockQ8_K* const* a = m.a;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* scales;
    const uint8_t* qs;
    const uint8_t* qh = nullptr;
    uint16_t dbits, mbits;
    if constexpr (kQ5) {
      const BlockQ5_K* wb = static_cast<const BlockQ5_K*>(w) + b;
      scales = wb->scales, qs = wb->qs, qh = wb->qh, dbits = wb->d, mbits = wb->dmin;
    } else {
      const BlockQ4_K* wb = static_cast<const BlockQ4_K*>(w) + b;
      scales = wb->scales, qs = wb->qs, dbits = wb->d, mbits = wb->dmin;
    }
    const float d = Fp16(dbits), dmin = Fp16(mbits);
    const __m128i sm = ScalesMinsK4(scales);
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    // Mins: each m_j against the two 16-sums of its group.
    const __m128i mins = _mm_unpackhi_epi64(sm, sm);
    const __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mins, mins));
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
    __m256i hbits = _mm256_setzero_si256();
    if constexpr (kQ5) hbits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kQ5) {
        const __m256i bit = _mm256_set1_epi8(0x10);
        lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hbits, 2 * j), 4), bit));
        hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hbits, 2 * j + 1), 4), bit));
      }
      const __m256i s0 = ScaleK(sc16, 2 * j);
      const __m256i s1 = ScaleK(sc16, 2 * j + 1);
      for (int c = 0; c < NC; ++c) {
        const int8_t* aq = a[c][b].qs + 64 * j;
        const __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq)));
        const __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq + 32)));
        isum[c] = _mm256_add_epi32(isum[c], _mm256_add_epi32(_mm256_madd_epi16(p0, s0), _mm256_madd_epi16(p1, s1)));
      }
    }
    m.Finish(b, isum, m16, d, dmin);
  }
  m.Store(out);
}

template <int NC>
void DotQ6KN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const int64_t nb = k / kQK_K;
  const BlockQ6_K* wb = static_cast<const BlockQ6_K*>(w);
  Q8KDot<NC> m(xq, stride);
  const BlockQ8_K* const* a = m.a;
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i two = _mm256_set1_epi8(3);
  for (int64_t b = 0; b < nb; ++b) {
    const float d = Fp16(wb[b].d);
    const int8_t* sc = wb[b].scales;
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) {
      // The -32 offset: 32 * sum_g sc_g * bsum_g.
      const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[c][b].bsums));
      isum[c] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5));
    }
    for (int n = 0; n < 2; ++n) {
      const uint8_t* ql = wb[b].ql + 64 * n;
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qh + 32 * n));
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi16(_mm256_and_si256(h, two), 4));
      q[1] = _mm256_or_si256(_mm256_and_si256(l1, low4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), two), 4));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), two), 4));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), two), 4));
      for (int t = 0; t < 4; ++t) {
        const int g = 8 * n + 2 * t;  // groups g (first 16) and g + 1
        const __m256i s = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]), _mm_set1_epi16(sc[g]));
        for (int c = 0; c < NC; ++c) {
          const __m256i av = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(a[c][b].qs + 128 * n + 32 * t));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(_mm256_maddubs_epi16(q[t], av), s));
        }
      }
    }
    m.Finish(b, isum, d);
  }
  m.Store(out);
}

// The 16 group scales of a Q2_K / Q3_K super-block as int16 (groups 0..7
// in the low lane, 8..15 in the high), half n's eight in both lanes.
static inline __m256i HalfScales(__m256i sc16, int n) {
  return n == 0 ? _mm256_permute4x64_epi64(sc16, 0x44) : _mm256_permute4x64_epi64(sc16, 0xee);
}

// From HalfScales: group 2j's scale in the low lane, 2j + 1's in the high
// (the groups of 32 codes at shift 2j of a half).
static inline __m256i PairScale(__m256i half_sc, int j) {
  return _mm256_shuffle_epi8(
      half_sc, _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * (2 * j + 1))),
                                _mm_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * (2 * j)))));
}

// Q2_K: 16 groups of 16 2-bit codes, x = d * (sc & 15) * q - dmin * (sc >> 4);
// the mins against the activation's 16-sums, as for Q4_K.
template <int NC>
void DotQ2KN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const int64_t nb = k / kQK_K;
  const BlockQ2_K* wb = static_cast<const BlockQ2_K*>(w);
  MinsDot<NC> m(xq, stride);
  const BlockQ8_K* const* a = m.a;
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m128i m15 = _mm_set1_epi8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb[b].scales));
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, m15));
    const __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), m15));
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
    for (int n = 0; n < 2; ++n) {
      const __m256i half_sc = HalfScales(sc16, n);
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qs + 32 * n));
      for (int j = 0; j < 4; ++j) {
        const __m256i qj = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3);
        const __m256i s = PairScale(half_sc, j);
        for (int c = 0; c < NC; ++c) {
          const __m256i av = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(a[c][b].qs + 128 * n + 32 * j));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(_mm256_maddubs_epi16(qj, av), s));
        }
      }
    }
    const float d = Fp16(wb[b].d), dmin = Fp16(wb[b].dmin);
    m.Finish(b, isum, m16, d, dmin);
  }
  m.Store(out);
}

// Q3_K: 16 groups of 16, x = d * (sc - 32) * (q2 - 4 * !hbit), the high bit
// of element 128n + 32j + l at bit 4n + j of hmask[l]. maddubs takes the
// unsigned q2 and the 4 where the bit is clear, and the two are subtracted.
template <int NC>
void DotQ3KN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const int64_t nb = k / kQK_K;
  const BlockQ3_K* wb = static_cast<const BlockQ3_K*>(w);
  Q8KDot<NC> m(xq, stride);
  const BlockQ8_K* const* a = m.a;
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i four = _mm256_set1_epi8(4);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* packed = wb[b].scales;
    alignas(32) int16_t sc[16];
    for (int g = 0; g < 16; ++g) {
      const int lo = g < 8 ? (packed[g] & 0x0f) : (packed[g - 8] >> 4);
      const int hi = (packed[8 + g % 4] >> (2 * (g / 4))) & 3;
      sc[g] = static_cast<int16_t>((lo | (hi << 4)) - 32);
    }
    const __m256i sc16 = _mm256_load_si256(reinterpret_cast<const __m256i*>(sc));
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].hmask));
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
    for (int n = 0; n < 2; ++n) {
      const __m256i half_sc = HalfScales(sc16, n);
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qs + 32 * n));
      for (int j = 0; j < 4; ++j) {
        const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3);
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * n + j)));
        const __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), _mm256_setzero_si256());
        const __m256i q3h = _mm256_and_si256(clear, four);
        const __m256i s = PairScale(half_sc, j);
        for (int c = 0; c < NC; ++c) {
          const __m256i av = _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(a[c][b].qs + 128 * n + 32 * j));
          const __m256i p =
              _mm256_sub_epi16(_mm256_maddubs_epi16(q2, av), _mm256_maddubs_epi16(q3h, av));
          isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(p, s));
        }
      }
    }
    const float d = Fp16(wb[b].d);
    m.Finish(b, isum, d);
  }
  m.Store(out);
}

// IQ4_XS against Q8_K activations: per 32-element sub-block the IQ4_NL
// table lookup and Q8_0's signed product (|pair| <= 2 * 127 * 127 in int16),
// madd with the sub-block's integer scale ls - 32; the super-block's int32
// sums take one float step, d * da.
template <int NC>
void DotIQ4_XSN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const BlockIQ4_XS* wb = static_cast<const BlockIQ4_XS*>(w);
  const __m256i table = x86::ByteTable16(kIQ4NLValues);
  Q8KDot<NC> m(xq, stride);
  const BlockQ8_K* const* x = m.a;
  for (int64_t i = 0; i < k / kQK_K; ++i) {
    __m256i isum[NC];
    for (int c = 0; c < NC; ++c) isum[c] = _mm256_setzero_si256();
    for (int ib = 0; ib < kQK_K / 32; ++ib) {
      const __m256i q = x86::NonlinearCodesToBytes(wb[i].qs + 16 * ib, table);
      const __m256i aq = _mm256_sign_epi8(q, q);
      const __m256i ls = _mm256_set1_epi16(static_cast<int16_t>(IQ4XSScale(wb[i], ib)));
      for (int c = 0; c < NC; ++c) {
        const __m256i a =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[c][i].qs + 32 * ib));
        const __m256i p = _mm256_maddubs_epi16(aq, _mm256_sign_epi8(a, q));
        isum[c] = _mm256_add_epi32(isum[c], _mm256_madd_epi16(p, ls));
      }
    }
    m.Finish(i, isum, Fp16(wb[i].d));
  }
  m.Store(out);
}

// Q8_K activations, computed exactly as the scalar twin.
void QuantizeQ8K(const float* x, void* xq, int64_t k) {
  BlockQ8_K* out = static_cast<BlockQ8_K*>(xq);
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    int sum;
    out[b].d = x86::QuantizeQ8Group(x + kQK_K * b, 8, out[b].qs, &sum);
    for (int g = 0; g < 16; ++g) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(out[b].qs + 16 * g));
      const __m256i w16 = _mm256_cvtepi8_epi16(v);
      const __m256i s32 = _mm256_madd_epi16(w16, _mm256_set1_epi16(1));
      out[b].bsums[g] = static_cast<int16_t>(x86::HsumEpi32(s32));
    }
  }
}

}  // namespace

void FillKQuants(KernelTable* t) {
  auto set = [t](WeightFormat f, DotFn dot) {
    SetMatMul(t, f, ActFormat::kQ8K, QuantizeQ8K, dot);
  };
  set(WeightFormat::kQ2_K, DotByCols<DotQ2KN<1>, DotQ2KN<2>, DotQ2KN<3>, DotQ2KN<4>>);
  set(WeightFormat::kQ3_K, DotByCols<DotQ3KN<1>, DotQ3KN<2>, DotQ3KN<3>, DotQ3KN<4>>);
  set(WeightFormat::kQ4_K, DotByCols<DotQ45KN<1, false>, DotQ45KN<2, false>, DotQ45KN<3, false>,
                                     DotQ45KN<4, false>>);
  set(WeightFormat::kQ5_K, DotByCols<DotQ45KN<1, true>, DotQ45KN<2, true>, DotQ45KN<3, true>,
                                     DotQ45KN<4, true>>);
  set(WeightFormat::kQ6_K, DotByCols<DotQ6KN<1>, DotQ6KN<2>, DotQ6KN<3>, DotQ6KN<4>>);
  set(WeightFormat::kIQ4_XS,
      DotByCols<DotIQ4_XSN<1>, DotIQ4_XSN<2>, DotIQ4_XSN<3>, DotIQ4_XSN<4>>);
}

}  // namespace weft::kernels::avx2
