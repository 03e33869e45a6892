// The weighted-sum kernels (kernel_table.h wsum_*) shared by
// avx2_attention.cc and avx512_attention.cc: the outer loop (blocks of
// kWsumPosBlock positions, whose value rows stay in L1 while every row
// group and column block goes over them, each block handed to groups of 4,
// 3, 2 and 1 query rows) and the register-blocked block of R rows x V
// vectors. The caller prefetches the rows (model/attention.cc).
//
// Header-only and ISA-neutral: each ISA's file instantiates these with its
// own vector operations (Ops, below).
#pragma once

#include <algorithm>
#include <cstdint>

namespace weft::kernels {

inline constexpr int64_t kWsumPosBlock = 16;

// For each block p0 (pn positions) and group of R rows starting at r:
//   rows_fn.template operator()<R>(rows + p0, pn, alpha + p0 + r * as, y + r * ys)
template <typename RowsFn>
static inline void WsumBlocks(const void* const* rows, int64_t np, const float* alpha,
                              int64_t as, int nr, float* y, int64_t ys, RowsFn&& rows_fn) {
  for (int64_t p0 = 0; p0 < np; p0 += kWsumPosBlock) {
    const int64_t pn = std::min(kWsumPosBlock, np - p0);
    int r = 0;
    auto run = [&]<int R>() {
      rows_fn.template operator()<R>(rows + p0, pn, alpha + p0 + r * as, y + r * ys);
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
// per element, positions in order. Ops (static, always inlined): V, Mask,
// kAll, LoadY(const float*, Mask), Load(const K*, Mask), StoreY(float*,
// Mask, V), Set1(float), Fma(a, b, c) = a * b + c.
template <typename Ops, int R, int NV, typename K>
[[gnu::always_inline]] static inline void WsumBlock(const void* const* rows, int64_t np,
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
// Ops also has Rows<R, K>(rows, np, alpha, as, n, y, ys): R rows over all
// n columns (WsumBlock's blocks, and the ISA's tail).
template <typename Ops, typename K>
static void Wsum(const void* const* rows, int64_t np, const float* alpha, int64_t as, int nr,
                 int64_t n, float* y, int64_t ys) {
  WsumBlocks(rows, np, alpha, as, nr, y, ys,
             [&]<int R>(const void* const* rs, int64_t pn, const float* a, float* yr) {
               Ops::template Rows<R, K>(rs, pn, a, as, n, yr, ys);
             });
}

}  // namespace weft::kernels
