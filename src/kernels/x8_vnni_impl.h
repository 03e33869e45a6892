// The Q8_0 x8 tile with VNNI (vpdpbusd on ymm: AVX512_VNNI + AVX512VL), for
// the AVX-512 table. vpdpbusd multiplies unsigned by signed bytes and adds
// each 4 products into an int32 lane, with no int16 step: the weights go in
// as u = w + 128 (the byte with its sign bit flipped) against the signed
// activations, and the offset comes off in float as in the Q4_0 / Q5_0
// tiles (avx2_x8.cc), through the activations' block sums:
//   acc = fma(float(sum u*x), dw * dx, acc);  corr = fma(dw, dx * sum x, corr)
//   y = acc - 128 * corr
// Per block and vector j of the group (packed_x8.h), one vpdpbusd per
// activation row replaces the AVX2 tile's vpsignb, vpmaddubsw, vpmaddwd and
// vpaddd. The integer block sums are exact (|sum| <= 32 * 255 * 128).
//
// Bitwise contract (kernel_table.h): a pair's float operations do not
// depend on nr, nc or the pair's place in the tile.
//
// Header rules: static functions only, and the includer provides
// _mm256_dpbusd_epi32: avx512_kernels.cc, compiled natively with
// -mavx512vnni -mavx512vl, or, in the tests, compiled for AVX2 with AVX-512
// emulated (tests/kernels/avx512_emulated.cc); everything else is AVX2
// (simd_x86.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/simd_x86.h"
#include "kernels/x8_internal.h"

namespace weft::kernels::x8_vnni {

using x86::Bcast4;

// Q8_0 group blocks against RC Q8x32 activation rows.
template <int RC>
static void TileQ8_0(int64_t k, const void* w, int nr, const void* xq,
                     size_t xq_stride, float* y, size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<X8Fmt::kQ8_0>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const int8_t* aq[RC];
  const float* ad[RC];
  const float* ads[RC];
  for (int c = 0; c < RC; ++c) {
    aq[c] = reinterpret_cast<const int8_t*>(static_cast<const char*>(xq) +
                                            c * xq_stride);
    ad[c] = reinterpret_cast<const float*>(aq[c] + k);
    ads[c] = ad[c] + nb;
  }
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256 acc[RC], corr[RC];
  for (int c = 0; c < RC; ++c) acc[c] = corr[c] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* gb = g + b * kGB;
    // The group's stream 2 KiB ahead, as the AVX2 tiles (integer
    // arithmetic: the address may lie past the matrix).
    for (int off = 0; off < kGB; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(
                       reinterpret_cast<uintptr_t>(gb) + 2048 + off),
                   _MM_HINT_T0);
    }
    const __m256 dw =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb)));
    __m256i s32[RC];
    for (int c = 0; c < RC; ++c) s32[c] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      const __m256i u = _mm256_xor_si256(
          _mm256_loadu_si256(
              reinterpret_cast<const __m256i*>(gb + 16 + 32 * j)),
          flip);
      for (int c = 0; c < RC; ++c) {
        s32[c] = _mm256_dpbusd_epi32(s32[c], u, Bcast4(aq[c] + 32 * b + 4 * j));
      }
    }
    for (int c = 0; c < RC; ++c) {
      const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(ad[c][b]));
      acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s32[c]), s, acc[c]);
      corr[c] = _mm256_fmadd_ps(dw, _mm256_set1_ps(ads[c][b]), corr[c]);
    }
  }
  for (int c = 0; c < RC; ++c) {
    const __m256 v = _mm256_fnmadd_ps(_mm256_set1_ps(128.0f), corr[c], acc[c]);
    alignas(32) float tmp[kX8Rows];
    _mm256_store_ps(tmp, v);
    for (int i = 0; i < nr; ++i) y[c * y_stride + i] = tmp[i];
  }
}

// Activation rows per call.
constexpr int kCols = 4;

// The TileFn entry for Q8_0 (nc <= kCols activation rows).
static void TileNQ8_0(int64_t k, const void* w, size_t /*w_stride*/, int nr,
                      const void* xq, size_t xq_stride, int nc, float* y,
                      size_t y_stride) {
  WithCols<kCols>(nc, [&](auto rc) {
    TileQ8_0<decltype(rc)::value>(k, w, nr, xq, xq_stride, y, y_stride);
  });
}

}  // namespace weft::kernels::x8_vnni
