// The x8 weight layout: Q4_0, Q5_0 and Q8_0 matrices with 8 rows
// interleaved block by block, repacked once at load time for MatMul.
//
// In the file's row-major layout a decode tile reads 4 rows side by side,
// short interleaved streams the hardware prefetcher follows poorly, and each
// row's dot product ends in a horizontal sum. In the x8 layout the 8 rows of
// a group are one sequential stream, and a kernel holds the 8 rows' partial
// sums in the 8 lanes of one vector: one scale conversion, one FMA and no
// horizontal sum per 8 rows and block (measured on Zen 3, 2 threads, Q4_0
// K = 2048 at M = 1: ~22 GB/s of weights against ~14 for the row-major tile).
//
// Layout. Rows are grouped by 8 (group g: rows 8g .. 8g+7; a last group
// with fewer rows is padded with zero blocks). A group holds, for each block
// index b = 0 .. K/32 - 1 in order, 8 * (the format's block bytes):
//   d[8]     fp16 scale of rows 0..7                          16 bytes
//   h[32]    Q5_0 only: the 5th bits, see below               32 bytes
//   q[J][32] J = 4 (Q4_0, Q5_0) or 8 (Q8_0) vectors of 32 bytes: vector j
//            holds bytes 4j .. 4j+3 of each row's qs, row i at 4i .. 4i+3
// For Q4_0 / Q5_0, byte 4j+t of a row's qs holds element 4j+t in its low
// nibble and element 16+4j+t in its high nibble, so the low nibbles of
// vector j are elements 4j..4j+3 of the 8 rows and the high nibbles
// elements 16+4j..16+4j+3. Q5_0's h: byte 4i+t, bit j is the 5th bit of
// element 4j+t of row i and bit 4+j that of element 16+4j+t.
// A group is 8 rows' bytes (8 * RowBytes), so group g starts at byte
// 8g * RowBytes, where row 8g starts in the row-major layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/types.h"

namespace weft::kernels {

// Rows per group of the x8 layout.
inline constexpr int kX8Rows = 8;

// Whether MatMul has x8 kernels for `type` (Q4_0, Q5_0, Q8_0).
bool CanPackX8(GgmlType type);

// Bytes of the x8 form of n rows of k elements: n rounded up to a multiple
// of 8, times the row bytes. REQUIRES: CanPackX8(type), k % 32 == 0.
size_t PackedX8Bytes(GgmlType type, int64_t n, int64_t k);

// Writes the x8 form of the n row-major rows at w (w_row_bytes apart; 0:
// packed) to out (PackedX8Bytes bytes). REQUIRES: CanPackX8(type),
// k % 32 == 0.
void PackX8(GgmlType type, const void* w, size_t w_row_bytes, int64_t n,
            int64_t k, void* out);

}  // namespace weft::kernels
