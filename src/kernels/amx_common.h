// Pieces the AMX panel files share (amx_panels.cc, amx_kquants.cc,
// amx_q45k.cc, amx_q6k.cc): the tile configuration, the panel shape and
// pipeline depths, the block product macro, the chunked K-quant panels'
// layout and frame, and the kernel entries' settings. Only for files
// compiled with -mamx-tile -mamx-int8 and the AVX-512 flags; static
// functions, constants and types only (the rule of kernel_table.h for
// headers ISA files include), plus the one thread_local below.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/kernel_table.h"
#include "tensor/blocks.h"

namespace weft::kernels::amx {

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

// The 64-byte tile configuration (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// The tile shapes a panel kernel runs with (palette 1; each thread loads
// the one its call needs when another is loaded):
// - kBlocks32: tmm0, tmm1: A (16 rows x 32 bytes); tmm2, tmm3: B (8 rows of
//   16 weight rows x 4 bytes); tmm4, tmm5: C (16 rows x 16 int32).
// - kChunks64: all eight 16 rows x 64 bytes (A over 64 elements, B of 16
//   rows, C).
enum class TileShapes { kBlocks32, kChunks64 };

// The TileShapes this thread has loaded (-1: none). One variable for every
// file that includes this header (defined in amx_panels.cc): a copy per
// file would let one file's tiles run on another's configuration.
extern thread_local int tls_tile_shapes;

static inline void ConfigureTiles(TileShapes shapes = TileShapes::kBlocks32) {
  int& loaded = tls_tile_shapes;
  if (loaded == static_cast<int>(shapes)) return;
  TileConfig c;
  if (shapes == TileShapes::kBlocks32) {
    c.colsb[0] = c.colsb[1] = 32;
    c.rows[0] = c.rows[1] = kRows;
    c.colsb[2] = c.colsb[3] = 64;
    c.rows[2] = c.rows[3] = 8;
    c.colsb[4] = c.colsb[5] = 64;
    c.rows[4] = c.rows[5] = kRows;
  } else {
    for (int i = 0; i < 8; ++i) {
      c.colsb[i] = 64;
      c.rows[i] = kRows;
    }
  }
  _tile_loadconfig(&c);
  loaded = static_cast<int>(shapes);
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

// The common part of the panel TileFns: configures this thread's tiles
// (`shapes`), finds the pair's groups (g1 null when nr <= 8: one group) and calls
// tile(rows, g0, g1, qs) with rows = std::integral_constant<int, 8 or 16>,
// the panel rows the call's float steps cover (nc <= rows).
template <typename Tile>
static inline void WithPanelRows(const void* w, size_t w_stride, int nr, const void* panel,
                                 int nc, Tile&& tile,
                                 TileShapes shapes = TileShapes::kBlocks32) {
  ConfigureTiles(shapes);
  const uint8_t* g0 = static_cast<const uint8_t*>(w);
  const uint8_t* g1 = nr > 8 ? g0 + 8 * w_stride : nullptr;
  const int8_t* qs = static_cast<const int8_t*>(panel);
  if (nc <= 8) {
    tile(std::integral_constant<int, 8>{}, g0, g1, qs);
  } else {
    tile(std::integral_constant<int, 16>{}, g0, g1, qs);
  }
}

// The chunked K-quant panels (amx_q45k.cc, amx_q6k.cc): 16 Q8_K rows of k
// elements (nb = k / 256 super-blocks) as
//   qs[4 nb][16][64] int8 | dx[nb][16] float | extra[nb][16][kExtraBytes]
// Chunk ch's A tile (64 elements, kChunks64) is qs[ch]: row r holds its 64
// activations of the chunk. extra(xb, dst) writes a row's kExtraBytes for
// its Q8_K block xb (the bsum pairs each format's offset or mins need).
constexpr int64_t kChunkBytes = kRows * 64;
// A chunked panel's bytes over the smallest Q8_K row stride (292 bytes a
// block); ChunkPanelBytesPerBlock checks each format's layout fits.
constexpr int kChunkPanelStrideRows = 16;
template <int kExtraBytes>
constexpr int64_t ChunkPanelBytesPerBlock() {
  constexpr int64_t bytes = 4 * kChunkBytes + 4 * kRows + kRows * kExtraBytes;
  static_assert(kChunkPanelStrideRows * 292 >= bytes);
  return bytes;
}

template <int kExtraBytes, typename Extra>
static inline void PackChunkPanel(const void* xq, size_t xq_stride, int nrows, int64_t k,
                                  void* panel, Extra&& extra) {
  const int64_t nb = k / kQK_K;
  if (nrows < kRows) {
    std::memset(panel, 0, static_cast<size_t>(nb * ChunkPanelBytesPerBlock<kExtraBytes>()));
  }
  int8_t* qs = static_cast<int8_t*>(panel);
  float* dx = reinterpret_cast<float*>(qs + 4 * kChunkBytes * nb);
  uint8_t* ex = reinterpret_cast<uint8_t*>(dx + kRows * nb);
  for (int r = 0; r < nrows; ++r) {
    const BlockQ8_K* xb =
        reinterpret_cast<const BlockQ8_K*>(static_cast<const char*>(xq) + r * xq_stride);
    for (int64_t b = 0; b < nb; ++b) {
      for (int c = 0; c < 4; ++c) {
        std::memcpy(qs + (b * 4 + c) * kChunkBytes + r * 64, xb[b].qs + 64 * c, 64);
      }
      dx[b * kRows + r] = xb[b].d;
      extra(xb[b], ex + (b * kRows + r) * kExtraBytes);
    }
  }
}

// n bytes at a 64-byte boundary of *buf (grown to fit): a call's
// thread-local scratch for a group pair's codes.
static inline uint8_t* Aligned64(std::vector<uint8_t>* buf, size_t n) {
  buf->resize(n + 64);
  return buf->data() + (64 - reinterpret_cast<uintptr_t>(buf->data()) % 64) % 64;
}

// The panel TileFn frame of the K-quant kernels on the kChunks64 tiles,
// against all M = nc activation rows (MatMulKernel::panel_all_rows; panels
// panel_bytes apart): codes_all(g0, g1) makes the group pair's B tiles for
// every chunk once when there are several panels, and pair(rows, g0, g1,
// qs, n, y_panel, pre) runs one panel of n rows (pre: those B tiles, or
// null for a lone panel, which makes its own as it goes).
template <typename CodesAll, typename Pair>
static inline void ChunkPanels(const void* w, size_t w_stride, int nr, const void* panel,
                               size_t panel_bytes, int nc, float* y, size_t y_stride,
                               CodesAll&& codes_all, Pair&& pair) {
  const uint8_t* pre = nullptr;
  if (nc > kRows) {
    const uint8_t* g0 = static_cast<const uint8_t*>(w);
    pre = codes_all(g0, nr > 8 ? g0 + 8 * w_stride : nullptr);
  }
  for (int c0 = 0; c0 < nc; c0 += kRows) {
    const int n = std::min(kRows, nc - c0);
    WithPanelRows(
        w, w_stride, nr, static_cast<const char*>(panel) + (c0 / kRows) * panel_bytes, n,
        [&](auto rows, const uint8_t* g0, const uint8_t* g1, const int8_t* qs) {
          pair(rows, g0, g1, qs, n, y + c0 * y_stride, pre);
        },
        TileShapes::kChunks64);
  }
}

// Installs an AMX panel kernel: two x8 groups a call, from kAmxMinM rows;
// all_rows: MatMulKernel::panel_all_rows (ChunkPanels' kernels take it).
static inline void SetAmxPanels(MatMulKernel* kern, PackPanelFn pack, TileFn tile,
                                int stride_rows, bool all_rows) {
  kern->pack_panel = pack;
  kern->panel_tile = tile;
  kern->panel_rows = kRows;
  kern->panel_stride_rows = stride_rows;
  kern->panel_min_m = kAmxMinM;
  kern->panel_pairs = true;
  kern->panel_all_rows = all_rows;
}

}  // namespace weft::kernels::amx
