// The AMX table's panel path for Q4_K and Q5_K against Q8_K activations
// (amx_panels.cc has the frame: two x8 groups against a panel of 16 rows
// per call). Compiled like amx_panels.cc.
//
// The VNNI tile (x8_vnni_impl.h, TileQ4K) sums, per super-block and
// weight row, isum = sum_s sc_s * dot_s over its 8 sub-blocks s (sc_s the
// 6-bit scale, dot_s the exact integer dot of the codes with the
// activations), then does the float steps of Q4KFinishBlock. Here the
// scale goes into the B tiles instead: with sc = 8 * hi + lo (hi, lo in
// 0 .. 7) every code times lo or hi still fits a byte (31 * 7 = 217), so
//   C_lo = sum_s dot(codes * lo_s, x),  C_hi = sum_s dot(codes * hi_s, x)
// run on the tile unit over a whole super-block, 64 elements (two
// sub-blocks) per TDPBSUD, and isum = 8 * C_hi + C_lo is the same integer
// (every step exact in int32: |C| <= 8 * 32 * 217 * 128). The mins'
// integer part (Q4KScaledMins' madds) and the float steps follow lane for
// lane, so every output is bitwise the VNNI tile's.
//
// The codes times the scales cost two vpmullw per 64 bytes (a word lane
// holds two codes of one weight row; each product < 256 stays in its
// byte). Above 16 activation rows a call makes them once for the group
// pair and every panel reads them (MatMulKernel::panel_all_rows); the tile
// unit's two products per chunk and panel then bound the kernel.
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
#include "tensor/blocks.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace weft::kernels::amx {
namespace {

// Panel layout (PackChunkPanel): per super-block and row the four int16
// pairs (asum of sub-blocks 2p, 2p + 1) Q4KScaledMins broadcasts, as
// pairs[nb][16][4] int32.
constexpr int kPairsBytes = 16;

// A row's pairs for its Q8_K block xb.
static inline void BsumPairs(const BlockQ8_K& xb, uint8_t* dst) {
  const int16_t* bs = xb.bsums;
  uint32_t pairs[4];
  for (int p = 0; p < 4; ++p) {
    const uint32_t lo = static_cast<uint16_t>(bs[4 * p] + bs[4 * p + 1]);
    const uint32_t hi = static_cast<uint16_t>(bs[4 * p + 2] + bs[4 * p + 3]);
    pairs[p] = lo | (hi << 16);
  }
  std::memcpy(dst, pairs, sizeof(pairs));
}

void PackPanel(const void* xq, size_t xq_stride, int nrows, int64_t k, void* panel) {
  PackChunkPanel<kPairsBytes>(xq, xq_stride, nrows, k, panel, BsumPairs);
}

// 16 weight rows' uint8 values at offset `off` of their group blocks (8 of
// each group) as int32 lanes.
static inline __m512i Bytes16(const uint8_t* g0, const uint8_t* g1, int off) {
  const __m128i b0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g0 + off));
  const __m128i b1 =
      g1 != nullptr ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(g1 + off)) : b0;
  return _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(b0, b1));
}

// Chunk c (64 elements) of a group pair's super-block (b0, b1: the groups'
// blocks; b1 null: the second group absent) as the B tiles blo and bhi (16
// rows x 64 bytes; row j < 8: elements 4j .. 4j + 3 of sub-block 2c, row
// 8 + j those of 2c + 1; weight row i's 4 codes at bytes 4i .. 4i + 3),
// the codes times their sub-block scale's low (blo) and high (bhi) three
// bits. u: 1024 bytes of scratch whose second group's halves are zero when
// b1 is null.
template <bool kQ5>
static inline void ScaledCodes(const uint8_t* b0, const uint8_t* b1, int c, uint8_t* u,
                               uint8_t* blo, uint8_t* bhi) {
  __m256i h_lo, h_hi;
  auto decode = [&](const uint8_t* gb, uint8_t* half) {
    avx2::Q45KChunkHigh<kQ5>(gb, c, &h_lo, &h_hi);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      __m256i lo, hi;
      avx2::Q45KCodes<kQ5>(gb, c, j, h_lo, h_hi, &lo, &hi);
      _mm256_store_si256(reinterpret_cast<__m256i*>(half + 64 * j), lo);
      _mm256_store_si256(reinterpret_cast<__m256i*>(half + 512 + 64 * j), hi);
    }
  };
  decode(b0, u);
  if (b1 != nullptr) decode(b1, u + 32);
  // Weight row i's scale in both words of int32 lane i: the words of its
  // 4 codes.
  auto words = [](__m512i s) { return _mm512_or_si512(s, _mm512_slli_epi32(s, 16)); };
  const __m512i seven = _mm512_set1_epi16(7);
  const __m512i sa = words(Bytes16(b0, b1, 32 + 16 * c));
  const __m512i sb = words(Bytes16(b0, b1, 40 + 16 * c));
  const __m512i lo[2] = {_mm512_and_si512(sa, seven), _mm512_and_si512(sb, seven)};
  const __m512i hi[2] = {_mm512_srli_epi16(sa, 3), _mm512_srli_epi16(sb, 3)};
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) {
    const __m512i v = _mm512_load_si512(u + 64 * j);
    _mm512_store_si512(blo + 64 * j, _mm512_mullo_epi16(v, lo[j / 8]));
    _mm512_store_si512(bhi + 64 * j, _mm512_mullo_epi16(v, hi[j / 8]));
  }
}

// Super-block b's steps after its dots (Q4KFinishBlock's, lane for lane, on
// 16 weight rows): isum = 8 * C_hi + C_lo (clo, chi: the stored C tiles),
// the mins' integer part from the rows' pairs, acc += isum * dw * dx and
// accm += msum * dm * dx (t, tm: acc, accm in L1).
template <int R>
static inline void Finish(const uint8_t* b0, const uint8_t* b1, const int32_t* clo,
                          const int32_t* chi, const int32_t* pairs, const float* dx,
                          float (*t)[16], float (*tm)[16]) {
  const __m512 dw = Halves16(b0, b1, 0), dm = Halves16(b0, b1, 16);
  __m512i mins[4];  // pair p's mins of the 16 rows, as int16 pairs
  for (int p = 0; p < 4; ++p) {
    const __m128i m0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 96 + 16 * p));
    const __m128i m1 =
        b1 != nullptr ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + 96 + 16 * p)) : m0;
    mins[p] = _mm512_cvtepu8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(m0), m1, 1));
  }
#pragma GCC unroll 16
  for (int m = 0; m < R; ++m) {
    const __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(chi + 16 * m), 3),
                                          _mm512_load_si512(clo + 16 * m));
    const int32_t* pr = pairs + m * 4;
    __m512i msum = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      msum = _mm512_add_epi32(msum, _mm512_madd_epi16(mins[p], _mm512_set1_epi32(pr[p])));
    }
    const __m512 vda = _mm512_set1_ps(dx[m]);
    _mm512_store_ps(t[m], _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, vda),
                                          _mm512_load_ps(t[m])));
    _mm512_store_ps(tm[m], _mm512_fmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dm, vda),
                                           _mm512_load_ps(tm[m])));
  }
}

// Chunk products on the kChunks64 tiles: A in tile A, the B tiles in tmm2
// (blo) and tmm3 (bhi), into the C pair CL, CH (literal numbers: GCC's
// tile intrinsics paste them into the instruction text).
#define WEFT_AMX_CHUNK_DOTS(A, CL, CH, a, blo, bhi) \
  do {                                              \
    _tile_loadd(A, (a), 64);                        \
    _tile_loadd(2, (blo), 64);                      \
    _tile_dpbsud(CL, A, 2);                         \
    _tile_loadd(3, (bhi), 64);                      \
    _tile_dpbsud(CH, A, 3);                         \
  } while (0)

// Chunk ch's products (a: its A tile; b: its blo | bhi): A tiles alternate
// by chunk, C pairs (tmm4, 5 / tmm6, 7) by super-block; the C pair is
// zeroed at a super-block's first chunk and stored to s (C_lo, then C_hi)
// at its last.
static inline void ChunkDots(int64_t ch, const int8_t* a, const uint8_t* b, int32_t* s) {
  const int c = static_cast<int>(ch % 4);
  if ((ch / 4) % 2 == 0) {
    if (c == 0) {
      _tile_zero(4);
      _tile_zero(5);
    }
    if (c % 2 == 0) {
      WEFT_AMX_CHUNK_DOTS(0, 4, 5, a, b, b + 1024);
    } else {
      WEFT_AMX_CHUNK_DOTS(1, 4, 5, a, b, b + 1024);
    }
    if (c == 3) {
      _tile_stored(4, s, 64);
      _tile_stored(5, s + kRows * 16, 64);
    }
  } else {
    if (c == 0) {
      _tile_zero(6);
      _tile_zero(7);
    }
    if (c % 2 == 0) {
      WEFT_AMX_CHUNK_DOTS(0, 6, 7, a, b, b + 1024);
    } else {
      WEFT_AMX_CHUNK_DOTS(1, 6, 7, a, b, b + 1024);
    }
    if (c == 3) {
      _tile_stored(6, s, 64);
      _tile_stored(7, s + kRows * 16, 64);
    }
  }
}

// Two Q4_K / Q5_K x8 groups (as PairTile) against the first R rows of a
// panel. pre: the pair's scaled codes for every chunk (2048 bytes a chunk:
// blo, bhi), or null to make them here.
template <bool kQ5, int R>
void PairTile(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr, const int8_t* qs, int nc,
              float* y, size_t y_stride, const uint8_t* pre) {
  constexpr int kGB = kX8Rows * static_cast<int>(kQ5 ? kX8Q5KBlockBytes : kX8Q4KBlockBytes);
  constexpr int kAheadC = 2;  // chunks the codes run ahead of the products
  const int64_t nb = k / kQK_K, nch = 4 * nb;
  const float* dx = reinterpret_cast<const float*>(qs + 4 * kChunkBytes * nb);
  const int32_t* pairs = reinterpret_cast<const int32_t*>(dx + kRows * nb);
  alignas(64) uint8_t u[1024];
  alignas(64) uint8_t bq[4][2048];             // a ring of chunks' blo | bhi
  alignas(64) int32_t sums[2][2][kRows * 16];  // per super-block parity: C_lo, C_hi
  auto gb_of = [&](const uint8_t* g, int64_t ch) { return g + (ch / 4) * kGB; };
  auto codes = [&](int64_t ch) {
    const bool first = ch % 4 == 0;
    if (first) avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(gb_of(g0, ch));
    if (first && g1 != nullptr) avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(gb_of(g1, ch));
    uint8_t* b = bq[ch % 4];
    ScaledCodes<kQ5>(gb_of(g0, ch), g1 != nullptr ? gb_of(g1, ch) : nullptr,
                     static_cast<int>(ch % 4), u, b, b + 1024);
  };
  if (pre == nullptr) {
    if (g1 == nullptr) {
      for (int j = 0; j < 16; ++j) std::memset(u + 64 * j + 32, 0, 32);
    }
    for (int64_t ch = 0; ch < std::min<int64_t>(kAheadC, nch); ++ch) codes(ch);
  }
  auto dots = [&](int64_t ch) {
    ChunkDots(ch, qs + kChunkBytes * ch, pre != nullptr ? pre + 2048 * ch : bq[ch % 4],
              sums[(ch / 4) % 2][0]);
  };
  alignas(64) float t[R][16] = {};
  alignas(64) float tm[R][16] = {};
  auto finish = [&](int64_t b) {
    const int32_t* s = sums[b % 2][0];
    Finish<R>(g0 + b * kGB, g1 != nullptr ? g1 + b * kGB : nullptr, s, s + kRows * 16,
              pairs + b * kRows * 4, dx + b * kRows, t, tm);
  };
  // Super-block b's float steps run while b + 1's products are on the tile
  // unit.
  for (int64_t ch = 0; ch < nch; ++ch) {
    if (pre == nullptr && ch + kAheadC < nch) codes(ch + kAheadC);
    dots(ch);
    if (ch % 4 == 3 && ch >= 4) finish(ch / 4 - 1);
  }
  finish(nb - 1);
  for (int m = 0; m < nc; ++m) {
    _mm512_store_ps(t[m], _mm512_sub_ps(_mm512_load_ps(t[m]), _mm512_load_ps(tm[m])));
    std::memcpy(y + m * y_stride, t[m], sizeof(float) * nr);
  }
}

// The pair's scaled codes for all chunks (blo | bhi, 2048 bytes each) in a
// thread-local buffer.
template <bool kQ5>
const uint8_t* ScaleAll(int64_t nb, const uint8_t* g0, const uint8_t* g1) {
  constexpr int kGB = kX8Rows * static_cast<int>(kQ5 ? kX8Q5KBlockBytes : kX8Q4KBlockBytes);
  thread_local std::vector<uint8_t> buf;
  uint8_t* out = Aligned64(&buf, static_cast<size_t>(4 * 2048 * nb));
  alignas(64) uint8_t u[1024] = {};
  for (int64_t ch = 0; ch < 4 * nb; ++ch) {
    const int64_t b = ch / 4;
    ScaledCodes<kQ5>(g0 + b * kGB, g1 != nullptr ? g1 + b * kGB : nullptr,
                     static_cast<int>(ch % 4), u, out + 2048 * ch, out + 2048 * ch + 1024);
  }
  return out;
}

// TileFn over two consecutive x8 groups against all M = nc activation rows
// (ChunkPanels).
template <bool kQ5>
void PanelTile(int64_t k, const void* w, size_t w_stride, int nr, const void* panel,
               size_t xq_stride, int nc, float* y, size_t y_stride) {
  ChunkPanels(
      w, w_stride, nr, panel, kChunkPanelStrideRows * xq_stride, nc, y, y_stride,
      [&](const uint8_t* g0, const uint8_t* g1) { return ScaleAll<kQ5>(k / kQK_K, g0, g1); },
      [&](auto rows, const uint8_t* g0, const uint8_t* g1, const int8_t* qs, int n, float* yc,
          const uint8_t* pre) {
        PairTile<kQ5, decltype(rows)::value>(k, g0, g1, nr, qs, n, yc, y_stride, pre);
      });
}

}  // namespace

void FillQ45KPanels(KernelTable* t) {
  for (WeightFormat f : {WeightFormat::kQ4_K, WeightFormat::kQ5_K}) {
    SetAmxPanels(&t->matmul_x8[static_cast<int>(f)], PackPanel,
                 f == WeightFormat::kQ5_K ? PanelTile<true> : PanelTile<false>,
                 kChunkPanelStrideRows, /*all_rows=*/true);
  }
}

}  // namespace weft::kernels::amx
