// The weighted-sum kernels (kernel_table.h wsum_*) shared by
// avx2_attention.cc and avx512_attention.cc: the outer loop (blocks of
// kWsumPosBlock positions, whose value rows stay in L1 while every row
// group and column block goes over them, each block handed to groups of 4,
// 3, 2 and 1 query rows) and the register-blocked block of R rows x V
// vectors; and the prefetch of the rows a caller reads next (`ahead`),
// which the score kernels share.
//
// Header-only and ISA-neutral: each ISA's file instantiates these with its
// own vector operations (Ops, below).
#pragma once

#include <algorithm>
#include <cstdint>

namespace weft::kernels {

inline constexpr int64_t kWsumPosBlock = 16;

// The kernels' `ahead` rows (kernel_table.h scores_*, wsum_*): while a
// kernel reads position p's row, it prefetches the same bytes of ahead[p],
// the row the caller reads one block later. Spread like this, one or two
// lines among each position's multiply-adds, the reads stay ahead of the
// arithmetic; the same prefetches issued a block at a time between calls
// stall the core on its fill buffers (attention_bench ctx 2,000, 2
// threads, Sapphire Rapids VM: B=16 38.3-38.9 -> 34.9-35.3 ms, one
// sequence from memory 2.67-2.85 -> 2.57-2.64 ms; bench/results/
// attn-spr.md, stop 50). Locality 2 (into L2, prefetcht1): locality 3 was
// 2-3% faster for one sequence, 1-6% slower for 16.
inline constexpr int kAheadLocality = 2;

// Prefetches the lines of elements [i, i + kElems) of `row`, a row of K:
// of bytes [lo, lo + kBytes), one line per 64 bytes from lo when kBytes >=
// 64, else the line that starts within the span, if any (so a kernel
// stepping kElems at a time asks for each line once).
template <int64_t kElems, typename K>
[[gnu::always_inline]] inline void PrefetchSpan(const void* row, int64_t i) {
  constexpr int64_t kBytes = kElems * int64_t{sizeof(K)};
  const int64_t lo = i * int64_t{sizeof(K)};
  const char* p = static_cast<const char*>(row) + lo;
  if constexpr (kBytes >= 64) {
#pragma GCC unroll 8
    for (int64_t o = 0; o < kBytes; o += 64) __builtin_prefetch(p + o, 0, kAheadLocality);
  } else {
    // The line starting within the span, if any.
    const int64_t first = (lo + 63) & ~int64_t{63};
    if (first < lo + kBytes) {
      __builtin_prefetch(static_cast<const char*>(row) + first, 0, kAheadLocality);
    }
  }
}

// Prefetches (into L1) the lines that start within bytes [lo, hi) of
// `base`: the score kernels over key tiles (scores_f16t), a share of the
// next tile per step.
[[gnu::always_inline]] inline void PrefetchLines(const void* base, int64_t lo, int64_t hi) {
  const char* a = static_cast<const char*>(base);
  for (int64_t o = (lo + 63) & ~int64_t{63}; o < hi; o += 64) __builtin_prefetch(a + o, 0, 3);
}

// The rows p0 .. p0 + n - 1 of a call as K pointers in k[0 .. n) (a short
// group, pn < n positions left, repeats its last row), and the same of
// `ahead` in ah[]: returns ah, or null when ahead is.
template <typename K>
[[gnu::always_inline]] inline const void* const* GroupRows(const void* const* rows,
                                                         const void* const* ahead, int64_t p0,
                                                         int64_t pn, int n, const K** k,
                                                         const void** ah) {
  for (int p = 0; p < n; ++p) {
    const int64_t j = p0 + std::min<int64_t>(p, pn - 1);
    k[p] = static_cast<const K*>(rows[j]);
    ah[p] = ahead != nullptr ? ahead[j] : nullptr;
  }
  return ahead != nullptr ? ah : nullptr;
}

// For each block p0 (pn positions) and group of R rows starting at r:
//   rows_fn.template operator()<R>(rows + p0, ahead', pn, alpha + p0 + r * as, y + r * ys)
// with ahead' = ahead + p0 for the block's first group, else null (each
// row prefetched once).
template <typename RowsFn>
static inline void WsumBlocks(const void* const* rows, const void* const* ahead, int64_t np,
                              const float* alpha, int64_t as, int nr, float* y, int64_t ys,
                              RowsFn&& rows_fn) {
  for (int64_t p0 = 0; p0 < np; p0 += kWsumPosBlock) {
    const int64_t pn = std::min(kWsumPosBlock, np - p0);
    int r = 0;
    auto run = [&]<int R>() {
      const void* const* a = r == 0 && ahead != nullptr ? ahead + p0 : nullptr;
      rows_fn.template operator()<R>(rows + p0, a, pn, alpha + p0 + r * as, y + r * ys);
      r += R;
    };
    while (r + 4 <= nr) run.template operator()<4>();
    if (r + 3 == nr) run.template operator()<3>();
    if (r + 2 <= nr) run.template operator()<2>();
    if (r < nr) run.template operator()<1>();
  }
}

// y_r[i .. i + L*V) += sum over p of alpha_r[p] * rows[p][i .. i + L*V)
// for R rows (L = Ops::kLanes; the last vector's lanes limited to `m`),
// accumulating in registers over the np positions: y = fma(alpha, x, y)
// per element, positions in order; the same columns of ahead[p] (null: none)
// prefetched. Ops (static, always inlined): V, Mask,
// kAll, LoadY(const float*, Mask), Load(const K*, Mask), StoreY(float*,
// Mask, V), Set1(float), Fma(a, b, c) = a * b + c.
template <typename Ops, int R, int NV, typename K>
[[gnu::always_inline]] static inline void WsumBlock(const void* const* rows,
                                                    const void* const* ahead, int64_t np,
                                                    const float* alpha, int64_t as, int64_t i,
                                                    typename Ops::Mask m, float* y, int64_t ys) {
  constexpr int L = Ops::kLanes;
  typename Ops::V acc[R][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      acc[r][v] = Ops::LoadY(y + r * ys + i + L * v, v == NV - 1 ? m : Ops::kAll);
    }
  }
  for (int64_t p = 0; p < np; ++p) {
    const K* x = static_cast<const K*>(rows[p]) + i;
    if (ahead != nullptr) {
      PrefetchSpan<int64_t{L} * NV, K>(ahead[p], i);
    }
    typename Ops::V xv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) xv[v] = Ops::Load(x + L * v, v == NV - 1 ? m : Ops::kAll);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const typename Ops::V al = Ops::Set1(alpha[r * as + p]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = Ops::Fma(al, xv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      Ops::StoreY(y + r * ys + i + L * v, v == NV - 1 ? m : Ops::kAll, acc[r][v]);
    }
  }
}

// The table entry (kernel_table.h wsum_f32 / wsum_f16) of an ISA whose
// Ops also has Rows<R, K>(rows, ahead, np, alpha, as, n, y, ys): R rows
// over all n columns (WsumBlock's blocks, and the ISA's tail).
template <typename Ops, typename K>
static void Wsum(const void* const* rows, const void* const* ahead, int64_t np,
                 const float* alpha, int64_t as, int nr, int64_t n, float* y, int64_t ys) {
  WsumBlocks(rows, ahead, np, alpha, as, nr, y, ys,
             [&]<int R>(const void* const* rs, const void* const* ah, int64_t pn,
                        const float* a, float* yr) {
               Ops::template Rows<R, K>(rs, ah, pn, a, as, n, yr, ys);
             });
}

}  // namespace weft::kernels
