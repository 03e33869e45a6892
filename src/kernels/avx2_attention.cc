// AVX2 attention kernels over cached K / V rows (kernel_table.h: dots_f32,
// dots_f16, wsum_f32, wsum_f16): several query rows per key row read, and
// the weighted sum of value rows held in registers across positions; the
// single-row dot_f32 / dot_f16 / axpy_f32 / axpy_f16 are their one-row case.
//
// Bitwise contract: each row's arithmetic is that of the one-row kernels
// (dot: two accumulators over 16-element steps, one 8-element step into the
// first, HsumPs of their sum, the scalar tail; axpy: y = fma(alpha, x, y)
// per element, positions in order). Rows only share loads, so results do
// not depend on how many rows a call handles or where a row sits among
// them.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx2_internal.h"
#include "kernels/simd_x86.h"

namespace weft::kernels::avx2 {
namespace {

using x86::Fp16;
using x86::HsumPs;

static inline __m256 Load8(const float* p) { return _mm256_loadu_ps(p); }
static inline __m256 Load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
static inline float Scalar(float x) { return x; }
static inline float Scalar(uint16_t h) { return Fp16(h); }

// R query rows (q + r * qs) against one key row k.
template <int R, typename K>
static inline void DotRows(const float* q, int64_t qs, const K* k, int64_t n,
                           float scale, float* out, int64_t os) {
  __m256 a0[R], a1[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 k0 = Load8(k + i), k1 = Load8(k + i + 8);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      a0[r] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * qs + i), k0, a0[r]);
      a1[r] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * qs + i + 8), k1, a1[r]);
    }
  }
  if (i + 8 <= n) {
    const __m256 k0 = Load8(k + i);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      a0[r] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * qs + i), k0, a0[r]);
    }
    i += 8;
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    float s = HsumPs(_mm256_add_ps(a0[r], a1[r]));
    for (int64_t j = i; j < n; ++j) s += q[r * qs + j] * Scalar(k[j]);
    out[r * os] = s * scale;
  }
}

template <typename K>
void Dots(const float* q, int64_t qs, int nr, const K* k, int64_t n, float scale,
          float* out, int64_t os) {
  int r = 0;
  for (; r + 4 <= nr; r += 4) DotRows<4>(q + r * qs, qs, k, n, scale, out + r * os, os);
  if (r + 2 <= nr) {
    DotRows<2>(q + r * qs, qs, k, n, scale, out + r * os, os);
    r += 2;
  }
  if (r < nr) DotRows<1>(q + r * qs, qs, k, n, scale, out + r * os, os);
}

// Positions per pass of the weighted sum: their value rows stay in L1
// while every row and column block of y goes over them.
constexpr int64_t kPosBlock = 16;

// y_r[i .. i + 8V) += sum over p of alpha_r[p] * rows[p][i .. i + 8V), for
// R rows, accumulating in registers over the np positions.
// Also prefetches elements i .. i + 8V of rows[np + p] for p < n_next: the
// value rows are read a few cache lines per row at a time, many short
// streams the hardware prefetchers do not follow, so each pass fetches
// its part of the next block of positions.
template <int R, int V, typename K>
static inline void WsumBlock(const void* const* rows, int64_t np, int64_t n_next,
                             const float* alpha, int64_t as, int64_t i, float* y,
                             int64_t ys) {
  __m256 acc[R][V];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_loadu_ps(y + r * ys + i + 8 * v);
  }
  for (int64_t p = 0; p < np; ++p) {
    const K* x = static_cast<const K*>(rows[p]) + i;
    if (p < n_next) {
      _mm_prefetch(reinterpret_cast<const char*>(static_cast<const K*>(rows[np + p]) + i),
                   _MM_HINT_T0);
    }
    __m256 xv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) xv[v] = Load8(x + 8 * v);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 al = _mm256_set1_ps(alpha[r * as + p]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(al, xv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) _mm256_storeu_ps(y + r * ys + i + 8 * v, acc[r][v]);
  }
}

template <int R, typename K>
static inline void WsumRows(const void* const* rows, int64_t np, int64_t n_next,
                            const float* alpha, int64_t as, int64_t n, float* y,
                            int64_t ys) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) WsumBlock<R, 2, K>(rows, np, n_next, alpha, as, i, y, ys);
  if (i + 8 <= n) {
    WsumBlock<R, 1, K>(rows, np, n_next, alpha, as, i, y, ys);
    i += 8;
  }
  for (int r = 0; r < R; ++r) {
    for (int64_t p = 0; p < np; ++p) {
      const float a = alpha[r * as + p];
      const K* x = static_cast<const K*>(rows[p]);
      for (int64_t j = i; j < n; ++j) y[r * ys + j] += a * Scalar(x[j]);
    }
  }
}

template <typename K>
void Wsum(const void* const* rows, int64_t np, const float* alpha, int64_t as, int nr,
          int64_t n, float* y, int64_t ys) {
  for (int64_t p0 = 0; p0 < np; p0 += kPosBlock) {
    const int64_t pn = std::min(kPosBlock, np - p0);
    // The next block's rows, prefetched by the first row group's pass.
    const int64_t pf = std::min(kPosBlock, np - p0 - pn);
    const float* a = alpha + p0;
    int r = 0;
    for (; r + 4 <= nr; r += 4) {
      WsumRows<4, K>(rows + p0, pn, r == 0 ? pf : 0, a + r * as, as, n, y + r * ys, ys);
    }
    if (r + 2 <= nr) {
      WsumRows<2, K>(rows + p0, pn, r == 0 ? pf : 0, a + r * as, as, n, y + r * ys, ys);
      r += 2;
    }
    if (r < nr) WsumRows<1, K>(rows + p0, pn, r == 0 ? pf : 0, a + r * as, as, n, y + r * ys, ys);
  }
}

// The one-row kernels (scale 1 is exact).
template <typename K>
float Dot(const float* a, const K* b, int64_t n) {
  float s;
  DotRows<1>(a, 0, b, n, 1.0f, &s, 0);
  return s;
}

template <typename K>
void Axpy(float alpha, const K* x, float* y, int64_t n) {
  const void* row = x;
  WsumRows<1, K>(&row, 1, 0, &alpha, 0, n, y, 0);
}

}  // namespace

void FillAttention(KernelTable* t) {
  t->dot_f32 = Dot<float>;
  t->dot_f16 = Dot<uint16_t>;
  t->axpy_f32 = Axpy<float>;
  t->axpy_f16 = Axpy<uint16_t>;
  t->dots_f32 = Dots<float>;
  t->dots_f16 = Dots<uint16_t>;
  t->wsum_f32 = Wsum<float>;
  t->wsum_f16 = Wsum<uint16_t>;
}

}  // namespace weft::kernels::avx2
