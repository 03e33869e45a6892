// src/kernels/avx512_kernels.cc, avx512_panels.cc, avx512_pair_tiles.cc,
// avx512_pair_kquants.cc, avx512_attention.cc, avx512_attention_q8.cc and
// avx512_mxfp4.cc
// compiled for AVX2 CPUs (-mavx2 -mfma -mf16c,
// tests/kernels/CMakeLists.txt): SIMDe's native aliases turn each AVX-512
// intrinsic into its portable implementation, and the ones SIMDe 0.7 lacks
// are defined below, each as the Intel SDM's pseudo-code describes the
// instruction (and vdpbf16ps, whose SIMDe version adds a lane's two
// products in the other order). The source's namespace `avx512` becomes
// `avx512_emulated` so that this copy of avx512::Fill lives beside the native
// one.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include "tests/kernels/avx512_emulated.h"

#include <immintrin.h>
#include <simde/x86/avx512.h>

#include <cstdint>
#include <cstring>

#include "kernels/isa.h"
#include "tensor/half.h"

namespace weft::kernels::avx512_emulated {
void Fill(KernelTable* t, bool bf16);  // avx512_kernels.cc, below
}  // namespace weft::kernels::avx512_emulated

namespace weft::kernels::testing {

const KernelTable& EmulatedAvx512Table() {
  static const KernelTable table = [] {
    KernelTable t = GetKernels(Isa::kAvx2);
    avx512_emulated::Fill(&t, /*bf16=*/true);
    t.name = "avx512-emulated";
    return t;
  }();
  return table;
}

}  // namespace weft::kernels::testing

namespace weft::kernels::emulated {

template <typename To, typename From>
static inline To Bits(const From& f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof t);
  return t;
}

// Zero-masked loads: only the selected elements are read (the kernels mask
// the tails of rows, so reading more could leave the buffer).
template <typename V, typename E, int N, typename M>
static inline V MaskzLoadu(M m, const void* p) {
  E tmp[N] = {};
  const E* src = static_cast<const E*>(p);
  for (int i = 0; i < N; ++i) {
    if ((m >> i) & 1) tmp[i] = src[i];
  }
  return Bits<V>(tmp);
}

// Masked stores: only the selected elements are written.
template <typename E, int N, typename M, typename V>
static inline void MaskStoreu(void* p, M m, const V& v) {
  static_assert(sizeof(V) == N * sizeof(E));
  E tmp[N];
  std::memcpy(tmp, &v, sizeof tmp);
  E* dst = static_cast<E*>(p);
  for (int i = 0; i < N; ++i) {
    if ((m >> i) & 1) dst[i] = tmp[i];
  }
}

static inline simde__m512 CvtEpi32Ps(simde__m512i a) {
  int32_t v[16];
  std::memcpy(v, &a, sizeof v);
  float r[16];
  for (int i = 0; i < 16; ++i) r[i] = static_cast<float>(v[i]);
  return Bits<simde__m512>(r);
}

// vpsrad: each int32 lane shifted right by imm, the sign bit shifted in
// (imm > 31: all sign bits).
static inline simde__m512i SraiEpi32(simde__m512i a, unsigned imm) {
  int32_t v[16];
  std::memcpy(v, &a, sizeof v);
  for (int32_t& x : v) x = x >> (imm > 31 ? 31 : imm);
  return Bits<simde__m512i>(v);
}

// vpmovsxbd: 16 int8 lanes sign-extended to int32.
static inline simde__m512i CvtEpi8Epi32(simde__m128i a) {
  int8_t v[16];
  std::memcpy(v, &a, sizeof v);
  int32_t r[16];
  for (int i = 0; i < 16; ++i) r[i] = v[i];
  return Bits<simde__m512i>(r);
}

static inline simde__m512i CvtEpu16Epi32(simde__m256i a) {
  uint16_t v[16];
  std::memcpy(v, &a, sizeof v);
  uint32_t r[16];
  for (int i = 0; i < 16; ++i) r[i] = v[i];
  return Bits<simde__m512i>(r);
}

// Two native F16C conversions (exact, as vcvtph2ps zmm).
static inline simde__m512 CvtphPs(simde__m256i a) {
  __m128i h[2];
  std::memcpy(h, &a, sizeof h);
  const __m256 r[2] = {_mm256_cvtph_ps(h[0]), _mm256_cvtph_ps(h[1])};
  return Bits<simde__m512>(r);
}

// vshuff32x4: 128-bit lanes a[imm & 3], a[imm >> 2 & 3], b[imm >> 4 & 3],
// b[imm >> 6 & 3].
[[gnu::always_inline]] static inline simde__m512 ShuffleF32x4(simde__m512 a, simde__m512 b, int imm) {
  float va[16], vb[16], r[16];
  std::memcpy(va, &a, sizeof va);
  std::memcpy(vb, &b, sizeof vb);
  for (int l = 0; l < 4; ++l) {
    const float* src = l < 2 ? va : vb;
    const int from = (imm >> (2 * l)) & 3;
    for (int i = 0; i < 4; ++i) r[4 * l + i] = src[4 * from + i];
  }
  return Bits<simde__m512>(r);
}

static inline long long ReduceAddEpi64(simde__m512i a) {
  uint64_t v[8];
  std::memcpy(v, &a, sizeof v);
  uint64_t s = 0;
  for (uint64_t x : v) s += x;
  return static_cast<long long>(s);
}

// In GCC's order (avx512fintrin.h): the 256-bit halves, then the 128-bit
// halves, then lanes {0, 1} + {2, 3}, then lane 0 + lane 1.
static inline float ReduceAddPs(simde__m512 a) {
  float v[16];
  std::memcpy(v, &a, sizeof v);
  float h8[8], h4[4];
  for (int i = 0; i < 8; ++i) h8[i] = v[8 + i] + v[i];
  for (int i = 0; i < 4; ++i) h4[i] = h8[4 + i] + h8[i];
  return (h4[0] + h4[2]) + (h4[1] + h4[3]);
}

// Denormals to (signed) zero, as vcvtneps2bf16 and vdpbf16ps treat their
// inputs and vdpbf16ps its output.
static inline float FlushDenormal(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
  return Bits<float>(u);
}

// vcvtneps2bf16: tensor/half.h's rounding (to nearest even, NaN to a quiet
// NaN) of the input with denormals treated as zero.
static inline __m256bh CvtnepsPbh(simde__m512 a) {
  float v[16];
  std::memcpy(v, &a, sizeof v);
  uint16_t r[16];
  for (int i = 0; i < 16; ++i) r[i] = Fp32ToBf16(FlushDenormal(v[i]));
  return Bits<__m256bh>(r);
}

// vdpbf16ps as the SDM's pseudo-code has it: per float lane, the odd pair's
// product, then the even pair's, each added with one rounding (the BF16
// products are exact in float32).
static inline simde__m512 Dpbf16Ps(simde__m512 src, simde__m512bh a,
                                   simde__m512bh b) {
  float acc[16];
  uint16_t av[32], bv[32];
  std::memcpy(acc, &src, sizeof acc);
  std::memcpy(av, &a, sizeof av);
  std::memcpy(bv, &b, sizeof bv);
  auto f32 = [](uint16_t h) { return FlushDenormal(Bf16ToFp32(h)); };
  for (int i = 0; i < 16; ++i) {
    float s = FlushDenormal(acc[i]);
    for (int j : {2 * i + 1, 2 * i})
      s = FlushDenormal(s + f32(av[j]) * f32(bv[j]));
    acc[i] = s;
  }
  return Bits<simde__m512>(acc);
}

}  // namespace weft::kernels::emulated

#define _mm512_maskz_loadu_ps(m, p) \
  ::weft::kernels::emulated::MaskzLoadu<simde__m512, float, 16>(m, p)
#define _mm512_maskz_loadu_epi16(m, p) \
  ::weft::kernels::emulated::MaskzLoadu<simde__m512i, uint16_t, 32>(m, p)
#define _mm256_maskz_loadu_epi16(m, p) \
  ::weft::kernels::emulated::MaskzLoadu<simde__m256i, uint16_t, 16>(m, p)
#define _mm512_mask_storeu_ps(p, m, v) \
  ::weft::kernels::emulated::MaskStoreu<float, 16>(p, m, v)
#define _mm512_cvtepi32_ps(a) ::weft::kernels::emulated::CvtEpi32Ps(a)
#define _mm512_srai_epi32(a, imm) ::weft::kernels::emulated::SraiEpi32(a, imm)
#define _mm512_cvtepu16_epi32(a) ::weft::kernels::emulated::CvtEpu16Epi32(a)
#define _mm512_cvtepi8_epi32(a) ::weft::kernels::emulated::CvtEpi8Epi32(a)
#define _mm512_cvtph_ps(a) ::weft::kernels::emulated::CvtphPs(a)
#define _mm512_shuffle_f32x4(a, b, imm) ::weft::kernels::emulated::ShuffleF32x4(a, b, imm)
#define _mm512_reduce_add_epi64(a) ::weft::kernels::emulated::ReduceAddEpi64(a)
#define _mm512_reduce_add_ps(a) ::weft::kernels::emulated::ReduceAddPs(a)
#define _mm512_cvtneps_pbh(a) ::weft::kernels::emulated::CvtnepsPbh(a)
#undef _mm512_dpbf16_ps  // SIMDe's adds the even product first
#define _mm512_dpbf16_ps(s, a, b) ::weft::kernels::emulated::Dpbf16Ps(s, a, b)

#define avx512 avx512_emulated
#include "kernels/avx512_kernels.cc"  // NOLINT(build/include)
#include "kernels/avx512_panels.cc"  // NOLINT(build/include)
#include "kernels/avx512_pair_tiles.cc"  // NOLINT(build/include)
#include "kernels/avx512_pair_kquants.cc"  // NOLINT(build/include)
#include "kernels/avx512_attention.cc"  // NOLINT(build/include)
#include "kernels/avx512_attention_q8.cc"  // NOLINT(build/include)
#include "kernels/avx512_mxfp4.cc"  // NOLINT(build/include)
