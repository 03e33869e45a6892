// The AMX table's panel path for Q6_K and Q3_K (laid out as Q6_K where it
// can be, packed_x8.h) against Q8_K activations (amx_panels.cc has the
// frame: two x8 groups against a panel of 16 rows per call). Compiled like
// amx_panels.cc.
//
// The VNNI tile (x8_vnni_impl.h, TileQ6K) sums, per super-block and weight
// row, isum = sum_s sc_s * dot_s over 16 sub-blocks of 16 elements (sc_s
// the int8 scale, dot_s the exact dot of the unsigned codes with the
// activations), takes the codes' offset off through the bsums and does the
// float step of Q6KAccumulate. Here the scale goes into the B tiles: with
// sc + 128 = sum_d 4^d e_d (digits e_d in 0 .. 3) every code times a digit
// fits a byte (63 * 3 = 189), so per 64-element chunk five TDPBSUD (the raw
// codes and the four digits) accumulate over a super-block and
//   isum = ((4 C_3 + C_2) * 4 + C_1) * 4 + C_0 - 128 C_raw
// is the VNNI tile's integer (int32 arithmetic wraps alike, and the result
// is in range). The offset and the float step follow lane for lane, so
// every output is bitwise the VNNI tile's.
//
// The digits' products are one vpmullw per 64 bytes each (a word lane
// holds two codes of one weight row; each product < 256 stays in its
// byte). Above 16 activation rows a call makes them once for the group
// pair and every panel reads them (MatMulKernel::panel_all_rows).
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

// Panel layout (PackChunkPanel): per super-block and row the int16 pairs
// (bsum of sub-block 2p, of 2p + 1) Q6KScaledAsums broadcasts, as
// bpairs[nb][16][8] int32: the block's bsums as they are.
constexpr int kBsumsBytes = 32;
// B tiles a chunk makes: the raw codes, then times each digit.
constexpr int kTilesPerChunk = 5;
constexpr int64_t kChunkCodeBytes = kTilesPerChunk * 1024;

void PackPanel(const void* xq, size_t xq_stride, int nrows, int64_t k, void* panel) {
  PackChunkPanel<kBsumsBytes>(xq, xq_stride, nrows, k, panel,
                              [](const BlockQ8_K& xb, uint8_t* dst) {
                                std::memcpy(dst, xb.bsums, kBsumsBytes);
                              });
}

// The 16 weight rows' int16 scale pairs p (sub-blocks 2p, 2p + 1; int32
// lane i: row i's pair) of a group pair's super-block (b1 null: b0's again).
static inline __m512i ScalePairs16(const uint8_t* b0, const uint8_t* b1, int p) {
  const __m128i p0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + 16 + 16 * p));
  const __m128i p1 =
      b1 != nullptr ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + 16 + 16 * p)) : p0;
  return _mm512_cvtepi8_epi16(_mm256_inserti128_si256(_mm256_castsi128_si256(p0), p1, 1));
}

// Chunk c (sub-blocks 4c .. 4c + 3) of a group pair's super-block (b1
// null: the second group absent) as kTilesPerChunk B tiles of 16 rows x
// 64 bytes at out: row 4j + i holds elements 4i .. 4i + 3 of sub-block
// 4c + j, weight row r's 4 codes at bytes 4r .. 4r + 3; tile 0 the codes,
// tile 1 + d the codes times digit d of their scale + 128. The second
// group's halves of tile 0 must be zero when b1 is null.
template <bool kQ3>
static inline void DigitCodes(const uint8_t* b0, const uint8_t* b1, int c, uint8_t* out) {
  auto decode = [&](const uint8_t* gb, uint8_t* half) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const avx2::Q6KCodes q =
          kQ3 ? avx2::Q3KDecode(gb, 4 * c + j) : avx2::Q6KDecode(gb, 4 * c + j);
      _mm256_store_si256(reinterpret_cast<__m256i*>(half + 64 * (4 * j)), q.c0);
      _mm256_store_si256(reinterpret_cast<__m256i*>(half + 64 * (4 * j + 1)), q.c1);
      _mm256_store_si256(reinterpret_cast<__m256i*>(half + 64 * (4 * j + 2)), q.c2);
      _mm256_store_si256(reinterpret_cast<__m256i*>(half + 64 * (4 * j + 3)), q.c3);
    }
  };
  decode(b0, out);
  if (b1 != nullptr) decode(b1, out + 32);
  const __m512i three = _mm512_set1_epi16(3);
#pragma GCC unroll 2
  for (int jp = 0; jp < 2; ++jp) {
    // Sub-blocks 4c + 2jp (the pair's low words) and 4c + 2jp + 1 (high).
    const __m512i pairs = ScalePairs16(b0, b1, 2 * c + jp);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const int j = 2 * jp + h;
      // Row i's scale + 128 (its low byte with the sign bit flipped) in both
      // words of lane i: the words of its 4 codes.
      const __m512i sc = _mm512_xor_si512(
          h == 0 ? _mm512_and_si512(pairs, _mm512_set1_epi32(0xff))
                 : _mm512_and_si512(_mm512_srli_epi32(pairs, 16), _mm512_set1_epi32(0xff)),
          _mm512_set1_epi32(0x80));
      const __m512i words = _mm512_or_si512(sc, _mm512_slli_epi32(sc, 16));
      __m512i digit[4];
#pragma GCC unroll 4
      for (int d = 0; d < 4; ++d) {
        digit[d] = _mm512_and_si512(_mm512_srli_epi16(words, 2 * d), three);
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const int row = 4 * j + i;
        const __m512i v = _mm512_load_si512(out + 64 * row);
#pragma GCC unroll 4
        for (int d = 0; d < 4; ++d) {
          _mm512_store_si512(out + 1024 * (1 + d) + 64 * row, _mm512_mullo_epi16(v, digit[d]));
        }
      }
    }
  }
}

// Chunk ch's five products (a: its A tile in tmm0; b: its B tiles, loaded
// into tmm1 and tmm2 in turn) into C tiles tmm3 (raw) .. tmm7 (digit 3),
// zeroed at a super-block's first chunk and stored to s ([5][16][16]) at
// its last.
static inline void ChunkDots(int c, const int8_t* a, const uint8_t* b, int32_t* s) {
  if (c == 0) {
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
  }
  _tile_loadd(0, a, 64);
  _tile_loadd(1, b, 64);
  _tile_dpbsud(3, 0, 1);
  _tile_loadd(2, b + 1024, 64);
  _tile_dpbsud(4, 0, 2);
  _tile_loadd(1, b + 2048, 64);
  _tile_dpbsud(5, 0, 1);
  _tile_loadd(2, b + 3072, 64);
  _tile_dpbsud(6, 0, 2);
  _tile_loadd(1, b + 4096, 64);
  _tile_dpbsud(7, 0, 1);
  if (c == 3) {
    _tile_stored(3, s, 64);
    _tile_stored(4, s + 256, 64);
    _tile_stored(5, s + 512, 64);
    _tile_stored(6, s + 768, 64);
    _tile_stored(7, s + 1024, 64);
  }
}

// Super-block b's steps after its products (Q6KAccumulate's, lane for
// lane, on 16 weight rows; s: the stored C tiles): isum from the digits,
// the offset through the bsum pairs, acc += total * dw * dx (t in L1).
template <int R, int kShift>
static inline void Finish(const uint8_t* b0, const uint8_t* b1, const int32_t* s,
                          const int32_t* bpairs, const float* dx, float (*t)[16]) {
  const __m512 dw = Halves16(b0, b1, 0);
  __m512i pairs[8];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) pairs[p] = ScalePairs16(b0, b1, p);
#pragma GCC unroll 16
  for (int m = 0; m < R; ++m) {
    auto c = [&](int i) { return _mm512_load_si512(s + 256 * i + 16 * m); };
    __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(c(4), 2), c(3));
    isum = _mm512_add_epi32(_mm512_slli_epi32(isum, 2), c(2));
    isum = _mm512_add_epi32(_mm512_slli_epi32(isum, 2), c(1));
    isum = _mm512_sub_epi32(isum, _mm512_slli_epi32(c(0), 7));
    const int32_t* bp = bpairs + m * 8;
    __m512i msum = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) {
      msum = _mm512_add_epi32(msum, _mm512_madd_epi16(pairs[p], _mm512_set1_epi32(bp[p])));
    }
    const __m512i total = _mm512_sub_epi32(isum, _mm512_slli_epi32(msum, kShift));
    _mm512_store_ps(t[m], _mm512_fmadd_ps(_mm512_cvtepi32_ps(total),
                                          _mm512_mul_ps(dw, _mm512_set1_ps(dx[m])),
                                          _mm512_load_ps(t[m])));
  }
}

template <bool kQ3>
constexpr int kGroupBytes =
    kX8Rows * static_cast<int>(kQ3 ? kX8Q3KBlockBytes : sizeof(BlockQ6_K));

// Two Q6_K / Q3_K x8 groups (as PairTile) against the first R rows of a
// panel. pre: the pair's B tiles for every chunk (kChunkCodeBytes a
// chunk), or null to make them here.
template <bool kQ3, int R>
void PairTile(int64_t k, const uint8_t* g0, const uint8_t* g1, int nr, const int8_t* qs, int nc,
              float* y, size_t y_stride, const uint8_t* pre) {
  constexpr int kGB = kGroupBytes<kQ3>;
  constexpr int kAheadC = 2;  // chunks the codes run ahead of the products
  const int64_t nb = k / kQK_K, nch = 4 * nb;
  const float* dx = reinterpret_cast<const float*>(qs + 4 * kChunkBytes * nb);
  const int32_t* bpairs = reinterpret_cast<const int32_t*>(dx + kRows * nb);
  alignas(64) uint8_t bq[4][kChunkCodeBytes];     // a ring of chunks' B tiles
  alignas(64) int32_t sums[kTilesPerChunk][256];  // the stored C tiles
  auto codes = [&](int64_t ch) {
    const uint8_t* b0 = g0 + (ch / 4) * kGB;
    const uint8_t* b1 = g1 != nullptr ? g1 + (ch / 4) * kGB : nullptr;
    if (ch % 4 == 0) avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(b0);
    if (ch % 4 == 0 && b1 != nullptr) avx2::PrefetchAhead<kGB, x8_vnni::kTileAhead>(b1);
    DigitCodes<kQ3>(b0, b1, static_cast<int>(ch % 4), bq[ch % 4]);
  };
  if (pre == nullptr) {
    if (g1 == nullptr) {
      for (int i = 0; i < 4; ++i) {
        for (int r = 0; r < 16; ++r) std::memset(bq[i] + 64 * r + 32, 0, 32);
      }
    }
    for (int64_t ch = 0; ch < std::min<int64_t>(kAheadC, nch); ++ch) codes(ch);
  }
  alignas(64) float t[R][16] = {};
  auto finish = [&](int64_t b) {
    Finish<R, kQ3 ? 2 : 5>(g0 + b * kGB, g1 != nullptr ? g1 + b * kGB : nullptr, sums[0],
                           bpairs + b * kRows * 8, dx + b * kRows, t);
  };
  // Super-block b's float steps run after b + 1's first products are on
  // the tile unit (its C tiles are stored at its last chunk, after them).
  for (int64_t ch = 0; ch < nch; ++ch) {
    if (pre == nullptr && ch + kAheadC < nch) codes(ch + kAheadC);
    ChunkDots(static_cast<int>(ch % 4), qs + kChunkBytes * ch,
              pre != nullptr ? pre + kChunkCodeBytes * ch : bq[ch % 4], sums[0]);
    if (ch % 4 == 0 && ch >= 4) finish(ch / 4 - 1);
  }
  finish(nb - 1);
  for (int m = 0; m < nc; ++m) std::memcpy(y + m * y_stride, t[m], sizeof(float) * nr);
}

// The pair's B tiles for all chunks in a thread-local buffer.
template <bool kQ3>
const uint8_t* CodesAll(int64_t nb, const uint8_t* g0, const uint8_t* g1) {
  constexpr int kGB = kGroupBytes<kQ3>;
  thread_local std::vector<uint8_t> buf;
  uint8_t* out = Aligned64(&buf, static_cast<size_t>(4 * kChunkCodeBytes * nb));
  for (int64_t ch = 0; ch < 4 * nb; ++ch) {
    uint8_t* o = out + kChunkCodeBytes * ch;
    if (g1 == nullptr) {
      for (int r = 0; r < 16; ++r) std::memset(o + 64 * r + 32, 0, 32);
    }
    DigitCodes<kQ3>(g0 + (ch / 4) * kGB, g1 != nullptr ? g1 + (ch / 4) * kGB : nullptr,
                    static_cast<int>(ch % 4), o);
  }
  return out;
}

// TileFn over two consecutive x8 groups against all M = nc activation rows
// (ChunkPanels).
template <bool kQ3>
void PanelTile(int64_t k, const void* w, size_t w_stride, int nr, const void* panel,
               size_t xq_stride, int nc, float* y, size_t y_stride) {
  ChunkPanels(
      w, w_stride, nr, panel, kChunkPanelStrideRows * xq_stride, nc, y, y_stride,
      [&](const uint8_t* g0, const uint8_t* g1) { return CodesAll<kQ3>(k / kQK_K, g0, g1); },
      [&](auto rows, const uint8_t* g0, const uint8_t* g1, const int8_t* qs, int n, float* yc,
          const uint8_t* pre) {
        PairTile<kQ3, decltype(rows)::value>(k, g0, g1, nr, qs, n, yc, y_stride, pre);
      });
}

}  // namespace

void FillQ6KPanels(KernelTable* t) {
  for (WeightFormat f : {WeightFormat::kQ6_K, WeightFormat::kQ3_K}) {
    SetAmxPanels(&t->matmul_x8[static_cast<int>(f)], PackPanel,
                 f == WeightFormat::kQ3_K ? PanelTile<true> : PanelTile<false>,
                 kChunkPanelStrideRows, /*all_rows=*/true);
  }
}

}  // namespace weft::kernels::amx
