// The outer loop of the weighted-sum kernels (kernel_table.h wsum_*), shared
// by avx2_attention.cc and avx512_attention.cc: blocks of kWsumPosBlock
// positions (their value rows stay in L1 while every row group and column
// block goes over them), each block handed to groups of 4, 3, 2 and 1 query
// rows. The caller prefetches the rows (model/attention.cc).
//
// Header-only and ISA-neutral: each ISA's file instantiates it with its own
// row kernel.
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

}  // namespace weft::kernels
