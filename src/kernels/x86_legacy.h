// The block decoders of the legacy formats Q4_0, Q5_0, Q4_1 and Q5_1 that
// the AVX2 and AVX-512 dot kernels share (avx2_matmul.cc,
// avx512_kernels.cc): each decodes a block into 32 unsigned bytes u with
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

}  // namespace
}  // namespace weft::kernels::x86
