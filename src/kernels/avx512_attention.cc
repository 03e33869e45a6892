// AVX-512 attention kernels over cached K / V rows (kernel_table.h:
// scores_f32, scores_f16, scores_f16t, wsum_f32, wsum_f16, exp_sum):
// 16-float lanes, so a head of 64 takes 4 multiply-adds per key and query row where AVX2
// takes 8.
//
// Bitwise contract (as avx2_attention.cc's): a score is one 16-lane
// accumulator per position over 16-element steps (the last one masked),
// reduced as Reduce16 does, times the scale, whichever block of 16
// positions and query row it is computed in; the weighted sum is
// y = fma(alpha, x, y) per element, positions in order (the same
// arithmetic as the AVX2 and one-row kernels). Rows and positions only
// share loads, so results do not depend on the shape of a call.
//
// Compiled with the AVX-512 flags: reached only through the dispatch table
// (and, with SIMDe, by tests/kernels/avx512_emulated.cc).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/avx2_internal.h"
#include "kernels/avx512_reduce.h"
#include "kernels/simd_x86.h"
#include "kernels/wsum_blocks.h"
#include "kernels/kernel_table.h"

// GCC 12's unmasked forms of some AVX-512 intrinsics pass
// _mm512_undefined_*(), which -Wuninitialized flags (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::avx512 {
namespace {

[[gnu::always_inline]] static inline __m512 Load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
[[gnu::always_inline]] static inline __m512 Load16(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// Lane p: q . k[p] over n elements, prefetching ahead[p] (null: none).
template <typename K>
[[gnu::always_inline]] static inline __m512 Dot16(const float* q, const K* const* k,
                                                 const void* const* ahead, int64_t n) {
  __m512 a[16];
#pragma GCC unroll 16
  for (int p = 0; p < 16; ++p) a[p] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 qv = _mm512_loadu_ps(q + i);
#pragma GCC unroll 16
    for (int p = 0; p < 16; ++p) {
      if (ahead != nullptr) PrefetchSpan<16, K>(ahead[p], i);
      a[p] = _mm512_fmadd_ps(qv, Load16(k[p] + i, 0xFFFF), a[p]);
    }
  }
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    const __m512 qv = _mm512_maskz_loadu_ps(m, q + i);
#pragma GCC unroll 16
    for (int p = 0; p < 16; ++p) a[p] = _mm512_fmadd_ps(qv, Load16(k[p] + i, m), a[p]);
  }
  return Reduce16(a);
}

// R query rows against P positions k[0 .. P-1], each key vector converted
// once and used by every row (no tile): acc[r][p] gets exactly Dot16's
// multiply-adds for (r, p), in the same order, and the reduction is
// Reduce16's tree, so every score is bitwise Scores' one. Stores the
// lanes in `keep`, times the scale, at out + r * os. Prefetches ahead[p]
// (null: none) as it reads k[p].
template <int R, int P, typename K>
[[gnu::always_inline]] static inline void DotRows(const float* q, int64_t qs, const K* const* k,
                                                 const void* const* ahead, int64_t n,
                                                 float scale, float* out, int64_t os,
                                                 __mmask16 keep) {
  static_assert(P == 4 || P == 8);
  __m512 acc[R][P];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  auto step = [&](int64_t i, __mmask16 m) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      if (ahead != nullptr) PrefetchSpan<16, K>(ahead[p], i);
      const __m512 kv = Load16(k[p] + i, m);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        acc[r][p] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + r * qs + i), kv, acc[r][p]);
      }
    }
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) step(i, 0xFFFF);
  if (i < n) step(i, TailMask(n - i));
  const __m512 vscale = _mm512_set1_ps(scale);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 s = P == 8 ? Reduce8(acc[r]) : Reduce4(acc[r]);
    _mm512_mask_storeu_ps(out + r * os, keep, _mm512_mul_ps(s, vscale));
  }
}

// Query rows per call of DotRows in ScoresFew: a decode token's query
// heads of one kv head when there are at most this many (GQA groups of 2,
// 3 and 4); more rows share a float tile (Scores).
constexpr int kFewRows = 4;

// Scores of nr <= kFewRows rows without a tile: P = 8 positions at a time
// (4 for 4 rows, which would not fit the registers), a short last group
// repeating its last row and dropping the extra lanes.
template <typename K>
void ScoresFew(const float* q, int64_t qs, int nr, const void* const* rows,
               const void* const* ahead, int64_t np, int64_t n, float scale, float* out,
               int64_t os) {
  const int64_t P = nr == 4 ? 4 : 8;
  for (int64_t p0 = 0; p0 < np; p0 += P) {
    const int64_t pn = std::min<int64_t>(P, np - p0);
    const K* k[8];
    const void* ah[8];
    const void* const* a = GroupRows(rows, ahead, p0, pn, static_cast<int>(P), k, ah);
    const __mmask16 keep = TailMask(pn);
    switch (nr) {
      case 1: DotRows<1, 8>(q, qs, k, a, n, scale, out + p0, os, keep); break;
      case 2: DotRows<2, 8>(q, qs, k, a, n, scale, out + p0, os, keep); break;
      case 3: DotRows<3, 8>(q, qs, k, a, n, scale, out + p0, os, keep); break;
      default: DotRows<4, 4>(q, qs, k, a, n, scale, out + p0, os, keep); break;
    }
  }
}

// Score rows of at most this many elements go through a float tile when
// several query rows share them (half to float is exact).
constexpr int64_t kTileMaxDim = 512;

// 16 positions at a time (a short last block repeats its last row and
// drops the extra lanes); each query row against the block's rows, which
// stay in L1 across the rows; the first row's pass (or the tile's
// conversion) prefetches `ahead`.
template <typename K>
void Scores(const float* q, int64_t qs, int nr, const void* const* rows,
            const void* const* ahead, int64_t np, int64_t n, float scale, float* out,
            int64_t os) {
  if (nr > 1 && nr <= kFewRows) {
    ScoresFew<K>(q, qs, nr, rows, ahead, np, n, scale, out, os);
    return;
  }
  const int64_t n16 = (n + 15) & ~int64_t{15};
  alignas(64) float tile[16 * kTileMaxDim];
  const bool use_tile = !std::is_same_v<K, float> && nr > 1 && n16 <= kTileMaxDim;
  const __m512 vscale = _mm512_set1_ps(scale);
  for (int64_t p0 = 0; p0 < np; p0 += 16) {
    const int64_t pn = std::min<int64_t>(16, np - p0);
    const K* k[16];
    const void* ah[16];
    const void* const* a = GroupRows(rows, ahead, p0, pn, 16, k, ah);
    const __mmask16 keep = TailMask(pn);
    if (use_tile) {
      const float* kt[16];
      for (int p = 0; p < 16; ++p) {
        float* dst = tile + p * n16;
        for (int64_t i = 0; i < n16; i += 16) {
          if (a != nullptr) PrefetchSpan<16, K>(a[p], i);
          _mm512_store_ps(dst + i, Load16(k[p] + i, i + 16 <= n ? 0xFFFF : TailMask(n - i)));
        }
        kt[p] = dst;
      }
      for (int r = 0; r < nr; ++r) {
        const __m512 s = _mm512_mul_ps(Dot16<float>(q + r * qs, kt, nullptr, n), vscale);
        _mm512_mask_storeu_ps(out + r * os + p0, keep, s);
      }
    } else {
      for (int r = 0; r < nr; ++r) {
        const __m512 s = _mm512_mul_ps(Dot16<K>(q + r * qs, k, r == 0 ? a : nullptr, n), vscale);
        _mm512_mask_storeu_ps(out + r * os + p0, keep, s);
      }
    }
  }
}

// acc[r] += q_r[e] * keys of element row e (`row`), for R rows (one
// chain's accumulators).
template <int R>
[[gnu::always_inline]] static inline void TileStep(const float* q, int64_t qs,
                                                   const uint16_t* row, __mmask16 m, int64_t e,
                                                   __m512* acc) {
  const __m512 kv = Load16(row, m);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r * qs + e]), kv, acc[r]);
}

// R query rows against the keys of a tile (kernel_table.h scores_f16t):
// lane p is key p; chain j takes elements e = j (mod 4), each key vector
// converted once for the R rows. The chains are indexed by constants only:
// a tail loop indexing them by a variable kept them in memory, with a store
// per multiply-add in the main loop (as the AVX2 kernel's did: 114 -> ~100
// ns per call there, Zen 3; this one's time is not measured).
template <int R>
[[gnu::always_inline]] static inline void TileRows(const float* q, int64_t qs,
                                                  const uint16_t* kt, int64_t w, __mmask16 m,
                                                  int64_t n, float scale, float* out,
                                                  int64_t os, const uint16_t* ahead) {
  __m512 acc[4][R];
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[j][r] = _mm512_setzero_ps();
  }
  const int64_t row_bytes = w * int64_t{sizeof(uint16_t)};
  int64_t e = 0;
  for (; e + 4 <= n; e += 4) {
    if (ahead != nullptr) PrefetchLines(ahead, e * row_bytes, (e + 4) * row_bytes);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) TileStep<R>(q, qs, kt + (e + j) * w, m, e + j, acc[j]);
  }
  if (e < n) {
    if (ahead != nullptr) PrefetchLines(ahead, e * row_bytes, n * row_bytes);
    TileStep<R>(q, qs, kt + e * w, m, e, acc[0]);
    if (e + 1 < n) TileStep<R>(q, qs, kt + (e + 1) * w, m, e + 1, acc[1]);
    if (e + 2 < n) TileStep<R>(q, qs, kt + (e + 2) * w, m, e + 2, acc[2]);
  }
  const __m512 vscale = _mm512_set1_ps(scale);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m512 s = _mm512_add_ps(_mm512_add_ps(acc[0][r], acc[1][r]),
                                   _mm512_add_ps(acc[2][r], acc[3][r]));
    _mm512_mask_storeu_ps(out + r * os, m, _mm512_mul_ps(s, vscale));
  }
}

// kernel_table.h scores_f16t: rows in groups of 4 (the last 1-3), the
// first group prefetching `ahead`.
void ScoresTile(const float* q, int64_t qs, int nr, const uint16_t* kt, int64_t w, int64_t np,
                int64_t n, float scale, float* out, int64_t os, const uint16_t* ahead) {
  const __mmask16 m = TailMask(std::min<int64_t>(np, 16));
  for (int r = 0; r < nr; r += 4) {
    const float* qr = q + r * qs;
    float* o = out + r * os;
    const uint16_t* a = r == 0 ? ahead : nullptr;
    switch (std::min(4, nr - r)) {
      case 1: TileRows<1>(qr, qs, kt, w, m, n, scale, o, os, a); break;
      case 2: TileRows<2>(qr, qs, kt, w, m, n, scale, o, os, a); break;
      case 3: TileRows<3>(qr, qs, kt, w, m, n, scale, o, os, a); break;
      default: TileRows<4>(qr, qs, kt, w, m, n, scale, o, os, a); break;
    }
  }
}

// WsumBlock's vector operations on 16 lanes (the last vector masked).
struct Ops16 {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr Mask kAll = 0xFFFF;
  [[gnu::always_inline]] static V LoadY(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  template <typename K>
  [[gnu::always_inline]] static V Load(const K* p, Mask m) { return Load16(p, m); }
  [[gnu::always_inline]] static void StoreY(float* p, Mask m, V v) { _mm512_mask_storeu_ps(p, m, v); }
  [[gnu::always_inline]] static V Set1(float a) { return _mm512_set1_ps(a); }
  [[gnu::always_inline]] static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // R rows over n columns: WsumBlock's blocks, then the tail.
  template <int R, typename K>
  static void Rows(const void* const* rows, const void* const* ahead, int64_t np,
                   const float* alpha, int64_t as, int64_t n, float* y, int64_t ys) {
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
      WsumBlock<Ops16, R, 4, K>(rows, ahead, np, alpha, as, i, 0xFFFF, y, ys);
    }
    for (; i + 16 <= n; i += 16) {
      WsumBlock<Ops16, R, 1, K>(rows, ahead, np, alpha, as, i, 0xFFFF, y, ys);
    }
    if (i < n) {
      WsumBlock<Ops16, R, 1, K>(rows, ahead, np, alpha, as, i, TailMask(n - i), y, ys);
    }
  }
};

// x86::ExpSteps' operations on 16 lanes (the exponent built without
// cvtps, which the SIMDe-emulated build lacks).
struct ExpOps16 {
  using V = __m512;
  [[gnu::always_inline]] static V Set1(float a) { return _mm512_set1_ps(a); }
  [[gnu::always_inline]] static V Min(V a, V b) { return _mm512_min_ps(a, b); }
  [[gnu::always_inline]] static V Max(V a, V b) { return _mm512_max_ps(a, b); }
  [[gnu::always_inline]] static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  [[gnu::always_inline]] static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  [[gnu::always_inline]] static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  [[gnu::always_inline]] static V Fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  [[gnu::always_inline]] static V Round(V a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // fx + 1.5 * 2^23 holds the whole number fx in its low mantissa bits.
  [[gnu::always_inline]] static V Pow2(V fx) {
    const __m512i e = _mm512_add_epi32(
        _mm512_castps_si512(_mm512_add_ps(fx, _mm512_set1_ps(12582912.0f))),
        _mm512_set1_epi32(127 - 0x4B400000));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
  [[gnu::always_inline]] static V ZeroBelow(V x, V lim, V y) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lim, _CMP_NLT_UQ), y);
  }
};

// kernel_table.h exp_sum, bitwise the AVX2 table's (x86::ExpPs' values,
// one 8-lane running sum added to in element order, HsumPs, then expf on
// the last n % 8 elements added in order), so a model's outputs do not
// change with the table; only the exps run 16 lanes at a time.
float ExpSum(float* x, int64_t n, float* max) {
  const int64_t n8 = n & ~int64_t{7};
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n8; i += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(x + i));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, vmax);
  float m = lanes[0];
  for (int l = 1; l < 16; ++l) m = std::fmax(m, lanes[l]);
  for (; i < n; ++i) m = std::fmax(m, x[i]);
  *max = m;
  const __m512 vm = _mm512_set1_ps(m);
  __m256 sum = _mm256_setzero_ps();
  for (i = 0; i + 16 <= n8; i += 16) {
    const __m512 e = x86::ExpSteps<ExpOps16>(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm));
    _mm512_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, _mm512_castps512_ps256(e));
    sum = _mm256_add_ps(sum, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
  }
  if (i < n8) {
    const __m256 e = x86::ExpPs(_mm256_sub_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(m)));
    _mm256_storeu_ps(x + i, e);
    sum = _mm256_add_ps(sum, e);
  }
  float total = x86::HsumPs(sum);
  for (i = n8; i < n; ++i) {
    x[i] = expf(x[i] - m);
    total += x[i];
  }
  return total;
}

}  // namespace

void FillAttention(KernelTable* t) {
  t->exp_sum = ExpSum;
  t->scores_f32 = Scores<float>;
  t->scores_f16 = Scores<uint16_t>;
  t->scores_f16t = ScoresTile;
  t->wsum_f32 = Wsum<Ops16, float>;
  t->wsum_f16 = Wsum<Ops16, uint16_t>;
  FillAttentionQ8(t);  // avx512_attention_q8.cc
}

}  // namespace weft::kernels::avx512
