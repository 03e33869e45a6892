// The AVX-512 table's panel path for the x8 Q4_0/Q5_0/Q8_0 tiles
// (MatMulKernel::pack_panel, kernel_table.h): products of M >= 5 activation
// rows on zmm, 64 multiply-adds per vpdpbusd.
//
// Compiled like avx512_kernels.cc (-mavx512f/bw/vl/dq/vnni/bf16, reached
// only through the dispatch table) and, in the tests, for AVX2 with every
// AVX-512 intrinsic emulated (tests/kernels/avx512_emulated.cc includes
// this file too).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/avx2_internal.h"
#include "kernels/avx2_x8_common.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/x8_internal.h"
#include "kernels/x8_vnni_impl.h"

// GCC 12's avx512fintrin.h builds casts and reductions on
// _mm512_undefined_*(), which -Wuninitialized flags (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::avx512 {
namespace {

// ---- x8 weights (Q4_0, Q5_0, Q8_0) against panels of activation rows ----
//
// The x8 tile (x8_vnni_impl.h) holds a code vector of 8 weight rows in a ymm
// and broadcasts each activation row's 4 bytes: one vpdpbusd per 32
// multiply-adds. Here a zmm's 16 lanes are (activation row i, weight row
// 2q + h) for i < 8, h < 2, lane 2i + h: the activation operand is each
// row's 4 bytes twice (a half panel, packed once per MatMul by
// PackPanelQ8x32) and the code operand a 64-bit broadcast of weight rows 2q
// and 2q + 1's 4 bytes: one vpdpbusd per 64 multiply-adds, twice the x8
// tile's rate, and every lane an output. A panel is two halves (16 rows):
// each broadcast then serves both. Per pair the integer block sums and the
// float operations are the x8 tile's, so the outputs are bitwise equal to
// it:
//   acc = fma(float(sum u*x), dw * dx, acc);  corr = fma(dw, ds, corr)
//   y = acc - offset * corr            (u = codes, w + 128 for Q8_0)

constexpr int kHalfRows = 8;
constexpr int kPanelRows = 2 * kHalfRows;
// Bytes of a half panel and of a panel, in Q8x32 rows (each value twice).
constexpr int kHalfStrideRows = 2 * kHalfRows;
constexpr int kPanelStrideRows = 2 * kHalfStrideRows;
// Below this M the x8 tile does fewer instructions than a padded panel.
constexpr int kPanelMinM = 5;

// Half-panel layout for activation rows of k elements (k / 32 = nb blocks),
// each value twice (lanes 2i and 2i + 1 are row i):
//   qs[nb][8][16][4] int8 | d[nb][16] float | ds[nb][16] float
// (elements 4j..4j+3 of block b of row i at qs[((b * 8 + j) * 16 + 2i + h) *
// 4]): 16 * (k + 8 nb) bytes, 16 Q8x32 rows' ActRowBytes at most. A panel is
// rows 0-7's half, then rows 8-15's.
void PackPanelQ8x32(const void* xq, size_t xq_stride, int nrows, int64_t k,
                    void* panel) {
  const int64_t nb = k / 32;
  const size_t half_bytes = static_cast<size_t>(16 * (k + 8 * nb));
  std::memset(panel, 0, 2 * half_bytes);
  for (int r = 0; r < nrows; ++r) {
    int8_t* qs = static_cast<int8_t*>(panel) + (r / kHalfRows) * half_bytes;
    float* d = reinterpret_cast<float*>(qs + 16 * k);
    float* ds = d + 16 * nb;
    const int i = r % kHalfRows;
    const Q8x32Row row = Q8x32RowAt(xq, xq_stride, r, k);
    for (int64_t b = 0; b < nb; ++b) {
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 8; ++j) {
          std::memcpy(qs + ((b * 8 + j) * 16 + 2 * i + h) * 4,
                      row.qs + 32 * b + 4 * j, 4);
        }
        d[b * 16 + 2 * i + h] = row.d[b];
        ds[b * 16 + 2 * i + h] = row.ds[b];
      }
    }
  }
}

// A group block's codes as unsigned bytes at u, [j][row]: 4 bytes of
// weight row r for elements 4j..4j+3 at u[8 * j + r] (the panel's j).
template <X8Fmt F>
static inline void UnsignedCodes(const uint8_t* gb, int32_t* u) {
  if constexpr (F == X8Fmt::kQ8_0) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      _mm512_store_si512(
          u + 16 * q,
          _mm512_xor_si512(_mm512_loadu_si512(gb + 16 + 64 * q), flip));
    }
  } else {
    // avx2::Nibbles<F, J>: lo = elements 4J.., hi = 16 + 4J.. (j = 4 + J).
    auto put = [&](auto jc) {
      constexpr int J = decltype(jc)::value;
      __m256i lo, hi;
      avx2::Nibbles<F, J>(gb, &lo, &hi);
      _mm256_store_si256(reinterpret_cast<__m256i*>(u + 8 * J), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(u + 8 * (4 + J)), hi);
    };
    put(std::integral_constant<int, 0>{});
    put(std::integral_constant<int, 1>{});
    put(std::integral_constant<int, 2>{});
    put(std::integral_constant<int, 3>{});
  }
}

// A zeroed register per call: the zeroing idiom (vpxord x, x, x) is done at
// register renaming, where copies of one zeroed register (what the compiler
// makes of repeated _mm512_setzero_si512) each take a vector port.
static inline __m512i Zero() {
#if defined(__AVX512F__)
  __m512i z;
  asm volatile("vpxord %0, %0, %0" : "=v"(z));
  return z;
#else  // the emulated build (tests/kernels/avx512_emulated.cc)
  return _mm512_setzero_si512();
#endif
}

// 64 bits at p broadcast (a load-port-only vpbroadcastq).
static inline __m512i Bcast8(const void* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm512_set1_epi64(v);
}
static inline __m512 Bcast8Ps(const float* p) {
  return _mm512_castsi512_ps(Bcast8(p));
}

// Group blocks the panel tiles decode at a time (PanelTileH).
constexpr int kPanelChunk = 16;
// Prefetch distance of the panel tiles past the next chunk, in bytes.
// The prefetches are issued from the products' loop, one group block each,
// kPanelChunk blocks plus kChunkAhead bytes ahead, not from the decoding
// one: the decoding loop reads a whole chunk in a burst, and prefetches
// issued there left memory idle while the products ran. Spread over the
// products, the next chunk's lines arrive while this one's are multiplied;
// measured side by side on a Zen 5 (weft bench model, 4 alternating runs
// each, medians), Gemma 3 270M's decode step took ~14% less time at B = 8
// and ~6% at 16.
constexpr size_t kChunkAhead = 1024;

// One x8 group of format F (nr <= 8 rows) against the first H halves of a
// panel (nc <= 8 H rows).
template <X8Fmt F, int H>
static void PanelTileH(int64_t k, const uint8_t* g, int nr, const int8_t* qs,
                       int nc, float* y, size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  constexpr float kOffset = x8_vnni::kCodeOffset<F>;
  const int64_t nb = k / 32;
  const int64_t half = 16 * (k + 8 * nb);  // bytes
  const int8_t* xs[H];
  const float* pd[H];
  const float* pds[H];
  for (int h = 0; h < H; ++h) {
    xs[h] = qs + h * half;
    pd[h] = reinterpret_cast<const float*>(xs[h] + 16 * k);
    pds[h] = pd[h] + 16 * nb;
  }
  // acc[h][q], corr[h][q]: half h's rows against weight rows 2q, 2q + 1.
  __m512 acc[H][4];
#pragma GCC unroll 8
  for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[h][q] = _mm512_setzero_ps();
  }
  // The codes of kPanelChunk blocks as unsigned bytes, [block][j][row] (the
  // group's order), and their weight scales, written a chunk ahead of the
  // products that read them back as broadcasts (a broadcast load takes a
  // load port only, where the compiler's register shuffles would take the
  // vector ports, and a load right after its store could wait on it).
  alignas(64) int32_t u[kPanelChunk][8 * 8];
  alignas(64) float dw[kPanelChunk][8];
  for (int64_t b0 = 0; b0 < nb; b0 += kPanelChunk) {
    const int n = static_cast<int>(std::min<int64_t>(kPanelChunk, nb - b0));
    for (int i = 0; i < n; ++i) {
      const uint8_t* gb = g + (b0 + i) * kGB;
      _mm256_store_ps(dw[i], _mm256_cvtph_ps(_mm_loadu_si128(
                                 reinterpret_cast<const __m128i*>(gb))));
      UnsignedCodes<F>(gb, u[i]);
    }
    asm volatile("" : "+m"(u), "+m"(dw));
    for (int i = 0; i < n; ++i) {
      const int64_t b = b0 + i;
      avx2::PrefetchAhead<kGB, kPanelChunk * kGB + kChunkAhead>(g + b * kGB);
      // 8 vpdpbusd chains: two halves, or one half's even and odd j (added
      // at the end of the block).
      __m512i s[2][4];
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) s[0][q] = Zero(), s[1][q] = Zero();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        __m512i a[H];
#pragma GCC unroll 2
        for (int h = 0; h < H; ++h) {
          a[h] = _mm512_loadu_si512(xs[h] + (b * 8 + j) * 64);
        }
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          const __m512i c = Bcast8(&u[i][8 * j + 2 * q]);
          if constexpr (H == 2) {
            s[0][q] = _mm512_dpbusd_epi32(s[0][q], c, a[0]);
            s[1][q] = _mm512_dpbusd_epi32(s[1][q], c, a[1]);
          } else {
            s[j & 1][q] = _mm512_dpbusd_epi32(s[j & 1][q], c, a[0]);
          }
        }
      }
      if constexpr (H == 1) {
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q)
          s[0][q] = _mm512_add_epi32(s[0][q], s[1][q]);
      }
#pragma GCC unroll 2
      for (int h = 0; h < H; ++h) {
        const __m512 dx = _mm512_loadu_ps(pd[h] + b * 16);
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          acc[h][q] = _mm512_fmadd_ps(
              _mm512_cvtepi32_ps(s[h][q]),
              _mm512_mul_ps(Bcast8Ps(&dw[i][2 * q]), dx), acc[h][q]);
        }
      }
    }
  }
  // The offset's correction in a second pass (fewer live registers above);
  // its sum still runs over the blocks in order.
  __m512 corr[H][4];
#pragma GCC unroll 8
  for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) corr[h][q] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    alignas(32) float dwb[8];
    _mm256_store_ps(dwb, _mm256_cvtph_ps(_mm_loadu_si128(
                             reinterpret_cast<const __m128i*>(g + b * kGB))));
    asm volatile("" : "+m"(dwb));
#pragma GCC unroll 2
    for (int h = 0; h < H; ++h) {
      const __m512 dsx = _mm512_loadu_ps(pds[h] + b * 16);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {
        corr[h][q] = _mm512_fmadd_ps(Bcast8Ps(&dwb[2 * q]), dsx, corr[h][q]);
      }
    }
  }
  // Lane 2i + e of t[h][q]: y[8h + i][2q + e].
  alignas(64) float t[H][4][16];
#pragma GCC unroll 8
  for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      _mm512_store_ps(t[h][q], _mm512_fnmadd_ps(_mm512_set1_ps(kOffset),
                                                corr[h][q], acc[h][q]));
    }
  }
  for (int c = 0; c < nc; ++c) {
    float* yc = y + c * y_stride;
    const int h = c / kHalfRows, i = c % kHalfRows;
    if (nr == 8) {
      for (int q = 0; q < 4; ++q) std::memcpy(yc + 2 * q, &t[h][q][2 * i], 8);
    } else {
      for (int r = 0; r < nr; ++r) yc[r] = t[h][r / 2][2 * i + r % 2];
    }
  }
}

// TileFn for one x8 group of format F (nr <= 8 rows) against one panel (nc
// <= 16 rows): the second half only when its rows are there.
template <X8Fmt F>
void PanelTile(int64_t k, const void* w, size_t /*w_stride*/, int nr,
               const void* panel, size_t /*xq_stride*/, int nc, float* y,
               size_t y_stride) {
  const uint8_t* g = static_cast<const uint8_t*>(w);
  const int8_t* qs = static_cast<const int8_t*>(panel);
  if (nc <= kHalfRows) {
    PanelTileH<F, 1>(k, g, nr, qs, nc, y, y_stride);
  } else {
    PanelTileH<F, 2>(k, g, nr, qs, nc, y, y_stride);
  }
}

}  // namespace

void FillPanels(KernelTable* t) {
  x8_vnni::ForEachPanelFormat([t](WeightFormat f, auto fmt) {
    MatMulKernel& kern = t->matmul_x8[static_cast<int>(f)];
    kern.pack_panel = PackPanelQ8x32;
    kern.panel_tile = PanelTile<decltype(fmt)::value>;
    kern.panel_rows = kPanelRows;
    kern.panel_stride_rows = kPanelStrideRows;
    kern.panel_min_m = kPanelMinM;
  });
}

}  // namespace weft::kernels::avx512
