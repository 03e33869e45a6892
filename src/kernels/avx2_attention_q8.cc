// AVX2 attention kernels over Q8_0 KV rows (kernel_table.h scores_q8_0,
// wsum_q8_0): each 8 elements are dequantized in registers as Q8_0ToF32
// does (d * float(q), one exact conversion and one product) and used at
// once, so the scores and sums are bitwise this table's scores_f32 and
// wsum_f32 over the dequantized rows (avx2_attention.cc's contract: one
// accumulator per (row, position) over 8-element steps, Reduce8's tree;
// y = fma(alpha, x, y) per element, positions in order), without writing
// and re-reading a float copy of every row.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/avx2_internal.h"
#include "kernels/avx2_reduce.h"
#include "kernels/simd_x86.h"
#include "kernels/wsum_blocks.h"
#include "tensor/blocks.h"

namespace weft::kernels::avx2 {
namespace {

using x86::Fp16;

// Elements [8 * j, 8 * j + 8) of block b, d * float(q) (Q8_0ToF32's).
static inline __m256 Dequant8(const BlockQ8_0* b, int j, __m256 d) {
  const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + 8 * j));
  return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
}

// R query rows against 4 positions (k[p]: their blocks; a short group
// repeats its last row) over n elements (n a multiple of 32): acc[r][p]
// takes DotRows4's multiply-adds, each dequantized vector used by every
// row. Writes the first pn scores of row r at out + r * os.
template <int R>
static inline void Q8Rows4(const float* q, int64_t qs, const BlockQ8_0* const* k, int64_t n,
                           float scale, float* out, int64_t os, int64_t pn) {
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < 4; ++p) acc[r][p] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* qb = q + b * kQK8_0;
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const BlockQ8_0* blk = k[p] + b;
      const __m256 d = _mm256_set1_ps(Fp16(blk->d));
#pragma GCC unroll 4
      for (int j = 0; j < kQK8_0 / 8; ++j) {
        const __m256 kv = Dequant8(blk, j, d);
#pragma GCC unroll 3
        for (int r = 0; r < R; ++r) {
          acc[r][p] = _mm256_fmadd_ps(_mm256_loadu_ps(qb + r * qs + 8 * j), kv, acc[r][p]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m128 s = _mm_mul_ps(Reduce4(acc[r]), _mm_set1_ps(scale));
    float* o = out + r * os;
    if (pn == 4) {
      _mm_storeu_ps(o, s);
      continue;
    }
    alignas(16) float lane[4];
    _mm_store_ps(lane, s);
    std::copy_n(lane, pn, o);
  }
}

// Rows in groups of 3 (then 2 or 1), 4 positions at a time.
void ScoresQ8(const float* q, int64_t qs, int nr, const void* const* rows, int64_t np,
              int64_t n, float scale, float* out, int64_t os) {
  for (int64_t p0 = 0; p0 < np; p0 += 4) {
    const int64_t pn = std::min<int64_t>(4, np - p0);
    const BlockQ8_0* k[4];
    for (int p = 0; p < 4; ++p) {
      k[p] = static_cast<const BlockQ8_0*>(rows[p0 + std::min<int64_t>(p, pn - 1)]);
    }
    int r = 0;
    for (; r + 3 <= nr; r += 3) Q8Rows4<3>(q + r * qs, qs, k, n, scale, out + r * os + p0, os, pn);
    if (r + 2 == nr) Q8Rows4<2>(q + r * qs, qs, k, n, scale, out + r * os + p0, os, pn);
    if (r + 1 == nr) Q8Rows4<1>(q + r * qs, qs, k, n, scale, out + r * os + p0, os, pn);
  }
}

// y_r[i .. i + 8 * NV) += alpha_r[p] * row p's elements there, for R rows
// and the np positions in order (i + 8 * NV within one block of 32).
template <int R, int NV>
static inline void Q8WsumBlock(const void* const* rows, int64_t np, const float* alpha,
                               int64_t as, int64_t i, float* y, int64_t ys) {
  __m256 acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_loadu_ps(y + r * ys + i + 8 * v);
  }
  const int64_t b = i / kQK8_0;
  const int j0 = static_cast<int>(i % kQK8_0) / 8;
  for (int64_t p = 0; p < np; ++p) {
    const BlockQ8_0* blk = static_cast<const BlockQ8_0*>(rows[p]) + b;
    const __m256 d = _mm256_set1_ps(Fp16(blk->d));
    __m256 xv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) xv[v] = Dequant8(blk, j0 + v, d);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 al = _mm256_set1_ps(alpha[r * as + p]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(al, xv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < NV; ++v) _mm256_storeu_ps(y + r * ys + i + 8 * v, acc[r][v]);
  }
}

// R rows over all n columns: a block's 4 vectors at once for up to 2 rows,
// 2 at a time for 3 or 4 (R * NV accumulators + NV rows + d + alpha fit
// the 16 registers).
template <int R>
static inline void Q8WsumRows(const void* const* rows, int64_t np, const float* alpha,
                              int64_t as, int64_t n, float* y, int64_t ys) {
  constexpr int kNV = R <= 2 ? 4 : 2;
  for (int64_t i = 0; i < n; i += 8 * kNV) Q8WsumBlock<R, kNV>(rows, np, alpha, as, i, y, ys);
}

// WsumBlocks' outer loop (blocks of 16 positions, rows in groups of 4, 3,
// 2, 1); Q8_0 rows are not prefetched (the model asks for them itself).
void WsumQ8(const void* const* rows, int64_t np, const float* alpha, int64_t as, int nr,
            int64_t n, float* y, int64_t ys) {
  WsumBlocks(rows, nullptr, np, alpha, as, nr, y, ys,
             [&]<int R>(const void* const* rs, const void* const* /*ahead*/, int64_t pn,
                        const float* a, float* yr) {
               Q8WsumRows<R>(rs, pn, a, as, n, yr, ys);
             });
}

}  // namespace

void FillAttentionQ8(KernelTable* t) {
  t->scores_q8_0 = ScoresQ8;
  t->wsum_q8_0 = WsumQ8;
}

}  // namespace weft::kernels::avx2
