// AVX2 register-tiled matmul micro-kernels for the 32-element legacy formats
// (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) and IQ4_NL against int8 activations: RW weight rows x RC
// activation rows per call (RW <= kMaxTileRows, RC <= kMaxTileCols), one
// float accumulator per (row, column) pair, each weight block unpacked once
// per call for all RC rows and each activation block loaded once for all RW.
//
// Per block b of 32 elements and pair (r, c):
//   acc[r][c] += float(sum_i u[r][i] * a[c][i]) * (dw[r][b] * da[c][b])
// where u are the weight's unsigned codes (Q4_0/1, Q5_0/1, PairTile: two
// blocks per step, see there) or |w| with the activation's sign flipped by w
// (Q8_0, LegacyTile). The unsigned codes carry an offset (w = dw * (u -
// offset)) or a block minimum (Q4_1, Q5_1: w = dw * u + m), added once at
// the end with the activation block sums: kCorr * sum_b cw[r][b] *
// ds[c][b], where cw = dw and kCorr = -offset, or cw = m and kCorr = 1.
// LegacyTile stages the scale products of 64 blocks in a small buffer first (vector multiplies), so its inner
// loop is sign, maddubs, madd, cvt and one FMA with a broadcast scale per
// pair and block; PairTile expands the scales once per row and column and
// multiplies them in the loop (see there).
//
// Bitwise contract: every pair's result is computed by the same sequence of
// float operations whatever RW, RC and the pair's place in the tile are
// (blocks in order into one accumulator, the offset sum in fixed groups of
// 8 blocks), so a row's output never depends on which rows share the call.
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/avx2_internal.h"
#include "kernels/simd_x86.h"
#include "tensor/blocks.h"

namespace weft::kernels::avx2 {
namespace {

using x86::Fp16;
using x86::HsumPs;

struct TQ8_0 {
  using Block = BlockQ8_0;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = true;
  static __m256i Unpack(const Block& b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  }
};

// IQ4_NL: the codes looked up in the format's table (signed int8 weights).
struct TIQ4_NL {
  using Block = BlockIQ4_NL;
  static constexpr int kOffset = 0;
  static constexpr bool kSigned = true;
  static __m256i Unpack(const Block& b) {
    return x86::NonlinearCodesToBytes(b.qs, x86::ByteTable16(kIQ4NLValues));
  }
};

// Blocks whose scale products are staged at once (a multiple of 8).
constexpr int kChunk = 64;

// Software prefetch distance in weight rows: TR, the kernel's tile height
// (MatMulKernel::tile_rows). A tile reads TR rows side by side, so the
// hardware streamer sees short interleaved streams and only the last row
// continues into the next tile. Each tile therefore prefetches the bytes it
// reads at the same place of the next tile's rows (MatMul walks weight rows
// in tiles of tile_rows). Measured on the 1B Q4_0 model, 1 thread: tg
// -10..15% ms/token (decode is memory bound at M = 1). A prefetch never
// faults, so running past the matrix is harmless.

// Prefetches the line `ahead` bytes past p (integer arithmetic: the address
// may lie outside the matrix, where a pointer may not point).
static inline void Prefetch(const void* p, size_t ahead) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + ahead),
               _MM_HINT_T0);
}

// out[j] = float(blocks[j].d) for j < n (kMins: blocks[j].m).
template <typename Block, bool kMins = false>
static inline void LoadScales(const Block* blocks, int n, float* out) {
  const auto half = [](const Block& b) {
    if constexpr (kMins) {
      return b.m;
    } else {
      return b.d;
    }
  };
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const Block* p = blocks + j;
    __m128i h = _mm_cvtsi32_si128(half(p[0]));
    h = _mm_insert_epi16(h, half(p[1]), 1);
    h = _mm_insert_epi16(h, half(p[2]), 2);
    h = _mm_insert_epi16(h, half(p[3]), 3);
    h = _mm_insert_epi16(h, half(p[4]), 4);
    h = _mm_insert_epi16(h, half(p[5]), 5);
    h = _mm_insert_epi16(h, half(p[6]), 6);
    h = _mm_insert_epi16(h, half(p[7]), 7);
    _mm256_storeu_ps(out + j, _mm256_cvtph_ps(h));
  }
  for (; j < n; ++j) out[j] = Fp16(half(blocks[j]));
}

template <typename F, int RW, int RC, int TR>
void LegacyTile(int64_t k, const void* w, size_t w_stride, const void* xq,
                size_t xq_stride, float* y, size_t y_stride) {
  using Block = typename F::Block;
  const int64_t nb = k / 32;
  const Block* wb[RW];
#pragma GCC unroll 4
  for (int r = 0; r < RW; ++r) {
    wb[r] = reinterpret_cast<const Block*>(static_cast<const char*>(w) + r * w_stride);
  }
  const size_t ahead = TR * w_stride;
  Q8x32Row x[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) x[c] = Q8x32RowAt(xq, xq_stride, c, k);
  __m256 acc[RW][RC];
  __m256 corr[RW][RC];
  float corr_tail[RW][RC];
#pragma GCC unroll 4
  for (int r = 0; r < RW; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      acc[r][c] = corr[r][c] = _mm256_setzero_ps();
      corr_tail[r][c] = 0.0f;
    }
  }
  alignas(32) float dws[RW][kChunk];
  alignas(32) float sc[RW][RC][kChunk];
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(kChunk, nb - b0));
    const int n8 = n & ~7;
    // Weight scales, then every pair's per-block scale product.
#pragma GCC unroll 4
    for (int r = 0; r < RW; ++r) {
      LoadScales(wb[r] + b0, n, dws[r]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < RW; ++r) {
#pragma GCC unroll 4
      for (int c = 0; c < RC; ++c) {
        for (int j = 0; j < n8; j += 8) {
          const __m256 vw = _mm256_load_ps(dws[r] + j);
          _mm256_store_ps(sc[r][c] + j, _mm256_mul_ps(vw, _mm256_loadu_ps(x[c].d + b0 + j)));
          if constexpr (F::kOffset != 0) {
            corr[r][c] = _mm256_fmadd_ps(vw, _mm256_loadu_ps(x[c].ds + b0 + j), corr[r][c]);
          }
        }
        for (int j = n8; j < n; ++j) {
          sc[r][c][j] = dws[r][j] * x[c].d[b0 + j];
          if constexpr (F::kOffset != 0) corr_tail[r][c] += dws[r][j] * x[c].ds[b0 + j];
        }
      }
    }
    for (int j = 0; j < n; ++j) {
      const int64_t b = b0 + j;
      __m256i a[RC];
#pragma GCC unroll 4
      for (int c = 0; c < RC; ++c) {
        a[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[c].qs + 32 * b));
      }
#pragma GCC unroll 4
      for (int r = 0; r < RW; ++r) {
        // The same place in the next tile's rows (see the prefetch note).
        Prefetch(wb[r] + b, ahead);
        const __m256i q = F::Unpack(wb[r][b]);
        const __m256i u = F::kSigned ? _mm256_sign_epi8(q, q) : q;
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) {
          const __m256i av = F::kSigned ? _mm256_sign_epi8(a[c], q) : a[c];
          const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, av), ones);
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),
                                      _mm256_broadcast_ss(&sc[r][c][j]), acc[r][c]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < RW; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      float v = HsumPs(acc[r][c]);
      if constexpr (F::kOffset != 0) {
        v -= static_cast<float>(F::kOffset) * (HsumPs(corr[r][c]) + corr_tail[r][c]);
      }
      y[c * y_stride + r] = v;
    }
  }
}

// Q4_0 / Q5_0 against kQ8x32Pairs activations, two blocks per step: one
// 256-bit load holds the nibbles of blocks b and b+1, so the low nibbles are
// elements 0..15 of both and the high nibbles 16..31 of both, which is the
// activations' pair order. Lanes 0-3 of an accumulator sum the even blocks,
// lanes 4-7 the odd ones; sc holds each block's scale product 4 times so a
// pair's scales are one vector. The two maddubs halves add in int16
// (|sum| <= 4 * 31 * 127).
// The nibble formats in pair order: lo = elements 0..15 of blocks b and b+1
// (as unsigned codes), hi = elements 16..31; b1 null: a zero block.
struct PQ4_0 {
  using Block = BlockQ4_0;
  static constexpr bool kMins = false;
  static constexpr float kCorr = -8.0f;
  static inline void Unpack(const Block* b0, const Block* b1, __m256i* lo, __m256i* hi) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b0->qs));
    const __m128i q1 = b1 == nullptr ? _mm_setzero_si128()
                                     : _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1->qs));
    const __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
    *lo = _mm256_and_si256(v, low4);
    *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
  }
};
// The fifth bits of blocks b0 and b1 (qh) into lo and hi, in pair order.
static inline void AddHighBits(const uint8_t* qh0, const uint8_t* qh1, __m256i* lo,
                               __m256i* hi) {
  uint32_t h0, h1 = 0;
  std::memcpy(&h0, qh0, 4);
  if (qh1 != nullptr) std::memcpy(&h1, qh1, 4);
  const uint32_t hl = (h0 & 0xffffu) | (h1 << 16);
  const uint32_t hh = (h0 >> 16) | (h1 & 0xffff0000u);
  const __m256i bit = _mm256_set1_epi8(0x10);
  const __m256i bl = x86::BitsToBytes(reinterpret_cast<const uint8_t*>(&hl));
  const __m256i bh = x86::BitsToBytes(reinterpret_cast<const uint8_t*>(&hh));
  *lo = _mm256_or_si256(*lo, _mm256_and_si256(bl, bit));
  *hi = _mm256_or_si256(*hi, _mm256_and_si256(bh, bit));
}
// A block's nibbles seen as a BlockQ4_0 (whose qs start 2 bytes in), for
// PQ4_0::Unpack, which reads only qs; null stays null.
template <typename Block>
static inline const BlockQ4_0* AsQ4_0(const Block* b) {
  return b == nullptr ? nullptr : reinterpret_cast<const BlockQ4_0*>(b->qs - 2);
}
struct PQ4_1 {
  using Block = BlockQ4_1;
  static constexpr bool kMins = true;
  static constexpr float kCorr = 1.0f;
  static inline void Unpack(const Block* b0, const Block* b1, __m256i* lo, __m256i* hi) {
    PQ4_0::Unpack(AsQ4_0(b0), AsQ4_0(b1), lo, hi);
  }
};
struct PQ5_1 {
  using Block = BlockQ5_1;
  static constexpr bool kMins = true;
  static constexpr float kCorr = 1.0f;
  static inline void Unpack(const Block* b0, const Block* b1, __m256i* lo, __m256i* hi) {
    PQ4_0::Unpack(AsQ4_0(b0), AsQ4_0(b1), lo, hi);
    AddHighBits(b0->qh, b1 == nullptr ? nullptr : b1->qh, lo, hi);
  }
};
struct PQ5_0 {
  using Block = BlockQ5_0;
  static constexpr bool kMins = false;
  static constexpr float kCorr = -16.0f;
  static inline void Unpack(const Block* b0, const Block* b1, __m256i* lo, __m256i* hi) {
    PQ4_0::Unpack(AsQ4_0(b0), AsQ4_0(b1), lo, hi);
    AddHighBits(b0->qh, b1 == nullptr ? nullptr : b1->qh, lo, hi);
  }
};
// dst[4 j .. 4 j + 3] = src[j] for j < n (each scale 4 times: a pair of
// blocks' scales as one vector in the pair kernels' lane order), then 4
// zeros when n is odd (the padded block).
static inline void Expand4(const float* src, int n, float* dst) {
  const int n8 = n & ~7;
  for (int j = 0; j < n8; j += 8) {
    const __m256 v = _mm256_loadu_ps(src + j);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      const __m256i idx = _mm256_setr_epi32(2 * q, 2 * q, 2 * q, 2 * q, 2 * q + 1, 2 * q + 1,
                                            2 * q + 1, 2 * q + 1);
      _mm256_store_ps(dst + 4 * j + 8 * q, _mm256_permutevar8x32_ps(v, idx));
    }
  }
  for (int j = n8; j < n; ++j) {
    for (int q = 0; q < 4; ++q) dst[4 * j + q] = src[j];
  }
  if (n % 2 != 0) {
    for (int q = 0; q < 4; ++q) dst[4 * n + q] = 0.0f;
  }
}

// The scales of a chunk are expanded once per weight row (shared by the RC
// columns) and once per activation row (shared by the RW rows); the pair's
// scale product is one multiply in the inner loop (the same float product
// dw * da as a staged buffer would hold, so results are unchanged bit for
// bit, without RW * RC staging passes per chunk).
template <typename F, int RW, int RC, int TR>
void PairTile(int64_t k, const void* w, size_t w_stride, const void* xq,
              size_t xq_stride, float* y, size_t y_stride) {
  const int64_t nb = k / 32;
  const int64_t np = (nb + 1) / 2;
  using Block = typename F::Block;
  const Block* wb[RW];
#pragma GCC unroll 4
  for (int r = 0; r < RW; ++r) {
    wb[r] = reinterpret_cast<const Block*>(static_cast<const char*>(w) + r * w_stride);
  }
  const size_t ahead = TR * w_stride;
  const int8_t* aq[RC];
  const float* ad[RC];
  const float* ads[RC];
#pragma GCC unroll 4
  for (int c = 0; c < RC; ++c) {
    aq[c] = reinterpret_cast<const int8_t*>(static_cast<const char*>(xq) + c * xq_stride);
    ad[c] = reinterpret_cast<const float*>(aq[c] + np * 64);
    ads[c] = ad[c] + nb;
  }
  __m256 acc[RW][RC];
  __m256 corr[RW][RC];
  float corr_tail[RW][RC];
#pragma GCC unroll 4
  for (int r = 0; r < RW; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      acc[r][c] = corr[r][c] = _mm256_setzero_ps();
      corr_tail[r][c] = 0.0f;
    }
  }
  alignas(32) float dws[RW][kChunk];
  alignas(32) float mws[F::kMins ? RW : 1][kChunk];  // block minimums
  alignas(32) float dwx[RW][4 * kChunk + 8];
  alignas(32) float dax[RC][4 * kChunk + 8];
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(kChunk, nb - b0));
    const int n8 = n & ~7;
    for (int r = 0; r < RW; ++r) {
      LoadScales(wb[r] + b0, n, dws[r]);
      Expand4(dws[r], n, dwx[r]);
      if constexpr (F::kMins) LoadScales<Block, true>(wb[r] + b0, n, mws[r]);
    }
    for (int c = 0; c < RC; ++c) Expand4(ad[c] + b0, n, dax[c]);
    for (int r = 0; r < RW; ++r) {
      const float* cw = dws[r];  // the correction's per-block weights
      if constexpr (F::kMins) cw = mws[r];
      for (int c = 0; c < RC; ++c) {
        for (int j = 0; j < n8; j += 8) {
          corr[r][c] = _mm256_fmadd_ps(_mm256_load_ps(cw + j),
                                       _mm256_loadu_ps(ads[c] + b0 + j), corr[r][c]);
        }
        for (int j = n8; j < n; ++j) corr_tail[r][c] += cw[j] * ads[c][b0 + j];
      }
    }
    for (int j = 0; j < n; j += 2) {
      const int64_t b = b0 + j;
      const bool lone = j + 1 == n;  // the odd last block, padded with zeros
#pragma GCC unroll 4
      for (int r = 0; r < RW; ++r) {
        // The same place in the next tile's rows (see the prefetch note).
        Prefetch(wb[r] + b, ahead);
        __m256i lo, hi;
        F::Unpack(wb[r] + b, lone ? nullptr : wb[r] + b + 1, &lo, &hi);
        const __m256 vdw = _mm256_load_ps(dwx[r] + 4 * j);
#pragma GCC unroll 4
        for (int c = 0; c < RC; ++c) {
          const int8_t* a = aq[c] + 32 * b;
          const __m256i p16 = _mm256_add_epi16(
              _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))),
              _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 32))));
          const __m256 p = _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, ones));
          const __m256 s = _mm256_mul_ps(vdw, _mm256_load_ps(dax[c] + 4 * j));
          acc[r][c] = _mm256_fmadd_ps(p, s, acc[r][c]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < RW; ++r) {
#pragma GCC unroll 4
    for (int c = 0; c < RC; ++c) {
      const float corr_sum = HsumPs(corr[r][c]) + corr_tail[r][c];
      y[c * y_stride + r] = HsumPs(acc[r][c]) + F::kCorr * corr_sum;
    }
  }
}

// kQ8x32Pairs: the bytes of QuantizeQ8x32 (same d, same int8 values) in
// pair order.
void QuantizeQ8x32Pairs(const float* x, void* xq, int64_t k) {
  const int64_t nb = k / 32;
  const int64_t np = (nb + 1) / 2;
  int8_t* qs = static_cast<int8_t*>(xq);
  float* d = reinterpret_cast<float*>(qs + np * 64);
  float* ds = d + nb;
  alignas(32) int8_t tmp[64];
  for (int64_t p = 0; p < np; ++p) {
    for (int64_t b = 2 * p; b < 2 * p + 2; ++b) {
      int8_t* t = tmp + 32 * (b - 2 * p);
      if (b >= nb) {
        std::memset(t, 0, 32);
        continue;
      }
      int sum;
      d[b] = x86::QuantizeQ8Group(x + 32 * b, 1, t, &sum);
      ds[b] = d[b] * static_cast<float>(sum);
    }
    const __m256i v0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp));
    const __m256i v1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(tmp + 32));
    __m256i* out = reinterpret_cast<__m256i*>(qs + 64 * p);
    _mm256_storeu_si256(out, _mm256_permute2x128_si256(v0, v1, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(v0, v1, 0x31));
  }
}

using Tile = void (*)(int64_t, const void*, size_t, const void*, size_t, float*, size_t);

// Every (rows, cols) instance of a TR x TC tile kernel, index (nr-1)*TC + nc-1.
template <template <typename, int, int, int> class K, typename F, int TR, int TC, int... I>
constexpr std::array<Tile, TR * TC> MakeTiles(std::integer_sequence<int, I...>) {
  return {&K<F, I / TC + 1, I % TC + 1, TR>::Run...};
}

template <typename F, int RW, int RC, int TR>
struct LegacyK {
  static void Run(int64_t k, const void* w, size_t ws, const void* xq, size_t xs, float* y,
                  size_t ys) {
    LegacyTile<F, RW, RC, TR>(k, w, ws, xq, xs, y, ys);
  }
};
template <typename F, int RW, int RC, int TR>
struct PairK {
  static void Run(int64_t k, const void* w, size_t ws, const void* xq, size_t xs, float* y,
                  size_t ys) {
    PairTile<F, RW, RC, TR>(k, w, ws, xq, xs, y, ys);
  }
};

// The TileFn of a TR x TC kernel family.
template <template <typename, int, int, int> class K, typename F, int TR, int TC>
void TileN(int64_t k, const void* w, size_t w_stride, int nr, const void* xq, size_t xq_stride,
           int nc, float* y, size_t y_stride) {
  static_assert(TR <= kMaxTileRows && TC <= kMaxTileCols);
  static constexpr std::array<Tile, TR * TC> kTable =
      MakeTiles<K, F, TR, TC>(std::make_integer_sequence<int, TR * TC>());
  kTable[(nr - 1) * TC + nc - 1](k, w, w_stride, xq, xq_stride, y, y_stride);
}

// Tile shapes (weight rows x activation rows). 4 x 3 measured fastest for
// both families on Zen 3 (1 thread, bench/kernels: 4 x 2, 2 x 4 and 3 x 3
// were 5-20% slower at M = 8..64) although GCC keeps some of the 12
// accumulators on the stack; prefill and batched decode are the cases that
// care (M = 1 is memory bound).
constexpr int kQ8Rows = 4, kQ8Cols = 3;
constexpr int kPairRows = 4, kPairCols = 3;

}  // namespace

void FillLegacyTiles(KernelTable* t) {
  // Q4_0, Q4_1, Q5_0 and Q5_1 read their activations in pair order (no dot
  // kernel).
  t->matmul[static_cast<int>(WeightFormat::kQ4_0)] =
      MatMulKernel{ActFormat::kQ8x32Pairs, QuantizeQ8x32Pairs, nullptr,
                   TileN<PairK, PQ4_0, kPairRows, kPairCols>, kPairRows, kPairCols};
  t->matmul[static_cast<int>(WeightFormat::kQ5_0)] =
      MatMulKernel{ActFormat::kQ8x32Pairs, QuantizeQ8x32Pairs, nullptr,
                   TileN<PairK, PQ5_0, kPairRows, kPairCols>, kPairRows, kPairCols};
  t->matmul[static_cast<int>(WeightFormat::kQ4_1)] =
      MatMulKernel{ActFormat::kQ8x32Pairs, QuantizeQ8x32Pairs, nullptr,
                   TileN<PairK, PQ4_1, kPairRows, kPairCols>, kPairRows, kPairCols};
  t->matmul[static_cast<int>(WeightFormat::kQ5_1)] =
      MatMulKernel{ActFormat::kQ8x32Pairs, QuantizeQ8x32Pairs, nullptr,
                   TileN<PairK, PQ5_1, kPairRows, kPairCols>, kPairRows, kPairCols};
  MatMulKernel& q8 = t->matmul[static_cast<int>(WeightFormat::kQ8_0)];
  q8.tile = TileN<LegacyK, TQ8_0, kQ8Rows, kQ8Cols>;
  q8.tile_rows = kQ8Rows;
  q8.tile_cols = kQ8Cols;
  MatMulKernel& iq4 = t->matmul[static_cast<int>(WeightFormat::kIQ4_NL)];
  iq4.tile = TileN<LegacyK, TIQ4_NL, kQ8Rows, kQ8Cols>;
  iq4.tile_rows = kQ8Rows;
  iq4.tile_cols = kQ8Cols;
}

}  // namespace weft::kernels::avx2
