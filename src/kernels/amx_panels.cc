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
// Tile state: the tiles are configured once per thread (ConfigureTiles)
// and never released (the OS saves them like any register state). The
// process must have asked the kernel for the AMX state (isa.cc,
// RequestAmx) before any thread gets here.
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
namespace {

constexpr int kRows = 16;  // activation rows per panel: an A tile's rows
// Below this M the VNNI x8 tiles (and the AVX-512 panels) are faster.
// kernels_bench --hot on the Sapphire Rapids VM (loaded; two rounds),
// AVX-512 -> AMX, µs: M = 4 Q4_1 640 x 2048 50-60 -> 66-87, Q8_0 41 -> 70,
// IQ4_XS 768 x 2560 78-93 -> 99; M = 5 Q4_1 73-74 -> 39-70, Q8_0 (the VNNI
// panels) 78 -> 48-75, IQ4_XS 115-123 -> 63-112; M = 9 Q4_1 120-132 -> 97-99,
// Q8_0 119 -> 102-106, IQ4_XS 198-216 -> 128.
constexpr int kAmxMinM = 5;
// Blocks in flight: block b's float steps run while b + kDotsAhead's
// products are on the tile unit and b + kCodesAhead's codes are decoded (a
// ring of kRing code and sum buffers).
constexpr int kRing = 8;
constexpr int kCodesAhead = 4;  // blocks the codes run ahead of the float steps
constexpr int kDotsAhead = 2;   // and the products

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

// The 64-byte tile configuration (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// tmm0, tmm1: A (16 rows x 32 bytes); tmm2, tmm3: B (8 rows of 16 weight
// rows x 4 bytes); tmm4, tmm5: C (16 rows x 16 int32).
void ConfigureTiles() {
  thread_local bool configured = false;
  if (configured) return;
  TileConfig c;
  c.colsb[0] = c.colsb[1] = 32;
  c.rows[0] = c.rows[1] = kRows;
  c.colsb[2] = c.colsb[3] = 64;
  c.rows[2] = c.rows[3] = 8;
  c.colsb[4] = c.colsb[5] = 64;
  c.rows[4] = c.rows[5] = kRows;
  _tile_loadconfig(&c);
  configured = true;
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
    const __m256i table = _mm256_xor_si256(x86::ByteTable16(kIQ4NLValues),
                                           _mm256_set1_epi8(static_cast<char>(0x80)));
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

// One block's 16 x 16 integer dots into sums (row-major int32 [16][16]) on
// tiles A, B and C (GCC's tile intrinsics paste their tile numbers into
// the instruction text, so they must be literal numbers: a macro).
#define WEFT_AMX_BLOCK_DOTS(A, B, C, a, u, sums) \
  do {                                           \
    _tile_zero(C);                               \
    _tile_loadd(A, (a), 32);                     \
    _tile_loadd(B, (u), 64);                     \
    _tile_dpbsud(C, A, B);                       \
    _tile_stored(C, (sums), 64);                 \
  } while (0)
// The same with signed B bytes (TDPBSSD).
#define WEFT_AMX_BLOCK_DOTS_SS(A, B, C, a, u, sums) \
  do {                                              \
    _tile_zero(C);                                  \
    _tile_loadd(A, (a), 32);                        \
    _tile_loadd(B, (u), 64);                        \
    _tile_dpbssd(C, A, B);                          \
    _tile_stored(C, (sums), 64);                    \
  } while (0)

// The 16 weight rows' fp16 words at offset `off` of their group blocks
// (g1: null when the second group is absent) as floats.
static inline __m512 Halves16(const uint8_t* g0, const uint8_t* g1, int off) {
  const __m128i h0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g0 + off));
  const __m128i h1 =
      g1 != nullptr ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(g1 + off)) : h0;
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1));
}

// Two x8 groups of format F (nr <= 16 weight rows: the second group only
// when nr > 8) against the first R rows of a panel (nc <= R activation
// rows). Lane 8 g + i of a row's vectors is group g's weight row i.
template <X8Fmt F, int R>
void PairTile(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr, const int8_t* qs,
              int nc, float* y, size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<F>;
  constexpr float kOffset = x8_vnni::kCodeOffset<F>;
  const int64_t nb = k / 32;
  const float* dx = reinterpret_cast<const float*>(qs + 512 * nb);
  const float* ds = dx + 16 * nb;
  alignas(64) uint8_t u[kRing][512];
  alignas(64) int32_t sums[kRing][kRows * 16];
  if (g1 == nullptr) {
    for (int i = 0; i < kRing; ++i) {
      for (int j = 0; j < 8; ++j) std::memset(u[i] + 64 * j + 32, 0, 32);
    }
  }
  auto codes = [&](int64_t b) {
    uint8_t* ub = u[b % kRing];
    avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(g0 + b * kGB);
    Codes<F>(g0 + b * kGB, ub);
    if (g1 != nullptr) {
      avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(g1 + b * kGB);
      Codes<F>(g1 + b * kGB, ub + 32);
    }
  };
  auto dots = [&](int64_t b) {
    if (b % 2 == 0) {
      WEFT_AMX_BLOCK_DOTS(0, 2, 4, qs + 512 * b, u[b % kRing], sums[b % kRing]);
    } else {
      WEFT_AMX_BLOCK_DOTS(1, 3, 5, qs + 512 * b, u[b % kRing], sums[b % kRing]);
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

// TileFn over two consecutive x8 groups (MatMulKernel::panel_pairs) of
// format F against one panel.
template <X8Fmt F>
void PanelTile(int64_t k, const void* w, size_t w_stride, int nr, const void* panel,
               size_t /*xq_stride*/, int nc, float* y, size_t y_stride) {
  ConfigureTiles();
  const uint8_t* g0 = static_cast<const uint8_t*>(w);
  const uint8_t* g1 = nr > kX8Rows ? g0 + kX8Rows * w_stride : nullptr;
  const int8_t* qs = static_cast<const int8_t*>(panel);
  if (nc <= 8) {
    PairTile<F, 8>(k, g0, g1, nr, qs, nc, y, y_stride);
  } else {
    PairTile<F, 16>(k, g0, g1, nr, qs, nc, y, y_stride);
  }
}

// ---- IQ4_XS against Q8_K activations ----
//
// Per 32-element sub-block s a TDPBSSD gives the 16 x 16 dots of the signed
// values (kIQ4NLValues, no offset) with the activations; each row's int32
// dot times its weight row's sub-block scale (vpmulld) adds into the
// super-block's isum. The VNNI tile (x8_vnni_impl.h, TileIQ4XS) feeds value
// + 128 and takes 128 * sum_s sc_s * asum_s off the same isum: with every
// step exact in int32 (|isum| <= 8 * 32 * 32 * 127 * 128), the same
// integer. Its float step per super-block (IQ4XSFinishBlock) is done here
// lane for lane: acc = fma(float(isum), dw * dx, acc), so the outputs are
// bitwise the VNNI tile's.

// Panel layout for 16 Q8_K rows of k elements (nb = k / 256 super-blocks):
//   qs[8 nb][16][32] int8 | dx[nb][16] float
// Sub-block s's A tile is qs[s].
constexpr int64_t kKPanelBytesPerBlock = 8 * 512 + 64;
// A panel's bytes over the smallest Q8_K row stride (292 bytes a block).
constexpr int kKPanelStrideRows = 16;
static_assert(kKPanelStrideRows * 292 >= kKPanelBytesPerBlock);

void PackPanelQ8K(const void* xq, size_t xq_stride, int nrows, int64_t k, void* panel) {
  const int64_t nb = k / kQK_K;
  std::memset(panel, 0, static_cast<size_t>(nb * kKPanelBytesPerBlock));
  int8_t* qs = static_cast<int8_t*>(panel);
  float* dx = reinterpret_cast<float*>(qs + 8 * 512 * nb);
  for (int r = 0; r < nrows; ++r) {
    const BlockQ8_K* xb =
        reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(xq) + r * xq_stride);
    for (int64_t b = 0; b < nb; ++b) {
      for (int s = 0; s < 8; ++s) {
        std::memcpy(qs + ((b * 8 + s) * kRows + r) * 32, xb[b].qs + 32 * s, 32);
      }
      dx[b * kRows + r] = xb[b].d;
    }
  }
}

// Sub-block s's codes of an IQ4_XS group super-block as the signed values
// of a B tile's half (see Codes): row j < 4 the low nibbles of vector j,
// row 4 + j its high ones (elements 16 + 4j).
static inline void IQ4XSCodes(const uint8_t* gb, int s, uint8_t* u) {
  const __m256i table = x86::ByteTable16(kIQ4NLValues);
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m256i v =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kX8IQ4XSCodes + 128 * s + 32 * j));
    __m256i lo, hi;
    avx2::TableNibbles(table, v, &lo, &hi);
    _mm256_store_si256(reinterpret_cast<__m256i*>(u + 64 * j), lo);
    _mm256_store_si256(reinterpret_cast<__m256i*>(u + 64 * (4 + j)), hi);
  }
}

// The 16 weight rows' int8 scales of sub-block s (packed_x8.h: pair s / 2,
// row i's two bytes, this one at s % 2) as int32 lanes.
static inline __m512i IQ4XSScales(const uint8_t* g0, const uint8_t* g1, int s) {
  const int off = 16 + 16 * (s / 2);
  const __m128i p0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(g0 + off));
  const __m128i p1 =
      g1 != nullptr ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(g1 + off)) : p0;
  // int16 lanes: row i's pair; keep the low (s even) or high (odd) byte.
  const __m512i pairs = _mm512_cvtepi16_epi32(
      _mm256_inserti128_si256(_mm256_castsi128_si256(p0), p1, 1));
  return s % 2 == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pairs, 24), 24)
                    : _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 24);
}

// Two IQ4_XS x8 groups (as PairTile) against the first R rows of a Q8_K
// panel.
template <int R>
void PairTileIQ4XS(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr, const int8_t* qs,
                   int nc, float* y, size_t y_stride) {
  constexpr int kGB = kX8Rows * static_cast<int>(kX8IQ4XSBlockBytes);
  const int64_t nb = k / kQK_K, ns = 8 * nb;
  const float* dx = reinterpret_cast<const float*>(qs + 8 * 512 * nb);
  alignas(64) uint8_t u[kRing][512];
  alignas(64) int32_t sums[kRing][kRows * 16];
  if (g1 == nullptr) {
    for (int i = 0; i < kRing; ++i) {
      for (int j = 0; j < 8; ++j) std::memset(u[i] + 64 * j + 32, 0, 32);
    }
  }
  auto codes = [&](int64_t sb) {
    const int64_t b = sb / 8;
    const int s = static_cast<int>(sb % 8);
    uint8_t* us = u[sb % kRing];
    if (s == 0) avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(g0 + b * kGB);
    IQ4XSCodes(g0 + b * kGB, s, us);
    if (g1 != nullptr) {
      if (s == 0) avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(g1 + b * kGB);
      IQ4XSCodes(g1 + b * kGB, s, us + 32);
    }
  };
  auto dots = [&](int64_t sb) {
    if (sb % 2 == 0) {
      WEFT_AMX_BLOCK_DOTS_SS(0, 2, 4, qs + 512 * sb, u[sb % kRing], sums[sb % kRing]);
    } else {
      WEFT_AMX_BLOCK_DOTS_SS(1, 3, 5, qs + 512 * sb, u[sb % kRing], sums[sb % kRing]);
    }
  };
  // acc lives in L1 (t), isum in registers.
  alignas(64) float t[R][16] = {};
  __m512i isum[R];
#pragma GCC unroll 16
  for (int m = 0; m < R; ++m) isum[m] = _mm512_setzero_si512();
  for (int64_t sb = 0; sb < std::min<int64_t>(kCodesAhead, ns); ++sb) codes(sb);
  for (int64_t sb = 0; sb < std::min<int64_t>(kDotsAhead, ns); ++sb) dots(sb);
  for (int64_t sb = 0; sb < ns; ++sb) {
    if (sb + kCodesAhead < ns) codes(sb + kCodesAhead);
    if (sb + kDotsAhead < ns) dots(sb + kDotsAhead);
    const int64_t b = sb / 8;
    const int s = static_cast<int>(sb % 8);
    const __m512i sc =
        IQ4XSScales(g0 + b * kGB, g1 != nullptr ? g1 + b * kGB : nullptr, s);
    const int32_t* c = sums[sb % kRing];
#pragma GCC unroll 16
    for (int m = 0; m < R; ++m) {
      isum[m] = _mm512_add_epi32(isum[m],
                                 _mm512_mullo_epi32(_mm512_load_si512(c + 16 * m), sc));
    }
    if (s == 7) {
      const __m512 dw = Halves16(g0 + b * kGB, g1 != nullptr ? g1 + b * kGB : nullptr, 0);
#pragma GCC unroll 16
      for (int m = 0; m < R; ++m) {
        _mm512_store_ps(t[m], _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[m]),
                                              _mm512_mul_ps(dw, _mm512_set1_ps(dx[b * kRows + m])),
                                              _mm512_load_ps(t[m])));
        isum[m] = _mm512_setzero_si512();
      }
    }
  }
  for (int m = 0; m < nc; ++m) std::memcpy(y + m * y_stride, t[m], sizeof(float) * nr);
}

void PanelTileIQ4XS(int64_t k, const void* w, size_t w_stride, int nr, const void* panel,
                    size_t /*xq_stride*/, int nc, float* y, size_t y_stride) {
  ConfigureTiles();
  const uint8_t* g0 = static_cast<const uint8_t*>(w);
  const uint8_t* g1 = nr > kX8Rows ? g0 + kX8Rows * w_stride : nullptr;
  const int8_t* qs = static_cast<const int8_t*>(panel);
  if (nc <= 8) {
    PairTileIQ4XS<8>(k, g0, g1, nr, qs, nc, y, y_stride);
  } else {
    PairTileIQ4XS<16>(k, g0, g1, nr, qs, nc, y, y_stride);
  }
}

#undef WEFT_AMX_BLOCK_DOTS
#undef WEFT_AMX_BLOCK_DOTS_SS

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
    MatMulKernel& kern = t->matmul_x8[static_cast<int>(f)];
    kern.panel_min_m = kAmxMinM;
    kern.pack_panel = PackPanel;
    kern.panel_tile = PanelTile<decltype(fmt)::value>;
    kern.panel_rows = kRows;
    kern.panel_stride_rows = kPanelStrideRows;
    kern.panel_pairs = true;
  });
  MatMulKernel& iq4xs = t->matmul_x8[static_cast<int>(WeightFormat::kIQ4_XS)];
  iq4xs.pack_panel = PackPanelQ8K;
  iq4xs.panel_tile = PanelTileIQ4XS;
  iq4xs.panel_rows = kRows;
  iq4xs.panel_stride_rows = kKPanelStrideRows;
  iq4xs.panel_min_m = kAmxMinM;
  iq4xs.panel_pairs = true;
}

}  // namespace weft::kernels::amx
