// Fill functions of the x8-layout kernels (packed_x8.h), and the facts about
// the layout every ISA's tiles share. Plain declarations, constants and
// `static` helpers only (kernel_table.h's rule for headers that ISA files
// include); the AVX2 Fill may only be called on CPUs with AVX2 (isa.cc).
#pragma once

#include <type_traits>

#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "tensor/blocks.h"

namespace weft::kernels {

// The 32-element formats of the x8 layout, as the tiles' template argument.
// IQ4_NL's group blocks are Q4_0's bytes (its codes index kIQ4NLValues);
// MXFP4's hold 8 E8M0 scale bytes in place of the fp16 d, then the same
// code vectors (indexing kMXFP4Values).
enum class X8Fmt { kQ4_0, kQ5_0, kQ8_0, kIQ4_NL, kQ4_1, kQ5_1, kMXFP4 };

// Q4_1 / Q5_1: w = d * code + m, a per-block min in place of an offset; a
// group block holds the 8 rows' m (fp16) right after their d.
template <X8Fmt F>
inline constexpr bool kX8HasMin = F == X8Fmt::kQ4_1 || F == X8Fmt::kQ5_1;
// Q5_0 / Q5_1: 5-bit codes, their 5th bits in 32 bytes before the codes.
template <X8Fmt F>
inline constexpr bool kX8Has5th = F == X8Fmt::kQ5_0 || F == X8Fmt::kQ5_1;
// Offsets in a group block of the 5th bits and of the code vectors.
template <X8Fmt F>
inline constexpr int kX8High = kX8HasMin<F> ? 32 : 16;
template <X8Fmt F>
inline constexpr int kX8Codes = F == X8Fmt::kMXFP4 ? 8 : kX8High<F> + (kX8Has5th<F> ? 32 : 0);

// Bytes of one block of a group (8 rows): 8 of the format's blocks.
template <X8Fmt F>
inline constexpr int kX8GroupBlockBytes =
    kX8Rows * static_cast<int>(F == X8Fmt::kQ4_0 || F == X8Fmt::kIQ4_NL ? sizeof(BlockQ4_0)
                               : F == X8Fmt::kQ5_0                      ? sizeof(BlockQ5_0)
                               : F == X8Fmt::kQ4_1                      ? sizeof(BlockQ4_1)
                               : F == X8Fmt::kQ5_1                      ? sizeof(BlockQ5_1)
                               : F == X8Fmt::kMXFP4                     ? sizeof(BlockMXFP4)
                                                                        : sizeof(BlockQ8_0));
static_assert(sizeof(BlockIQ4_NL) == sizeof(BlockQ4_0));

// The codes' offset, w = d * (code - offset); Q8_0's codes are the signed
// values and IQ4_NL's and MXFP4's index them (offset 0); Q4_1 / Q5_1 have a
// min instead.
template <X8Fmt F>
inline constexpr int kX8Offset = F == X8Fmt::kQ4_0 ? 8 : F == X8Fmt::kQ5_0 ? 16 : 0;

// A tile for a fixed count of activation rows: TileFn without w_stride
// (x8 groups lie back to back) and nc.
using TileRcFn = void (*)(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride,
                          float* y, size_t y_stride);

// The TileFn over tiles for 1 .. sizeof...(kTiles) activation rows (nc
// above that takes the last): the x8 entries' one dispatch from a run-time
// row count, as DotByCols (kernel_table.h) is the dot entries'.
template <TileRcFn... kTiles>
static void TileByCols(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                       size_t xq_stride, int nc, float* y, size_t y_stride) {
  constexpr TileRcFn kByCols[] = {kTiles...};
  constexpr int kMax = static_cast<int>(sizeof...(kTiles));
  kByCols[(nc < kMax ? nc : kMax) - 1](k, w, nr, xq, xq_stride, y, y_stride);
}

// Calls tile(std::integral_constant<int, RC>{}) with RC = min(nc, kMax):
// the tile instance for nc activation rows.
template <int kMax, int RC = 1, typename Tile>
static inline void WithCols(int nc, Tile&& tile) {
  if constexpr (RC < kMax) {
    if (nc > RC) return WithCols<kMax, RC + 1>(nc, tile);
  }
  tile(std::integral_constant<int, RC>{});
}

// scalar_x8.cc: the reference x8 tiles, reading activations made by
// `quantize_q8x32` (the table's Q8x32 conversion).
void FillScalarX8(KernelTable* t, QuantizeActFn quantize_q8x32);

namespace avx2 {
// avx2_x8.cc: overwrites the x8 tiles (after FillFloatAndLegacy and
// FillKQuants, whose activation conversions they reuse); calls
// FillX8KQuants (avx2_x8_kquants.cc) for Q4_K, Q5_K and Q6_K.
void FillX8(KernelTable* t);
void FillX8KQuants(KernelTable* t);
}  // namespace avx2

}  // namespace weft::kernels
