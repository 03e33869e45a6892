// What the AVX2 and AVX-512 dot kernels of the float and legacy formats
// share (avx2_matmul.cc, avx512_kernels.cc): the block decoders of Q4_0,
// Q5_0, Q4_1, Q5_1 (and Q8_0 as unsigned codes, AVX-512's), the legacy dots'
// correction sums, and the dispatch glue that sets those formats' table
// entries from either ISA's kernels.
//
// Each decoder decodes a block into 32 unsigned bytes u with
// w = d * u + c, c = kCorr * d (kCorr the negated code offset: Q4_0, Q5_0)
// or the block minimum m (Q4_1, Q5_1; kCorr = 1), CorrW(block, d) the
// factor of c that multiplies the activation block sums.
//
// Include ONLY from translation units compiled with AVX2 (or AVX-512) flags.
// The structs sit in an unnamed namespace: each ISA file gets its own copy
// (internal linkage), so the linker can never hand an AVX2 caller a member
// function compiled with AVX-512 (simd_x86.h's rule, for types).
#pragma once

#include <immintrin.h>

#include "kernels/kernel_table.h"
#include "kernels/simd_x86.h"
#include "tensor/blocks.h"

namespace weft::kernels::x86 {
namespace {  // NOLINT(build/namespaces): internal linkage on purpose, see above

struct Q4_0 {
  using Block = BlockQ4_0;
  static constexpr float kCorr = -8.0f;
  static __m256i Unpack(const Block& b) { return x86::NibblesToBytes(b.qs); }
  static float CorrW(const Block&, float d) { return d; }
};
struct Q5_0 {
  using Block = BlockQ5_0;
  static constexpr float kCorr = -16.0f;
  static __m256i Unpack(const Block& b) {
    const __m256i hi = _mm256_and_si256(x86::BitsToBytes(b.qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(x86::NibblesToBytes(b.qs), hi);
  }
  static float CorrW(const Block&, float d) { return d; }
};
struct Q4_1 {
  using Block = BlockQ4_1;
  static constexpr float kCorr = 1.0f;
  static __m256i Unpack(const Block& b) { return x86::NibblesToBytes(b.qs); }
  static float CorrW(const Block& b, float) { return Fp16(b.m); }
};
struct Q5_1 {
  using Block = BlockQ5_1;
  static constexpr float kCorr = 1.0f;
  static __m256i Unpack(const Block& b) {
    const __m256i hi = _mm256_and_si256(x86::BitsToBytes(b.qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(x86::NibblesToBytes(b.qs), hi);
  }
  static float CorrW(const Block& b, float) { return Fp16(b.m); }
};
// Q8_0's signed int8 weights shifted to unsigned, u = q + 128 (for
// vpdpbusd, which wants the unsigned operand on the weights' side).
struct Q8_0 {
  using Block = BlockQ8_0;
  static constexpr float kCorr = -128.0f;
  static __m256i Unpack(const Block& b) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    return _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
  }
  static float CorrW(const Block&, float d) { return d; }
};

// The c side of a legacy dot for NC activation rows: sum over blocks of
// CorrW(block) * ds (the activations' block sums), a vector for full groups
// of 8 blocks and a scalar tail; the dot adds kCorr * Sum(c) at the end.
template <int NC>
struct LegacyCorr {
  __m256 corr[NC];
  float tail[NC];

  LegacyCorr() {
    for (int c = 0; c < NC; ++c) {
      corr[c] = _mm256_setzero_ps();
      tail[c] = 0;
    }
  }
  // Blocks b0 .. b0 + n - 1 (n <= 8), their CorrW in cws[0 .. n).
  [[gnu::always_inline]] void Add(const float* cws, int n, int64_t b0, const Q8x32Row* x) {
    if (n == 8) {
      const __m256 vcws = _mm256_load_ps(cws);
      for (int c = 0; c < NC; ++c) {
        corr[c] = _mm256_fmadd_ps(vcws, _mm256_loadu_ps(x[c].ds + b0), corr[c]);
      }
    } else {
      for (int c = 0; c < NC; ++c) {
        for (int j = 0; j < n; ++j) tail[c] += cws[j] * x[c].ds[b0 + j];
      }
    }
  }
  float Sum(int c) const { return HsumPs(corr[c]) + tail[c]; }
};

// ---- Dispatch glue ----
//
// An ISA file names its dot kernels in a struct Dots (DotNFn pointers, one
// per activation row count NC = 1 .. kMaxDotCols):
//   template <typename Load, int NC> static constexpr DotNFn kFloat;
//     float weights read through Load (the ISA's F32, F16, BF16 loaders);
//   template <typename F, int NC> static constexpr DotNFn kLegacy;
//     the decoders above (and the ISA's own, e.g. AVX-512's Q8_0).
template <typename Dots, typename Load>
constexpr DotFn kFloatDot =
    DotByCols<Dots::template kFloat<Load, 1>, Dots::template kFloat<Load, 2>,
              Dots::template kFloat<Load, 3>, Dots::template kFloat<Load, 4>>;
template <typename Dots, typename F>
constexpr DotFn kLegacyDot =
    DotByCols<Dots::template kLegacy<F, 1>, Dots::template kLegacy<F, 2>,
              Dots::template kLegacy<F, 3>, Dots::template kLegacy<F, 4>>;

// Sets F32, F16 and BF16 (float activations, weights read through the
// loaders F32, F16 and BF16) and Q4_0, Q5_0, Q4_1 and Q5_1 (Q8x32
// activations, quantized by `q8`) to Dots' kernels.
template <typename Dots, typename F32, typename F16, typename BF16>
void SetFloatAndLegacyDots(KernelTable* t, QuantizeActFn q8) {
  SetMatMul(t, WeightFormat::kF32, ActFormat::kF32, nullptr, kFloatDot<Dots, F32>);
  SetMatMul(t, WeightFormat::kF16, ActFormat::kF32, nullptr, kFloatDot<Dots, F16>);
  SetMatMul(t, WeightFormat::kBF16, ActFormat::kF32, nullptr, kFloatDot<Dots, BF16>);
  SetMatMul(t, WeightFormat::kQ4_0, ActFormat::kQ8x32, q8, kLegacyDot<Dots, Q4_0>);
  SetMatMul(t, WeightFormat::kQ5_0, ActFormat::kQ8x32, q8, kLegacyDot<Dots, Q5_0>);
  SetMatMul(t, WeightFormat::kQ4_1, ActFormat::kQ8x32, q8, kLegacyDot<Dots, Q4_1>);
  SetMatMul(t, WeightFormat::kQ5_1, ActFormat::kQ8x32, q8, kLegacyDot<Dots, Q5_1>);
}

}  // namespace
}  // namespace weft::kernels::x86
