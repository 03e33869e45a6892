// AVX2 compute-ceiling loops (compute_peak.h): the bare instruction
// sequences the matmul tiles are built on (avx2_x8.cc), without their
// weight loads, unpacking, block scales or loop control. Weights stay in
// registers; every step broadcasts 4 activation bytes (or one float) from
// its own L1 address, as a tile does per column, so the compiler can
// neither hoist nor merge the steps; 8 accumulators hide the latencies.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/avx2_internal.h"
#include "kernels/kernel_table.h"
#include "kernels/simd_x86.h"

namespace weft::kernels::avx2 {
namespace {

using x86::Bcast4;
using x86::PinOrder;

constexpr int kAcc = 8;  // independent accumulators
// Steps per iteration: kPeakMacsPerIter / (32 int8 or 8 f32 MACs per step).
constexpr int kInt8Steps = static_cast<int>(kPeakMacsPerIter / 32);
constexpr int kF32Steps = static_cast<int>(kPeakMacsPerIter / 8);
// Activation bytes: 8 windows of one iteration's reads (128 bytes of int8,
// 512 of floats), cycled.
constexpr int kWindows = 8;
constexpr int kWindowBytes = kF32Steps * 4;

// Mixes the accumulators into one value (by value: an address-taken array
// would keep them in memory inside the loops).
static inline uint64_t Fold(__m256i a0, __m256i a1, __m256i a2, __m256i a3,
                            __m256i a4, __m256i a5, __m256i a6, __m256i a7) {
  const __m256i x = _mm256_xor_si256(
      _mm256_xor_si256(
          _mm256_xor_si256(a0, _mm256_slli_epi64(a1, 1)),
          _mm256_xor_si256(_mm256_slli_epi64(a2, 2), _mm256_slli_epi64(a3, 3))),
      _mm256_xor_si256(
          _mm256_xor_si256(_mm256_slli_epi64(a4, 4), _mm256_slli_epi64(a5, 5)),
          _mm256_xor_si256(_mm256_slli_epi64(a6, 6),
                           _mm256_slli_epi64(a7, 7))));
  // Not a plain xor of the lanes: with broadcast operands they are equal.
  uint64_t h = 0;
  h = h * 1000003u + static_cast<uint64_t>(_mm256_extract_epi64(x, 0));
  h = h * 1000003u + static_cast<uint64_t>(_mm256_extract_epi64(x, 1));
  h = h * 1000003u + static_cast<uint64_t>(_mm256_extract_epi64(x, 2));
  h = h * 1000003u + static_cast<uint64_t>(_mm256_extract_epi64(x, 3));
  return h;
}
static inline uint64_t Fold(__m256 a0, __m256 a1, __m256 a2, __m256 a3,
                            __m256 a4, __m256 a5, __m256 a6, __m256 a7) {
  return Fold(_mm256_castps_si256(a0), _mm256_castps_si256(a1),
              _mm256_castps_si256(a2), _mm256_castps_si256(a3),
              _mm256_castps_si256(a4), _mm256_castps_si256(a5),
              _mm256_castps_si256(a6), _mm256_castps_si256(a7));
}

// The loop every sequence runs: kSteps steps per iteration over kAcc
// accumulators (acc[i] = step(acc[i], i, p + 4 * s) for step s, accumulator
// i = s % kAcc), the activation window moving each iteration. step is
// inlined into the unrolled body, so i % 2 there is a constant.
template <int kSteps, typename Vec, typename Step>
[[gnu::always_inline]] static inline uint64_t RunSteps(const uint8_t* a, int64_t iters, Vec zero,
                                                       Step step) {
  Vec acc[kAcc];
#pragma GCC unroll 8
  for (int i = 0; i < kAcc; ++i) acc[i] = zero;
  for (int64_t it = 0; it < iters; ++it) {
    const uint8_t* p = a + (it % kWindows) * kWindowBytes;
    for (int r = 0; r < kSteps / kAcc; ++r) {
#pragma GCC unroll 8
      for (int i = 0; i < kAcc; ++i) {
        acc[i] = step(acc[i], i, p + 4 * (kAcc * r + i));
        PinOrder(&acc[i]);
      }
    }
  }
  return Fold(acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]);
}

// Q8_0's per-column sequence: the activation takes the weight's sign,
// maddubs against |w|, madd to int32, add.
uint64_t Int8Signed(const uint8_t* a, int64_t iters) {
  const __m256i w0 = _mm256_set1_epi32(static_cast<int32_t>(0x81c3257fu));
  const __m256i w1 = _mm256_set1_epi32(static_cast<int32_t>(0x3d9be207u));
  const __m256i u0 = _mm256_sign_epi8(w0, w0), u1 = _mm256_sign_epi8(w1, w1);
  const __m256i ones = _mm256_set1_epi16(1);
  return RunSteps<kInt8Steps>(
      a, iters, _mm256_setzero_si256(),
      [&](__m256i acc, int i, const uint8_t* x4) __attribute__((always_inline)) {
        const __m256i w = i % 2 ? w1 : w0;
        const __m256i u = i % 2 ? u1 : u0;
        const __m256i x = _mm256_sign_epi8(Bcast4(x4), w);
        return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), ones));
      });
}

// The 4/5/6-bit codes' sequence: maddubs of unsigned codes against the
// activation, int16 add (the tiles widen once per several steps).
uint64_t Int8Unsigned(const uint8_t* a, int64_t iters) {
  const __m256i c0 = _mm256_set1_epi32(0x0f03090c),
                c1 = _mm256_set1_epi32(0x1f0a1102);
  return RunSteps<kInt8Steps>(
      a, iters, _mm256_setzero_si256(),
      [&](__m256i acc, int i, const uint8_t* x4) __attribute__((always_inline)) {
        return _mm256_add_epi16(acc, _mm256_maddubs_epi16(i % 2 ? c1 : c0, Bcast4(x4)));
      });
}

// Float weights: one FMA of 8 weights with a broadcast activation.
uint64_t F32Fma(const uint8_t* a, int64_t iters) {
  const __m256 w0 = _mm256_set1_ps(0.999f), w1 = _mm256_set1_ps(-0.5f);
  return RunSteps<kF32Steps>(
      a, iters, _mm256_setzero_ps(),
      [&](__m256 acc, int i, const uint8_t* x4) __attribute__((always_inline)) {
        return _mm256_fmadd_ps(i % 2 ? w1 : w0,
                               _mm256_broadcast_ss(reinterpret_cast<const float*>(x4)), acc);
      });
}

uint64_t PeakLoop(int kind, int64_t iters) {
  // Small values (floats in [0, 1)) so nothing overflows or denormalises.
  alignas(64) uint8_t a[kWindows * kWindowBytes];
  for (int i = 0; i < kWindows * kWindowBytes / 4; ++i) {
    const float f = static_cast<float>(i % 61) / 64.0f;
    std::memcpy(a + 4 * i, &f, 4);
  }
  switch (static_cast<PeakKind>(kind)) {
    case PeakKind::kInt8Signed:
      return Int8Signed(a, iters);
    case PeakKind::kInt8Unsigned:
      return Int8Unsigned(a, iters);
    case PeakKind::kF32Fma:
      return F32Fma(a, iters);
  }
  return 0;
}

}  // namespace

void FillPeak(KernelTable* t) { t->peak_loop = PeakLoop; }

}  // namespace weft::kernels::avx2
