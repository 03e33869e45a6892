// AVX-512 attention kernels over Q8_0 KV rows (kernel_table.h scores_q8_0,
// wsum_q8_0): each 16 elements are dequantized in registers as Q8_0ToF32
// does (d * float(q), one exact conversion and one product) and used at
// once, so the scores and sums are bitwise this table's scores_f32 and
// wsum_f32 over the dequantized rows (avx512_attention.cc's contract: one
// 16-lane accumulator per (row, position) over 16-element steps, Reduce16's
// tree; y = fma(alpha, x, y) per element, positions in order), without
// writing and re-reading a float copy of every row. (The AVX2 entries
// follow AVX2's 8-lane tree, so this table cannot inherit them.)
//
// Compiled with the AVX-512 flags: reached only through the dispatch table
// (and, with SIMDe, by tests/kernels/avx512_emulated.cc).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/avx2_internal.h"
#include "kernels/avx512_reduce.h"
#include "kernels/simd_x86.h"
#include "kernels/wsum_blocks.h"
#include "tensor/blocks.h"

// GCC 12's unmasked forms of some AVX-512 intrinsics pass
// _mm512_undefined_*(), which -Wuninitialized flags (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::avx512 {
namespace {

// Elements [16 * j, 16 * j + 16) of block b, d * float(q) (Q8_0ToF32's).
[[gnu::always_inline]] static inline __m512 Dequant16(const BlockQ8_0* b, int j,
                                                      __m512 d) {
  const __m128i q =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16 * j));
  return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
}

// R query rows against P positions (k[p]: their blocks; a short group
// repeats its last row) over n elements (n a multiple of 32): acc[r][p]
// takes DotRows' multiply-adds, each dequantized vector used by every row,
// and Reduce8 / Reduce4 give Reduce16's sums. Stores the lanes in `keep`,
// times the scale, at out + r * os.
template <int R, int P>
[[gnu::always_inline]] static inline void Q8DotRows(const float* q, int64_t qs,
                                                    const BlockQ8_0* const* k,
                                                    int64_t n, float scale,
                                                    float* out, int64_t os,
                                                    __mmask16 keep) {
  static_assert(P == 4 || P == 8);
  __m512 acc[R][P];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* qb = q + b * kQK8_0;
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const BlockQ8_0* blk = k[p] + b;
      const __m512 d = _mm512_set1_ps(x86::Fp16(blk->d));
#pragma GCC unroll 2
      for (int j = 0; j < kQK8_0 / 16; ++j) {
        const __m512 kv = Dequant16(blk, j, d);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          acc[r][p] = _mm512_fmadd_ps(_mm512_loadu_ps(qb + r * qs + 16 * j), kv,
                                      acc[r][p]);
        }
      }
    }
  }
  const __m512 vscale = _mm512_set1_ps(scale);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 s = P == 8 ? Reduce8(acc[r]) : Reduce4(acc[r]);
    _mm512_mask_storeu_ps(out + r * os, keep, _mm512_mul_ps(s, vscale));
  }
}

// Rows R at a time against P positions at a time (a short last group
// repeating its last row and dropping the extra lanes).
template <int R, int P>
static void Q8Scores(const float* q, int64_t qs, const void* const* rows,
                     int64_t np, int64_t n, float scale, float* out,
                     int64_t os) {
  for (int64_t p0 = 0; p0 < np; p0 += P) {
    const int64_t pn = std::min<int64_t>(P, np - p0);
    const BlockQ8_0* k[P];
    for (int p = 0; p < P; ++p) {
      k[p] = static_cast<const BlockQ8_0*>(
          rows[p0 + std::min<int64_t>(p, pn - 1)]);
    }
    Q8DotRows<R, P>(q, qs, k, n, scale, out + p0, os, TailMask(pn));
  }
}

// Four rows (GQA 4) 4 positions at a time; otherwise rows in groups of 3
// (then 2 or 1), 8 positions at a time (R x P accumulators fit the 32
// registers).
void ScoresQ8(const float* q, int64_t qs, int nr, const void* const* rows,
              int64_t np, int64_t n, float scale, float* out, int64_t os) {
  if (nr == 4) {
    Q8Scores<4, 4>(q, qs, rows, np, n, scale, out, os);
    return;
  }
  int r = 0;
  for (; r + 3 <= nr; r += 3)
    Q8Scores<3, 8>(q + r * qs, qs, rows, np, n, scale, out + r * os, os);
  if (r + 2 == nr)
    Q8Scores<2, 8>(q + r * qs, qs, rows, np, n, scale, out + r * os, os);
  if (r + 1 == nr)
    Q8Scores<1, 8>(q + r * qs, qs, rows, np, n, scale, out + r * os, os);
}

// y_r[i .. i + 32 * NB) += alpha_r[p] * row p's elements there, for R rows
// and the np positions in order (i a multiple of 32: NB whole blocks).
template <int R, int NB>
[[gnu::always_inline]] static inline void Q8WsumBlock(const void* const* rows,
                                                      int64_t np,
                                                      const float* alpha,
                                                      int64_t as, int64_t i,
                                                      float* y, int64_t ys) {
  constexpr int NV = 2 * NB;
  __m512 acc[R][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = _mm512_loadu_ps(y + r * ys + i + 16 * v);
  }
  const int64_t b0 = i / kQK8_0;
  for (int64_t p = 0; p < np; ++p) {
    const BlockQ8_0* blk = static_cast<const BlockQ8_0*>(rows[p]) + b0;
    __m512 xv[NV];
#pragma GCC unroll 2
    for (int b = 0; b < NB; ++b) {
      const __m512 d = _mm512_set1_ps(x86::Fp16(blk[b].d));
      xv[2 * b] = Dequant16(blk + b, 0, d);
      xv[2 * b + 1] = Dequant16(blk + b, 1, d);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 al = _mm512_set1_ps(alpha[r * as + p]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[r][v] = _mm512_fmadd_ps(al, xv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      _mm512_storeu_ps(y + r * ys + i + 16 * v, acc[r][v]);
  }
}

// R rows over all n columns: two blocks (a head of 64) per walk over the
// positions, then a last single block.
template <int R>
static void Q8WsumRows(const void* const* rows, int64_t np, const float* alpha,
                       int64_t as, int64_t n, float* y, int64_t ys) {
  int64_t i = 0;
  for (; i + 2 * kQK8_0 <= n; i += 2 * kQK8_0)
    Q8WsumBlock<R, 2>(rows, np, alpha, as, i, y, ys);
  if (i < n) Q8WsumBlock<R, 1>(rows, np, alpha, as, i, y, ys);
}

// WsumBlocks' outer loop (blocks of 16 positions, rows in groups of 4, 3,
// 2, 1); Q8_0 rows are not prefetched (the model asks for them itself).
void WsumQ8(const void* const* rows, int64_t np, const float* alpha, int64_t as,
            int nr, int64_t n, float* y, int64_t ys) {
  WsumBlocks(rows, nullptr, np, alpha, as, nr, y, ys,
             [&]<int R>(const void* const* rs, const void* const* /*ahead*/,
                        int64_t pn, const float* a, float* yr) {
               Q8WsumRows<R>(rs, pn, a, as, n, yr, ys);
             });
}

}  // namespace

void FillAttentionQ8(KernelTable* t) {
  t->scores_q8_0 = ScoresQ8;
  t->wsum_q8_0 = WsumQ8;
}

}  // namespace weft::kernels::avx512
