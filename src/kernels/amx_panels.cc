// The AMX table's panel path for the x8 32-element formats (Q4_0, Q5_0,
// Q8_0, Q4_1, Q5_1, IQ4_NL) and IQ4_XS: products of M >= kAmxMinM
// activation rows on the tile unit (AMX-INT8), which does a block's 16 x 16
// x 32 integer multiply-adds in one TDPBSUD.
//
// Per block of two groups (16 weight rows, 32 elements) and panel (16
// activation rows): the codes go into a B tile as the unsigned bytes the VNNI x8 tiles
// feed vpdpbusd (x8_vnni_impl.h: Q4/Q5 codes as they are, Q8_0's and
// IQ4_NL's values + 128), the activations' 32 int8 per row into an A tile,
// and TDPBSUD (signed A, unsigned B) gives the 16 x 16 exact integer block
// dots the VNNI tile sums with vpdpbusd. The float steps after it are that
// tile's, lane for lane:
//   acc = fma(float(sum u*x), dw * dx, acc);  corr = fma(cw, ds, corr)
//   y = acc + corr (mins) or acc - offset * corr
// so every output is bitwise the x8 tile's (kernel_table.h's panel
// contract; matmul_x8_test checks it).
//
// The tile unit runs apart from the vector ports: a call keeps blocks in
// flight, decoding block b + 4's codes and putting b + 2's products on the
// tile unit (two A, B and C tiles in turn, C stored to L1) while it does
// block b's float steps. Those steps, not the products, bound it.
//
// Each call takes two x8 groups (16 weight rows: MatMulKernel::panel_pairs)
// so that one TDPBSUD fills a 16 x 16 C tile.
//
// Tile state: each thread configures its tiles on its first call and again
// when a call needs the other shapes (ConfigureTiles), and never releases
// them (the OS saves them like any register state). The process must have
// asked the kernel for the AMX state (isa.cc, RequestAmx) before any
// thread gets here.
//
// IQ4_XS takes the same frame per 32-element sub-block (below).
//
// Compiled with the AVX-512 flags plus -mamx-tile -mamx-int8; reached only
// through the AMX table (isa.cc), which exists only where CPUID, XCR0 and
// the OS grant AMX.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/amx_common.h"
#include "kernels/avx2_internal.h"
#include "kernels/avx2_x8_common.h"
#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/simd_x86.h"
#include "kernels/x8_internal.h"
#include "kernels/x8_vnni_impl.h"

// GCC 12's avx512fintrin.h builds casts on _mm512_undefined_*(), which
// -Wuninitialized flags (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::amx {

thread_local int tls_tile_shapes = -1;

namespace {

// Panel layout for 16 activation rows of k elements (nb = k / 32 blocks):
//   qs[nb][16][32] int8 | dx[nb][16] float | ds[nb][16] float
// Block b's A tile is qs[b] (row r's 32 values at qs[b][r]).
constexpr int64_t kPanelBytesPerBlock = 512 + 64 + 64;
// A panel's bytes over the smallest Q8x32 row stride (40 bytes a block).
constexpr int kPanelStrideRows = 16;
static_assert(kPanelStrideRows * 40 >= kPanelBytesPerBlock);

void PackPanel(const void* xq, size_t xq_stride, int nrows, int64_t k, void* panel) {
  const int64_t nb = k / 32;
  std::memset(panel, 0, static_cast<size_t>(nb * kPanelBytesPerBlock));
  int8_t* qs = static_cast<int8_t*>(panel);
  float* dx = reinterpret_cast<float*>(qs + 512 * nb);
  float* ds = dx + 16 * nb;
  for (int r = 0; r < nrows; ++r) {
    const Q8x32Row row = Q8x32RowAt(xq, xq_stride, r, k);
    for (int64_t b = 0; b < nb; ++b) {
      std::memcpy(qs + (b * kRows + r) * 32, row.qs + 32 * b, 32);
      dx[b * kRows + r] = row.d[b];
      ds[b * kRows + r] = row.ds[b];
    }
  }
}

// Group g's (0, 1) block codes as unsigned bytes into the B tile at u: row
// j (64 bytes) holds, at 32 g + 4 r, weight row r's elements 4j..4j+3, the
// j-th 4 bytes of the activations' A tile row (x8_vnni_impl.h's Bcast4(a +
// 4j) order): the x8 layout's vector j (Q8_0), or vector j's low nibbles for
// j < 4 and vector j - 4's high ones after (elements 16 + 4(j - 4)).
template <X8Fmt F>
static inline void Codes(const uint8_t* gb, uint8_t* u) {
  auto put = [u](int j, __m256i v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(u + 64 * j), v);
  };
  if constexpr (F == X8Fmt::kQ8_0) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      put(j, _mm256_xor_si256(
                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 16 + 32 * j)), flip));
    }
  } else if constexpr (F == X8Fmt::kIQ4_NL) {
    const __m256i table = x86::ByteTable16Plus128(kIQ4NLValues);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + 16 + 32 * j));
      __m256i lo, hi;
      avx2::TableNibbles(table, v, &lo, &hi);
      put(j, lo);
      put(4 + j, hi);
    }
  } else {
    auto step = [&](auto jc) {
      constexpr int J = decltype(jc)::value;
      __m256i lo, hi;
      avx2::Nibbles<F, J>(gb, &lo, &hi);
      put(J, lo);
      put(4 + J, hi);
    };
    step(std::integral_constant<int, 0>{});
    step(std::integral_constant<int, 1>{});
    step(std::integral_constant<int, 2>{});
    step(std::integral_constant<int, 3>{});
  }
}

// Two x8 groups of format F (nr <= 16 weight rows: the second group only
// when nr > 8) against the first R rows of a panel (nc <= R activation
// rows). Lane 8 g + i of a row's vectors is group g's weight row i.
// `pre`: the pair's codes already decoded (nb B tiles of 512 bytes, as
// DecodeAll writes them), or null to decode them here, kCodesAhead blocks
// ahead.
template <X8Fmt F, int R>
void PairTile(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr, const int8_t* qs,
              int nc, float* y, size_t y_stride, const uint8_t* pre = nullptr) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  constexpr float kOffset = x8_vnni::kCodeOffset<F>;
  const int64_t nb = k / 32;
  const float* dx = reinterpret_cast<const float*>(qs + 512 * nb);
  const float* ds = dx + 16 * nb;
  alignas(64) uint8_t u[kRing][512];
  alignas(64) int32_t sums[kRing][kRows * 16];
  if (g1 == nullptr && pre == nullptr) {
    for (int i = 0; i < kRing; ++i) {
      for (int j = 0; j < 8; ++j) std::memset(u[i] + 64 * j + 32, 0, 32);
    }
  }
  auto codes = [&](int64_t b) {
    if (pre != nullptr) return;
    uint8_t* ub = u[b % kRing];
    avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(g0 + b * kGB);
    Codes<F>(g0 + b * kGB, ub);
    if (g1 != nullptr) {
      avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(g1 + b * kGB);
      Codes<F>(g1 + b * kGB, ub + 32);
    }
  };
  auto dots = [&](int64_t b) {
    const uint8_t* ub = pre != nullptr ? pre + 512 * b : u[b % kRing];
    if (b % 2 == 0) {
      WEFT_AMX_BLOCK_DOTS(0, 2, 4, qs + 512 * b, ub, sums[b % kRing]);
    } else {
      WEFT_AMX_BLOCK_DOTS(1, 3, 5, qs + 512 * b, ub, sums[b % kRing]);
    }
  };
  __m512 acc[R];
#pragma GCC unroll 16
  for (int m = 0; m < R; ++m) acc[m] = _mm512_setzero_ps();
  for (int64_t b = 0; b < std::min<int64_t>(kCodesAhead, nb); ++b) codes(b);
  for (int64_t b = 0; b < std::min<int64_t>(kDotsAhead, nb); ++b) dots(b);
  for (int64_t b = 0; b < nb; ++b) {
    if (b + kCodesAhead < nb) codes(b + kCodesAhead);
    if (b + kDotsAhead < nb) dots(b + kDotsAhead);
    const __m512 dw = Halves16(g0 + b * kGB, g1 != nullptr ? g1 + b * kGB : nullptr, 0);
    const int32_t* sb = sums[b % kRing];
#pragma GCC unroll 16
    for (int m = 0; m < R; ++m) {
      const __m512 s = _mm512_cvtepi32_ps(_mm512_load_si512(sb + 16 * m));
      acc[m] = _mm512_fmadd_ps(s, _mm512_mul_ps(dw, _mm512_set1_ps(dx[b * kRows + m])), acc[m]);
    }
  }
  alignas(64) float t[R][16];
#pragma GCC unroll 16
  for (int m = 0; m < R; ++m) _mm512_store_ps(t[m], acc[m]);
  // The correction in a second pass (fewer live registers above); its sum
  // still runs over the blocks in order: acc + sum m * ds (mins), else
  // acc - offset * sum dw * ds.
  __m512 corr[R];
#pragma GCC unroll 16
  for (int m = 0; m < R; ++m) corr[m] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const __m512 cw = Halves16(g0 + b * kGB, g1 != nullptr ? g1 + b * kGB : nullptr,
                               kX8HasMin<F> ? 16 : 0);
#pragma GCC unroll 16
    for (int m = 0; m < R; ++m) {
      corr[m] = _mm512_fmadd_ps(cw, _mm512_set1_ps(ds[b * kRows + m]), corr[m]);
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < R; ++m) {
    const __m512 a = _mm512_load_ps(t[m]);
    _mm512_store_ps(t[m], kX8HasMin<F> ? _mm512_add_ps(a, corr[m])
                                       : _mm512_fnmadd_ps(_mm512_set1_ps(kOffset), corr[m], a));
  }
  for (int m = 0; m < nc; ++m) std::memcpy(y + m * y_stride, t[m], sizeof(float) * nr);
}

// The pair's codes for all nb blocks as B tiles (512 bytes each) in a
// thread-local buffer, the second group's half zero when it is absent.
template <X8Fmt F>
const uint8_t* DecodeAll(int64_t nb, const uint8_t* g0, const uint8_t* g1) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  thread_local std::vector<uint8_t> buf;
  uint8_t* u = Aligned64(&buf, static_cast<size_t>(512 * nb));
  for (int64_t b = 0; b < nb; ++b) {
    Codes<F>(g0 + b * kGB, u + 512 * b);
    if (g1 != nullptr) {
      Codes<F>(g1 + b * kGB, u + 512 * b + 32);
    } else {
      for (int j = 0; j < 8; ++j) std::memset(u + 512 * b + 64 * j + 32, 0, 32);
    }
  }
  return u;
}

// TileFn over two consecutive x8 groups (MatMulKernel::panel_pairs) of
// format F against all M = nc activation rows, panels of kRows rows
// kPanelStrideRows * xq_stride bytes apart (MatMulKernel::panel_all_rows):
// one panel decodes its codes as it goes; more share one decoding.
template <X8Fmt F>
void PanelTile(int64_t k, const void* w, size_t w_stride, int nr, const void* panel,
               size_t xq_stride, int nc, float* y, size_t y_stride) {
  if (nc <= kRows) {
    WithPanelRows(w, w_stride, nr, panel, nc, [&](auto rows, const uint8_t* g0,
                                                  const uint8_t* g1, const int8_t* qs) {
      PairTile<F, decltype(rows)::value>(k, g0, g1, nr, qs, nc, y, y_stride);
    });
    return;
  }
  const uint8_t* g0 = static_cast<const uint8_t*>(w);
  const uint8_t* pre = DecodeAll<F>(k / 32, g0, nr > kX8Rows ? g0 + kX8Rows * w_stride : nullptr);
  const size_t panel_bytes = kPanelStrideRows * xq_stride;
  for (int c0 = 0; c0 < nc; c0 += kRows) {
    const int n = std::min(kRows, nc - c0);
    WithPanelRows(w, w_stride, nr, static_cast<const char*>(panel) + (c0 / kRows) * panel_bytes, n,
                  [&](auto rows, const uint8_t* g0, const uint8_t* g1, const int8_t* qs) {
                    PairTile<F, decltype(rows)::value>(k, g0, g1, nr, qs, n, y + c0 * y_stride,
                                                       y_stride, pre);
                  });
  }
}

template <typename Set>
void ForEachFormat(Set&& set) {
  set(WeightFormat::kQ4_0, std::integral_constant<X8Fmt, X8Fmt::kQ4_0>{});
  set(WeightFormat::kQ5_0, std::integral_constant<X8Fmt, X8Fmt::kQ5_0>{});
  set(WeightFormat::kQ8_0, std::integral_constant<X8Fmt, X8Fmt::kQ8_0>{});
  set(WeightFormat::kQ4_1, std::integral_constant<X8Fmt, X8Fmt::kQ4_1>{});
  set(WeightFormat::kQ5_1, std::integral_constant<X8Fmt, X8Fmt::kQ5_1>{});
  set(WeightFormat::kIQ4_NL, std::integral_constant<X8Fmt, X8Fmt::kIQ4_NL>{});
}

}  // namespace

void FillPanels(KernelTable* t) {
  ForEachFormat([t](WeightFormat f, auto fmt) {
    // Q8_0's codes cost one xor to decode, less than the panels' extra
    // L2 traffic when they stream past each group pair (kernels_bench --hot,
    // 640 x 2048 M = 512, us: Q8_0 2700 -> 2920 all rows a call; Q4_1 2400
    // -> 1835).
    SetAmxPanels(&t->matmul_x8[static_cast<int>(f)], PackPanel, PanelTile<decltype(fmt)::value>,
                 kPanelStrideRows, /*all_rows=*/decltype(fmt)::value != X8Fmt::kQ8_0);
  });
  FillKQuantPanels(t);
}

}  // namespace weft::kernels::amx
