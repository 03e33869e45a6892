// AVX2 matmul kernels for float weights (F32, F16, BF16) and the 32-element
// legacy formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0), IQ4_NL and MXFP4 against
// Q8x32 activations. Each dot
// kernel decodes a weight block once and uses it for up to kMaxDotCols
// activation rows (register blocking across M).
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <bit>

#include "kernels/avx2_internal.h"
#include "kernels/simd_x86.h"
#include "kernels/x86_legacy.h"
#include "tensor/blocks.h"

namespace weft::kernels::avx2 {
namespace {

using x86::Fp16;
using x86::HsumPs;

// ---- Activations ----

void QuantizeQ8x32(const float* x, void* xq, int64_t k) {
  const auto [qs, d, ds] = MutableQ8x32RowAt(xq, k);
  for (int64_t b = 0; b < k / 32; ++b) {
    int sum;
    d[b] = x86::QuantizeQ8Group(x + 32 * b, 1, qs + 32 * b, &sum);
    ds[b] = d[b] * static_cast<float>(sum);
  }
}

// ---- Float weights ----

// Loads 8 weights as floats.
struct LoadF32 {
  using T = float;
  static __m256 Load(const float* p) { return _mm256_loadu_ps(p); }
  static float One(float v) { return v; }
};
struct LoadF16 {
  using T = uint16_t;
  static __m256 Load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float One(uint16_t v) { return Fp16(v); }
};
struct LoadBF16 {
  using T = uint16_t;
  static __m256 Load(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static float One(uint16_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v) << 16); }
};

template <typename L, int NC>
void DotFloatN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const typename L::T* wp = static_cast<const typename L::T*>(w);
  const float* x[NC];
  for (int c = 0; c < NC; ++c) {
    x[c] = reinterpret_cast<const float*>(static_cast<const char*>(xq) + c * stride);
  }
  __m256 acc0[NC], acc1[NC];
  for (int c = 0; c < NC; ++c) acc0[c] = acc1[c] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256 w0 = L::Load(wp + i), w1 = L::Load(wp + i + 8);
    for (int c = 0; c < NC; ++c) {
      acc0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[c] + i), acc0[c]);
      acc1[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x[c] + i + 8), acc1[c]);
    }
  }
  for (; i + 8 <= k; i += 8) {
    const __m256 w0 = L::Load(wp + i);
    for (int c = 0; c < NC; ++c) {
      acc0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x[c] + i), acc0[c]);
    }
  }
  for (int c = 0; c < NC; ++c) {
    float s = HsumPs(_mm256_add_ps(acc0[c], acc1[c]));
    for (int64_t j = i; j < k; ++j) s += L::One(wp[j]) * x[c][j];
    out[c] = s;
  }
}

// ---- Legacy 32-element formats ----

// The formats' block decoders (x86_legacy.h) give 32 unsigned bytes u with
// w = d * u + c. The dot of a block is d * da * sum(u * q) + c * da * sum(q):
// the second term is CorrW(block, d) * ds (the activations' block sums),
// added up over the blocks and multiplied by kCorr at the end.
// One block against NC activation rows, accumulated into acc.
template <typename F, int NC>
static inline void LegacyBlock(const typename F::Block& blk, float dw, int64_t b,
                               const Q8x32Row* x, __m256* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256 vdw = _mm256_set1_ps(dw);
  const __m256i u = F::Unpack(blk);
  for (int c = 0; c < NC; ++c) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[c].qs + 32 * b));
    const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(u, a), ones);
    const __m256 scale = _mm256_mul_ps(vdw, _mm256_broadcast_ss(x[c].d + b));
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, acc[c]);
  }
}

template <typename F, int NC>
void DotLegacyN(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const int64_t nb = k / 32;
  const typename F::Block* wb = static_cast<const typename F::Block*>(w);
  Q8x32Row x[NC];
  // Two accumulator sets (even / odd blocks) to hide the FMA latency.
  __m256 acc0[NC], acc1[NC];
  x86::LegacyCorr<NC> corr;
  for (int c = 0; c < NC; ++c) {
    x[c] = Q8x32RowAt(xq, stride, c, k);
    acc0[c] = acc1[c] = _mm256_setzero_ps();
  }
  for (int64_t b0 = 0; b0 < nb; b0 += 8) {
    const int n = nb - b0 < 8 ? static_cast<int>(nb - b0) : 8;
    alignas(32) float cws[8];  // the blocks' CorrW
    int i = 0;
    for (; i + 2 <= n; i += 2) {
      const float d0 = Fp16(wb[b0 + i].d), d1 = Fp16(wb[b0 + i + 1].d);
      cws[i] = F::CorrW(wb[b0 + i], d0);
      cws[i + 1] = F::CorrW(wb[b0 + i + 1], d1);
      LegacyBlock<F, NC>(wb[b0 + i], d0, b0 + i, x, acc0);
      LegacyBlock<F, NC>(wb[b0 + i + 1], d1, b0 + i + 1, x, acc1);
    }
    if (i < n) {
      const float d0 = Fp16(wb[b0 + i].d);
      cws[i] = F::CorrW(wb[b0 + i], d0);
      LegacyBlock<F, NC>(wb[b0 + i], d0, b0 + i, x, acc0);
    }
    corr.Add(cws, n, b0, x);
  }
  for (int c = 0; c < NC; ++c) {
    out[c] = HsumPs(_mm256_add_ps(acc0[c], acc1[c])) + F::kCorr * corr.Sum(c);
  }
}

// The signed int8 weights of a block: Q8_0's bytes, or IQ4_NL's codes looked
// up in its table (vpshufb within each 128-bit lane).
static inline __m256i SignedWeights(const BlockQ8_0& blk) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs));
}
static inline __m256i SignedWeights(const BlockIQ4_NL& blk) {
  return x86::NonlinearCodesToBytes(blk.qs, x86::ByteTable16(kIQ4NLValues));
}
static inline __m256i SignedWeights(const BlockMXFP4& blk) {
  return x86::NonlinearCodesToBytes(blk.qs, x86::ByteTable16(kMXFP4Values));
}
// The block's scale: fp16, or MXFP4's E8M0 exponent (exact power of two).
static inline float SignedScale(const BlockQ8_0& blk) { return Fp16(blk.d); }
static inline float SignedScale(const BlockIQ4_NL& blk) { return Fp16(blk.d); }
static inline float SignedScale(const BlockMXFP4& blk) { return E8M0ToFp32Half(blk.e); }

// Q8_0, IQ4_NL, MXFP4: signed weights; |w| * sign(a, w) keeps maddubs' unsigned
// operand.
template <int NC, typename Block>
static inline void Q8Block(const Block& blk, int64_t b, const Q8x32Row* x,
                           __m256* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256 vdw = _mm256_set1_ps(SignedScale(blk));
  const __m256i q = SignedWeights(blk);
  const __m256i aq = _mm256_sign_epi8(q, q);
  for (int c = 0; c < NC; ++c) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[c].qs + 32 * b));
    const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(aq, _mm256_sign_epi8(a, q)), ones);
    const __m256 scale = _mm256_mul_ps(vdw, _mm256_broadcast_ss(x[c].d + b));
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, acc[c]);
  }
}

template <int NC, typename Block = BlockQ8_0>
void DotQ8_0N(int64_t k, const void* w, const void* xq, size_t stride, float* out) {
  const int64_t nb = k / 32;
  const Block* wb = static_cast<const Block*>(w);
  Q8x32Row x[NC];
  __m256 acc0[NC], acc1[NC];
  for (int c = 0; c < NC; ++c) {
    x[c] = Q8x32RowAt(xq, stride, c, k);
    acc0[c] = acc1[c] = _mm256_setzero_ps();
  }
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    Q8Block<NC>(wb[b], b, x, acc0);
    Q8Block<NC>(wb[b + 1], b + 1, x, acc1);
  }
  if (b < nb) Q8Block<NC>(wb[b], b, x, acc0);
  for (int c = 0; c < NC; ++c) out[c] = HsumPs(_mm256_add_ps(acc0[c], acc1[c]));
}

// The kernels x86_legacy.h's SetFloatAndLegacyDots sets.
struct Dots {
  template <typename L, int NC>
  static constexpr DotNFn kFloat = DotFloatN<L, NC>;
  template <typename F, int NC>
  static constexpr DotNFn kLegacy = DotLegacyN<F, NC>;
};

template <typename Block>
constexpr DotFn kSignedDot = DotByCols<DotQ8_0N<1, Block>, DotQ8_0N<2, Block>,
                                       DotQ8_0N<3, Block>, DotQ8_0N<4, Block>>;

}  // namespace

void FillFloatAndLegacy(KernelTable* t) {
  x86::SetFloatAndLegacyDots<Dots, LoadF32, LoadF16, LoadBF16>(t, QuantizeQ8x32);
  SetMatMul(t, WeightFormat::kQ8_0, ActFormat::kQ8x32, QuantizeQ8x32, kSignedDot<BlockQ8_0>);
  SetMatMul(t, WeightFormat::kIQ4_NL, ActFormat::kQ8x32, QuantizeQ8x32, kSignedDot<BlockIQ4_NL>);
  SetMatMul(t, WeightFormat::kMXFP4, ActFormat::kQ8x32, QuantizeQ8x32, kSignedDot<BlockMXFP4>);
}

}  // namespace weft::kernels::avx2
