// AVX2 attention kernels over cached K / V rows (kernel_table.h:
// scores_f32, scores_f16, scores_f16t, wsum_f32, wsum_f16), and the one-row dot_f32 /
// dot_f16 / axpy_f32 / axpy_f16.
//
// Bitwise contract: a score is one accumulator per position over 8-element
// steps, reduced as Reduce8 does, plus the scalar tail, times the scale,
// whichever block of 8 positions and query row it is computed in; the
// weighted sum is y = fma(alpha, x, y) per element, positions in order
// (axpy's arithmetic). Rows and positions only share loads, so results do
// not depend on how many rows or positions a call handles.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/avx2_internal.h"
#include "kernels/avx2_reduce.h"
#include "kernels/wsum_blocks.h"
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

// Lane p: q . k[p] over elements [0, n8) (n8 a multiple of 8), one
// accumulator per position; prefetches ahead[p] (null: none).
template <typename K>
static inline __m256 Dot8(const float* q, const K* const* k, const void* const* ahead,
                          int64_t n8) {
  __m256 a[8];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) a[p] = _mm256_setzero_ps();
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 qv = _mm256_loadu_ps(q + i);
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) {
      if (ahead != nullptr) PrefetchSpan<8, K>(ahead[p], i);
      a[p] = _mm256_fmadd_ps(qv, Load8(k[p] + i), a[p]);
    }
  }
  return Reduce8(a);
}

// o[p] = (lane[p] + the scalar tail q . k[p] over [n8, n)) * scale for
// p < pn: the scores' end when n is not a multiple of 8 or a block is short.
template <typename K>
static inline void TailScores(const float* lane, int64_t pn, const float* qr, const K* const* k,
                              int64_t n8, int64_t n, float scale, float* o) {
  for (int64_t p = 0; p < pn; ++p) {
    float v = lane[p];
    for (int64_t j = n8; j < n; ++j) v += qr[j] * Scalar(k[p][j]);
    o[p] = v * scale;
  }
}

// R query rows against 4 positions k[0 .. 3] over elements [0, n8), each
// key vector converted once and used by every row (no tile): acc[r][p]
// gets exactly Dot8's multiply-adds for (r, p) in the same order, reduced
// by Reduce8's tree; then Scores' scalar tail and scale. Writes the first
// pn lanes of row r at out + r * os. Prefetches ahead[p] (null: none).
template <int R, typename K>
static inline void DotRows4(const float* q, int64_t qs, const K* const* k,
                            const void* const* ahead, int64_t n, int64_t n8, float scale,
                            float* out, int64_t os, int64_t pn) {
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < 4; ++p) acc[r][p] = _mm256_setzero_ps();
  }
  for (int64_t i = 0; i < n8; i += 8) {
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      if (ahead != nullptr) PrefetchSpan<8, K>(ahead[p], i);
      const __m256 kv = Load8(k[p] + i);
#pragma GCC unroll 3
      for (int r = 0; r < R; ++r) {
        acc[r][p] = _mm256_fmadd_ps(_mm256_loadu_ps(q + r * qs + i), kv, acc[r][p]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const float* qr = q + r * qs;
    const __m128 s = Reduce4(acc[r]);
    float* o = out + r * os;
    if (n8 == n && pn == 4) {
      _mm_storeu_ps(o, _mm_mul_ps(s, _mm_set1_ps(scale)));
      continue;
    }
    alignas(16) float lane[4];
    _mm_store_ps(lane, s);
    TailScores(lane, pn, qr, k, n8, n, scale, o);
  }
}

// Scores of 2 or 3 rows (a decode token's GQA group) without a tile, 4
// positions at a time (12 accumulators fit the 16 registers).
template <typename K>
void ScoresFew(const float* q, int64_t qs, int nr, const void* const* rows,
               const void* const* ahead, int64_t np, int64_t n, float scale, float* out,
               int64_t os) {
  const int64_t n8 = n & ~int64_t{7};
  for (int64_t p0 = 0; p0 < np; p0 += 4) {
    const int64_t pn = std::min<int64_t>(4, np - p0);
    const K* k[4];
    const void* ah[4];
    const void* const* a = GroupRows(rows, ahead, p0, pn, 4, k, ah);
    if (nr == 2) {
      DotRows4<2>(q, qs, k, a, n, n8, scale, out + p0, os, pn);
    } else {
      DotRows4<3>(q, qs, k, a, n, n8, scale, out + p0, os, pn);
    }
  }
}

// Score rows of at most this many elements go through a float tile when
// several query rows share them (half to float is exact, so the arithmetic
// is unchanged).
constexpr int64_t kTileMaxDim = 512;

// 8 positions at a time (a short last block repeats its last row and
// drops the extra lanes); each query row against the block's rows, which
// stay in L1 across the rows; the first row's pass (or the tile's
// conversion) prefetches `ahead`.
template <typename K>
void Scores(const float* q, int64_t qs, int nr, const void* const* rows,
            const void* const* ahead, int64_t np, int64_t n, float scale, float* out,
            int64_t os) {
  if (nr == 2 || nr == 3) {
    ScoresFew<K>(q, qs, nr, rows, ahead, np, n, scale, out, os);
    return;
  }
  const int64_t n8 = n & ~int64_t{7};
  alignas(32) float tile[8 * kTileMaxDim];
  const bool use_tile = !std::is_same_v<K, float> && nr > 1 && n <= kTileMaxDim;
  for (int64_t p0 = 0; p0 < np; p0 += 8) {
    const int64_t pn = std::min<int64_t>(8, np - p0);
    const K* k[8];
    const void* ah[8];
    const void* const* a = GroupRows(rows, ahead, p0, pn, 8, k, ah);
    const float* kt[8] = {};
    if (use_tile) {
      for (int p = 0; p < 8; ++p) {
        float* dst = tile + p * n;
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
          if (a != nullptr) PrefetchSpan<8, K>(a[p], i);
          _mm256_storeu_ps(dst + i, Load8(k[p] + i));
        }
        for (; i < n; ++i) dst[i] = Scalar(k[p][i]);
        kt[p] = dst;
      }
    }
    for (int r = 0; r < nr; ++r) {
      const float* qr = q + r * qs;
      const __m256 s = use_tile ? Dot8<float>(qr, kt, nullptr, n8)
                                : Dot8<K>(qr, k, r == 0 ? a : nullptr, n8);
      float* o = out + r * os + p0;
      if (n8 == n && pn == 8) {
        _mm256_storeu_ps(o, _mm256_mul_ps(s, _mm256_set1_ps(scale)));
        continue;
      }
      alignas(32) float lane[8];
      _mm256_store_ps(lane, s);
      TailScores(lane, pn, qr, k, n8, n, scale, o);
    }
  }
}

// WsumBlock's vector operations on 8 lanes (no masks: the AVX2 rows end
// with a scalar tail).
struct Ops8 {
  using V = __m256;
  using Mask = int;
  static constexpr int kLanes = 8;
  static constexpr Mask kAll = 0;
  static V LoadY(const float* p, Mask) { return _mm256_loadu_ps(p); }
  template <typename K>
  static V Load(const K* p, Mask) { return Load8(p); }
  static void StoreY(float* p, Mask, V v) { _mm256_storeu_ps(p, v); }
  static V Set1(float a) { return _mm256_set1_ps(a); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  // R rows over n columns: WsumBlock's blocks, then the tail.
  template <int R, typename K>
  static void Rows(const void* const* rows, const void* const* ahead, int64_t np,
                   const float* alpha, int64_t as, int64_t n, float* y, int64_t ys) {
    // Vectors per block: as many as leave registers for the row's loads
    // (R * NV accumulators + NV loads + alpha <= 16), the more
    // accumulators the more fma chains in flight.
    constexpr int kNV = R >= 4 ? 2 : R == 3 ? 3 : 4;
    int64_t i = 0;
    for (; i + 8 * kNV <= n; i += 8 * kNV) {
      WsumBlock<Ops8, R, kNV, K>(rows, ahead, np, alpha, as, i, 0, y, ys);
    }
    for (; i + 16 <= n; i += 16) {
      WsumBlock<Ops8, R, 2, K>(rows, ahead, np, alpha, as, i, 0, y, ys);
    }
    if (i + 8 <= n) {
      WsumBlock<Ops8, R, 1, K>(rows, ahead, np, alpha, as, i, 0, y, ys);
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
};

// The one-row dot: two accumulators over 16-element steps, one 8-element
// step into the first, HsumPs of their sum, the scalar tail.
template <typename K>
float Dot(const float* a, const K* b, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), Load8(b + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), Load8(b + i + 8), a1);
  }
  if (i + 8 <= n) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), Load8(b + i), a0);
    i += 8;
  }
  float s = HsumPs(_mm256_add_ps(a0, a1));
  for (; i < n; ++i) s += a[i] * Scalar(b[i]);
  return s;
}

// Keys [l0, l0 + cnt) of a tile's element row p (cnt <= 8; lanes past cnt
// zero when the row is not whole), converted.
template <bool kWhole>
[[gnu::always_inline]] static inline __m256 TileKeys(const uint16_t* p, int64_t cnt) {
  if constexpr (kWhole) {
    return Load8(p);
  } else {
    alignas(16) uint16_t b[8] = {};
    for (int64_t i = 0; i < cnt; ++i) b[i] = p[i];
    return Load8(b);
  }
}

// acc[r] += q_r[e] * keys of element row e, for R rows (chain j's
// accumulators).
template <int R, bool kWhole>
[[gnu::always_inline]] static inline void TileStep(const float* q, int64_t qs,
                                                   const uint16_t* row, int64_t cnt, int64_t e,
                                                   __m256* acc) {
  const __m256 kv = TileKeys<kWhole>(row, cnt);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(q[r * qs + e]), kv, acc[r]);
}

// R query rows against 8 keys (cnt of them real) of a tile
// (kernel_table.h scores_f16t): lane p is key p; chain j takes elements
// e = j (mod 4). The chains are indexed by constants only, so that they
// stay in registers (a tail loop indexing them by a variable kept them in
// memory: 114 -> ~100 ns per tile and head call in L1, Zen 3, with the
// width also a constant).
template <int R, bool kWhole>
void TileRows(const float* q, int64_t qs, const uint16_t* kt, int64_t w, int64_t cnt,
              int64_t n, float scale, float* out, int64_t os, const uint16_t* ahead) {
  __m256 acc[4][R];
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[j][r] = _mm256_setzero_ps();
  }
  const int64_t row_bytes = w * int64_t{sizeof(uint16_t)};
  int64_t e = 0;
  for (; e + 4 <= n; e += 4) {
    if (ahead != nullptr) PrefetchLines(ahead, e * row_bytes, (e + 4) * row_bytes);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) TileStep<R, kWhole>(q, qs, kt + (e + j) * w, cnt, e + j, acc[j]);
  }
  if (e < n) {
    if (ahead != nullptr) PrefetchLines(ahead, e * row_bytes, n * row_bytes);
    TileStep<R, kWhole>(q, qs, kt + e * w, cnt, e, acc[0]);
    if (e + 1 < n) TileStep<R, kWhole>(q, qs, kt + (e + 1) * w, cnt, e + 1, acc[1]);
    if (e + 2 < n) TileStep<R, kWhole>(q, qs, kt + (e + 2) * w, cnt, e + 2, acc[2]);
  }
  const __m256 vscale = _mm256_set1_ps(scale);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    const __m256 s = _mm256_mul_ps(
        _mm256_add_ps(_mm256_add_ps(acc[0][r], acc[1][r]), _mm256_add_ps(acc[2][r], acc[3][r])),
        vscale);
    if constexpr (kWhole) {
      _mm256_storeu_ps(out + r * os, s);
    } else {
      alignas(32) float b[8];
      _mm256_store_ps(b, s);
      std::copy_n(b, cnt, out + r * os);
    }
  }
}

// R query rows against a whole tile of 16 keys (w = 16: both halves at once), in
// two passes: chains 0 and 1 (elements e = 0, 1 mod 4), then chains 2 and
// 3, so each q broadcast serves both halves (2R accumulators per chain, 4R
// per pass). The score is TileRows' ((a0 + a1) + (a2 + a3)) * scale,
// bitwise. On Zen 3 the broadcasts, not the conversions, held the half
// kernel back: one per multiply-add there, one per two here (L1, 3 rows:
// 84 -> 74 ns per tile in a standalone loop).
template <int R>
void TileRowsPair(const float* q, int64_t qs, const uint16_t* kt, int64_t n, float scale,
                  float* out, int64_t os, const uint16_t* ahead) {
  constexpr int64_t w = 16;
  constexpr int64_t row_bytes = w * int64_t{sizeof(uint16_t)};
  __m256 first[R][2];  // a0 + a1 of each row and half
  for (int pass = 0; pass < 2; ++pass) {
    __m256 acc[2][R][2];  // [chain of the pass][row][half]
#pragma GCC unroll 2
    for (int c = 0; c < 2; ++c) {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[c][r][0] = acc[c][r][1] = _mm256_setzero_ps();
    }
    auto step = [&](int64_t e, __m256 (*a)[2]) {
      const uint16_t* row = kt + e * w;
      const __m256 k0 = Load8(row), k1 = Load8(row + 8);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m256 qv = _mm256_set1_ps(q[r * qs + e]);
        a[r][0] = _mm256_fmadd_ps(qv, k0, a[r][0]);
        a[r][1] = _mm256_fmadd_ps(qv, k1, a[r][1]);
      }
    };
    int64_t e = 2 * pass;
    for (; e + 1 < n; e += 4) {
      if (ahead != nullptr) PrefetchLines(ahead, e * row_bytes, (e + 2) * row_bytes);
      step(e, acc[0]);
      step(e + 1, acc[1]);
    }
    if (e < n) {
      if (ahead != nullptr) PrefetchLines(ahead, e * row_bytes, (e + 1) * row_bytes);
      step(e, acc[0]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256 s = _mm256_add_ps(acc[0][r][h], acc[1][r][h]);
        if (pass == 0) {
          first[r][h] = s;
        } else {
          _mm256_storeu_ps(out + r * os + 8 * h,
                           _mm256_mul_ps(_mm256_add_ps(first[r][h], s), _mm256_set1_ps(scale)));
        }
      }
    }
  }
}

// A whole tile's rows in groups of at most 3, as even as they split (4
// rows: 2 + 2, so no group runs a single row's latency-bound chains).
void TilePair(const float* q, int64_t qs, int nr, const uint16_t* kt, int64_t n, float scale,
              float* out, int64_t os, const uint16_t* ahead) {
  // One group (a decode token's GQA rows, the usual case) needs no split
  // (its divisions cost ~1% of one sequence's attention).
  switch (nr) {
    case 1: TileRowsPair<1>(q, qs, kt, n, scale, out, os, ahead); return;
    case 2: TileRowsPair<2>(q, qs, kt, n, scale, out, os, ahead); return;
    case 3: TileRowsPair<3>(q, qs, kt, n, scale, out, os, ahead); return;
    default: break;
  }
  const int groups = (nr + 2) / 3;
  int r = 0;
  for (int g = 0; g < groups; ++g) {
    const int rows = (nr - r) / (groups - g) + ((nr - r) % (groups - g) != 0 ? 1 : 0);
    const float* qr = q + r * qs;
    float* o = out + r * os;
    const uint16_t* a = r == 0 ? ahead : nullptr;
    switch (rows) {
      case 1: TileRowsPair<1>(qr, qs, kt, n, scale, o, os, a); break;
      case 2: TileRowsPair<2>(qr, qs, kt, n, scale, o, os, a); break;
      default: TileRowsPair<3>(qr, qs, kt, n, scale, o, os, a); break;
    }
    r += rows;
  }
}

// kernel_table.h scores_f16t: keys in halves of 8, rows in groups of 3
// (the accumulators fill the 16 registers), the first call prefetching
// `ahead`. A half whose 8 lanes are not all keys is read through a copy:
// its lanes past np may lie past the tile.
template <bool kWhole>
void TileHalf(const float* q, int64_t qs, int nr, const uint16_t* kt, int64_t w, int64_t cnt,
              int64_t n, float scale, float* out, int64_t os, const uint16_t* ahead) {
  for (int r = 0; r < nr; r += 3) {
    const float* qr = q + r * qs;
    float* o = out + r * os;
    const uint16_t* a = r == 0 ? ahead : nullptr;
    switch (std::min(3, nr - r)) {
      case 1: TileRows<1, kWhole>(qr, qs, kt, w, cnt, n, scale, o, os, a); break;
      case 2: TileRows<2, kWhole>(qr, qs, kt, w, cnt, n, scale, o, os, a); break;
      default: TileRows<3, kWhole>(qr, qs, kt, w, cnt, n, scale, o, os, a); break;
    }
  }
}

// Whole tiles of the usual width go to TilePair; others (a sequence's last
// tile, narrower tiles) by halves.
void ScoresTile(const float* q, int64_t qs, int nr, const uint16_t* kt, int64_t w, int64_t np,
                int64_t n, float scale, float* out, int64_t os, const uint16_t* ahead) {
  if (np == 16 && w == 16) {
    TilePair(q, qs, nr, kt, n, scale, out, os, ahead);
    return;
  }
  for (int64_t l0 = 0; l0 < np; l0 += 8) {
    const int64_t cnt = std::min<int64_t>(8, np - l0);
    const uint16_t* a = l0 == 0 ? ahead : nullptr;
    if (cnt == 8) {
      TileHalf<true>(q, qs, nr, kt + l0, w, cnt, n, scale, out + l0, os, a);
    } else {
      TileHalf<false>(q, qs, nr, kt + l0, w, cnt, n, scale, out + l0, os, a);
    }
  }
}

template <typename K>
void Axpy(float alpha, const K* x, float* y, int64_t n) {
  const void* row = x;
  Ops8::Rows<1, K>(&row, nullptr, 1, &alpha, 0, n, y, 0);
}

}  // namespace

void FillAttention(KernelTable* t) {
  t->dot_f32 = Dot<float>;
  t->dot_f16 = Dot<uint16_t>;
  t->axpy_f32 = Axpy<float>;
  t->axpy_f16 = Axpy<uint16_t>;
  t->scores_f32 = Scores<float>;
  t->scores_f16 = Scores<uint16_t>;
  t->scores_f16t = ScoresTile;
  t->wsum_f32 = Wsum<Ops8, float>;
  t->wsum_f16 = Wsum<Ops8, uint16_t>;
  FillAttentionQ8(t);
}

}  // namespace weft::kernels::avx2
