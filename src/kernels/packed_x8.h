// The x8 weight layout: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4, IQ4_XS and
// the K-quants Q2_K .. Q6_K: matrices with 8 rows
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
// IQ4_NL is laid out as Q4_0 (the same block bytes; codes index its table).
// MXFP4 as IQ4_NL with the 8 rows' E8M0 scale bytes e[8] (8 bytes) in
// place of d: a group block is 8 x 17 bytes, the codes at byte 8.
// Q4_1 and Q5_1 as Q4_0 and Q5_0 with the 8 rows' fp16 mins m[8] (16
// bytes) after d.
// For Q4_0 / Q5_0, byte 4j+t of a row's qs holds element 4j+t in its low
// nibble and element 16+4j+t in its high nibble, so the low nibbles of
// vector j are elements 4j..4j+3 of the 8 rows and the high nibbles
// elements 16+4j..16+4j+3. Q5_0's h: byte 4i+t, bit j is the 5th bit of
// element 4j+t of row i and bit 4+j that of element 16+4j+t.
// Q4_K, per super-block of 256 elements (8 * 148 bytes, 4 more per row
// than the file: the scales are unpacked):
//   d[8], dmin[8]  fp16                                       32 bytes
//   sc[8][8]       6-bit scale of sub-block s (0..7), row i at 8s + i
//   m[4][8][2]     6-bit mins: pair p, row i: m of sub-blocks 2p, 2p+1
//   q[4][8][32]    chunk c (elements 64c .. 64c+63), vector j: bytes
//                  4j .. 4j+3 of each row's 32 qs bytes of the chunk; low
//                  nibbles are sub-block 2c, high nibbles sub-block 2c+1
// Q5_K, per super-block (8 * 180 bytes, 4 more per row than the file): the
// Q4_K layout above (the 4-bit parts of the codes), then the 5th bits
//   h[4][2][32]    chunk c: byte 4i + t of the first 32 holds in bit j the
//                  5th bit of the low nibble of vector j's byte 4i + t, the
//                  second 32 those of the high nibbles
// Q2_K, per super-block (8 * 84 bytes, the file's size), with the 2-bit
// codes q (w = d * sc * q - dmin * m) of group s (elements 16s .. 16s+15):
//   d[8], dmin[8]  fp16                                       32 bytes
//   scm[8][8][2]   the file's scale byte (sc | m << 4): pair p, row i:
//                  groups 2p, 2p+1
//   q[16][32]      group s: byte 4i + t holds in bits 2u element 4u + t
//                  of row i's group
// Q3_K, per super-block (8 * 114 bytes, 4 more per row than the file: the
// scales are unpacked), with the codes u = q + 4 (0..7; w = d * sc * (u - 4))
// of group s (elements 16s .. 16s+15):
//   d[8]           fp16                                       16 bytes
//   sc[8][8][2]    int8 scales (6-bit - 32): pair p, row i: groups 2p, 2p+1
//   q[16][32]      group s: byte 4i + t holds in bits 2u the low 2 bits of
//                  element 4u + t of row i's group
//   h[8][32]       pair p: byte 4i + t holds in bit 4h + u the 3rd bit of
//                  element 4u + t of row i's group 2p + h
// IQ4_XS, per super-block (8 * 138 bytes, 2 more per row than the file: the
// scales are unpacked), with the 4-bit codes of sub-block b (elements 32b ..
// 32b+31) indexing kIQ4NLValues:
//   d[8]           fp16                                       16 bytes
//   sc[4][8][2]    int8 scales ls - 32: pair p, row i: sub-blocks 2p, 2p+1
//   q[8][4][32]    sub-block b, vector j: bytes 4j .. 4j+3 of each row's 16
//                  code bytes of the sub-block (as Q4_0's vectors)
// Q6_K, per super-block (8 * 210 bytes, the file's size), with the 6-bit
// codes q (w = d * sc * (q - 32)) of sub-block s (elements 16s .. 16s+15)
// in vectors j = 0..3 of elements 16s+4j .. 16s+4j+3 (row i at 4i .. 4i+3):
//   d[8]           fp16                                       16 bytes
//   sc[8][8][2]    int8 scales: pair p, row i: sub-blocks 2p, 2p+1
//   s[16][3][32]   per sub-block: low nibbles of vectors 0 | 2 (as the
//                  low | high nibble), of vectors 1 | 3, then the top 2
//                  bits of vectors 0, 1, 2, 3 in bits 0-1, 2-3, 4-5, 6-7
// A group is 8 x X8RowBytes, so group g starts at byte 8g * X8RowBytes
// (for Q4_0/Q5_0/Q8_0 where row 8g starts in the row-major layout).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/types.h"

namespace weft::kernels {

// Rows per group of the x8 layout.
inline constexpr int kX8Rows = 8;
// Bytes per row and super-block of Q4_K in the x8 layout (file: 144).
inline constexpr size_t kX8Q4KBlockBytes = 148;
// The same for Q5_K (file: 176): the Q4_K part, then 32 bytes of 5th bits.
inline constexpr size_t kX8Q5KBlockBytes = 180;
// Offset of the codes in a Q2_K group super-block (d, dmin and scales first).
inline constexpr size_t kX8Q2KCodes = 160;
// Bytes per row and super-block of Q3_K in the x8 layout (file: 110), and
// the offsets of its codes' low bits and 3rd bits in a group super-block.
inline constexpr size_t kX8Q3KBlockBytes = 114;
inline constexpr size_t kX8Q3KCodes = 144;
inline constexpr size_t kX8Q3KHigh = 656;
// Bytes per row and super-block of IQ4_XS in the x8 layout (file: 136), and
// the offset of the codes in a group super-block.
inline constexpr size_t kX8IQ4XSBlockBytes = 138;
inline constexpr size_t kX8IQ4XSCodes = 80;
// Offset of the codes in a Q6_K group super-block (d and scales first).
inline constexpr size_t kX8Q6KCodes = 144;

// Whether MatMul has x8 kernels for `type` (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// IQ4_NL, MXFP4, IQ4_XS, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K).
bool CanPackX8(GgmlType type);

// Bytes per row in the x8 layout (a group is 8 of them): RowBytes, but
// 114 (148, 180, 138) per super-block for Q3_K (Q4_K, Q5_K, IQ4_XS). REQUIRES: CanPackX8(type), k a multiple of
// the type's block.
size_t X8RowBytes(GgmlType type, int64_t k);

// Bytes of the x8 form of n rows of k elements: n rounded up to a multiple
// of 8, times X8RowBytes.
size_t PackedX8Bytes(GgmlType type, int64_t n, int64_t k);

// Writes the x8 form of the n row-major rows at w (w_row_bytes apart; 0:
// packed) to out (PackedX8Bytes bytes).
void PackX8(GgmlType type, const void* w, size_t w_row_bytes, int64_t n,
            int64_t k, void* out);

}  // namespace weft::kernels
