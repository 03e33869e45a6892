// The AMX table's panel path for IQ4_XS against Q8_K activations (Q4_K
// and Q5_K: amx_q45k.cc; amx_panels.cc has the frame: two x8 groups
// against a panel of 16 rows per call, blocks in flight on the tile unit
// and the vector ports). Compiled like amx_panels.cc.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

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
  WithPanelRows(w, w_stride, nr, panel, nc, [&](auto rows, const uint8_t* g0, const uint8_t* g1,
                                                const int8_t* qs) {
    PairTileIQ4XS<decltype(rows)::value>(k, g0, g1, nr, qs, nc, y, y_stride);
  });
}

}  // namespace

void FillKQuantPanels(KernelTable* t) {
  SetAmxPanels(&t->matmul_x8[static_cast<int>(WeightFormat::kIQ4_XS)], PackPanelQ8K,
               PanelTileIQ4XS, kKPanelStrideRows, /*all_rows=*/false);
  FillQ45KPanels(t);  // amx_q45k.cc
  FillQ6KPanels(t);   // amx_q6k.cc
}

}  // namespace weft::kernels::amx
