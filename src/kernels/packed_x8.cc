#include "kernels/packed_x8.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tensor/blocks.h"
#include "util/check.h"

namespace weft::kernels {
namespace {

// One block (index b) of the 8 rows of a group into dst; rows >= n_rows
// are zero. Block: the row-major block type (BlockQ4_0 etc.).
template <typename Block>
void PackBlock(const uint8_t* const* rows, int n_rows, int64_t b,
               uint8_t* dst) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>;
  constexpr bool kMin = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1>;
  constexpr bool kE8M0 = std::is_same_v<Block, BlockMXFP4>;  // 1-byte scales
  constexpr int kQsBytes = sizeof(Block{}.qs);
  std::memset(dst, 0, kX8Rows * sizeof(Block));
  uint8_t* d = dst;
  uint8_t* h = dst + (kMin ? 32 : kE8M0 ? 8 : 16);
  uint8_t* q = h + (kQ5 ? 32 : 0);
  for (int i = 0; i < n_rows; ++i) {
    const Block& blk = reinterpret_cast<const Block*>(rows[i])[b];
    if constexpr (kE8M0) {
      d[i] = blk.e;
    } else {
      std::memcpy(d + 2 * i, &blk.d, 2);
    }
    if constexpr (kMin) std::memcpy(dst + 16 + 2 * i, &blk.m, 2);
    for (int j = 0; j < kQsBytes / 4; ++j) {
      std::memcpy(q + 32 * j + 4 * i, blk.qs + 4 * j, 4);
    }
    if constexpr (kQ5) {
      uint32_t qh;
      std::memcpy(&qh, blk.qh, 4);
      for (int t = 0; t < 4; ++t) {
        uint8_t v = 0;
        for (int j = 0; j < 4; ++j) {
          v |= static_cast<uint8_t>(((qh >> (4 * j + t)) & 1u) << j);
          v |= static_cast<uint8_t>(((qh >> (16 + 4 * j + t)) & 1u) << (4 + j));
        }
        h[4 * i + t] = v;
      }
    }
  }
}

// Q4_K (Q5_K) super-block b of the 8 rows (see the header).
template <typename Block>
void PackBlockQ45K(const uint8_t* const* rows, int n_rows, int64_t b, uint8_t* dst) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_K>;
  std::memset(dst, 0, kX8Rows * (kQ5 ? kX8Q5KBlockBytes : kX8Q4KBlockBytes));
  for (int i = 0; i < n_rows; ++i) {
    const Block& blk = reinterpret_cast<const Block*>(rows[i])[b];
    std::memcpy(dst + 2 * i, &blk.d, 2);
    std::memcpy(dst + 16 + 2 * i, &blk.dmin, 2);
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      ScaleMinK4(s, blk.scales, &sc, &m);
      dst[32 + 8 * s + i] = sc;
      dst[96 + 16 * (s / 2) + 2 * i + s % 2] = m;
    }
    for (int c = 0; c < 4; ++c) {
      for (int j = 0; j < 8; ++j) {
        std::memcpy(dst + 160 + 256 * c + 32 * j + 4 * i,
                    blk.qs + 32 * c + 4 * j, 4);
      }
    }
    if constexpr (kQ5) {
      // Byte 32c + l of the codes: element 64c + l (5th bit: qh[l] bit 2c)
      // and 64c + 32 + l (bit 2c + 1); vector j, byte 4i + t holds l = 4j + t.
      uint8_t* h = dst + kX8Rows * kX8Q4KBlockBytes;
      for (int c = 0; c < 4; ++c) {
        for (int t = 0; t < 4; ++t) {
          uint8_t lo = 0, hi = 0;
          for (int j = 0; j < 8; ++j) {
            lo |= static_cast<uint8_t>(((blk.qh[4 * j + t] >> (2 * c)) & 1) << j);
            hi |= static_cast<uint8_t>(((blk.qh[4 * j + t] >> (2 * c + 1)) & 1) << j);
          }
          h[64 * c + 4 * i + t] = lo;
          h[64 * c + 32 + 4 * i + t] = hi;
        }
      }
    }
  }
}

// Q2_K super-block b of the 8 rows (see the header).
void PackBlockQ2K(const uint8_t* const* rows, int n_rows, int64_t b, uint8_t* dst) {
  std::memset(dst, 0, kX8Rows * sizeof(BlockQ2_K));
  for (int i = 0; i < n_rows; ++i) {
    const BlockQ2_K& blk = reinterpret_cast<const BlockQ2_K*>(rows[i])[b];
    std::memcpy(dst + 2 * i, &blk.d, 2);
    std::memcpy(dst + 16 + 2 * i, &blk.dmin, 2);
    for (int s = 0; s < 16; ++s) dst[32 + 16 * (s / 2) + 2 * i + s % 2] = blk.scales[s];
    for (int s = 0; s < 16; ++s) {
      for (int t = 0; t < 4; ++t) {
        uint8_t v = 0;
        for (int u = 0; u < 4; ++u) {
          // Element e of the block: code (qs[32 (e / 128) + e % 32] >> 2 ((e % 128) / 32)) & 3.
          const int e = 16 * s + 4 * u + t;
          const int code = (blk.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
          v |= static_cast<uint8_t>(code << (2 * u));
        }
        dst[kX8Q2KCodes + 32 * s + 4 * i + t] = v;
      }
    }
  }
}

// Q3_K super-block b of the 8 rows (see the header).
void PackBlockQ3K(const uint8_t* const* rows, int n_rows, int64_t b, uint8_t* dst) {
  std::memset(dst, 0, kX8Rows * kX8Q3KBlockBytes);
  for (int i = 0; i < n_rows; ++i) {
    const BlockQ3_K& blk = reinterpret_cast<const BlockQ3_K*>(rows[i])[b];
    std::memcpy(dst + 2 * i, &blk.d, 2);
    for (int s = 0; s < 16; ++s) {
      const int lo = s < 8 ? (blk.scales[s] & 0x0f) : (blk.scales[s - 8] >> 4);
      const int hi = (blk.scales[8 + s % 4] >> (2 * (s / 4))) & 3;
      dst[16 + 16 * (s / 2) + 2 * i + s % 2] = static_cast<uint8_t>((lo | (hi << 4)) - 32);
    }
    for (int s = 0; s < 16; ++s) {
      for (int t = 0; t < 4; ++t) {
        uint8_t v = 0, h = 0;
        for (int u = 0; u < 4; ++u) {
          const int e = 16 * s + 4 * u + t;
          const int q2 = (blk.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
          const int hbit = (blk.hmask[e % 32] >> (e / 32)) & 1;
          v |= static_cast<uint8_t>(q2 << (2 * u));
          h |= static_cast<uint8_t>(hbit << (4 * (s % 2) + u));
        }
        dst[kX8Q3KCodes + 32 * s + 4 * i + t] = v;
        dst[kX8Q3KHigh + 32 * (s / 2) + 4 * i + t] |= h;
      }
    }
  }
}

// IQ4_XS super-block b of the 8 rows (see the header).
void PackBlockIQ4XS(const uint8_t* const* rows, int n_rows, int64_t b, uint8_t* dst) {
  std::memset(dst, 0, kX8Rows * kX8IQ4XSBlockBytes);
  for (int i = 0; i < n_rows; ++i) {
    const BlockIQ4_XS& blk = reinterpret_cast<const BlockIQ4_XS*>(rows[i])[b];
    std::memcpy(dst + 2 * i, &blk.d, 2);
    for (int s = 0; s < 8; ++s) {
      dst[16 + 16 * (s / 2) + 2 * i + s % 2] = static_cast<uint8_t>(IQ4XSScale(blk, s));
      for (int j = 0; j < 4; ++j) {
        std::memcpy(dst + kX8IQ4XSCodes + 128 * s + 32 * j + 4 * i, blk.qs + 16 * s + 4 * j, 4);
      }
    }
  }
}

// The 6-bit codes (0..63; w = d * sc * (code - 32)) of one Q6_K block.
void Q6KCodes(const BlockQ6_K& blk, uint8_t* q6) {
  const uint8_t* ql = blk.ql;
  const uint8_t* qh = blk.qh;
  for (int n = 0; n < kQK_K; n += 128, ql += 64, qh += 32) {
    for (int l = 0; l < 32; ++l) {
      q6[n + l] = static_cast<uint8_t>((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4));
      q6[n + l + 32] = static_cast<uint8_t>((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4));
      q6[n + l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      q6[n + l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

// Q6_K super-block b of the 8 rows (see the header).
void PackBlockQ6K(const uint8_t* const* rows, int n_rows, int64_t b, uint8_t* dst) {
  std::memset(dst, 0, kX8Rows * sizeof(BlockQ6_K));
  for (int i = 0; i < n_rows; ++i) {
    const BlockQ6_K& blk = reinterpret_cast<const BlockQ6_K*>(rows[i])[b];
    std::memcpy(dst + 2 * i, &blk.d, 2);
    for (int s = 0; s < 16; ++s) {
      dst[16 + 16 * (s / 2) + 2 * i + s % 2] = static_cast<uint8_t>(blk.scales[s]);
    }
    uint8_t q6[kQK_K];
    Q6KCodes(blk, q6);
    for (int s = 0; s < 16; ++s) {
      uint8_t* sub = dst + kX8Q6KCodes + 96 * s;
      for (int t = 0; t < 4; ++t) {
        const uint8_t* e = q6 + 16 * s + t;  // e[4j]: element 4j + t of the sub-block
        sub[4 * i + t] = static_cast<uint8_t>((e[0] & 15) | (e[8] & 15) << 4);
        sub[32 + 4 * i + t] = static_cast<uint8_t>((e[4] & 15) | (e[12] & 15) << 4);
        sub[64 + 4 * i + t] = static_cast<uint8_t>((e[0] >> 4) | (e[4] >> 4) << 2 |
                                                   (e[8] >> 4) << 4 | (e[12] >> 4) << 6);
      }
    }
  }
}

template <typename Block>
void PackAll(const uint8_t* w, size_t w_row_bytes, int64_t n, int64_t k,
             uint8_t* out) {
  constexpr bool kK4 = std::is_same_v<Block, BlockQ4_K>;
  constexpr bool kK5 = std::is_same_v<Block, BlockQ5_K>;
  constexpr bool kK6 = std::is_same_v<Block, BlockQ6_K>;
  constexpr bool kK2 = std::is_same_v<Block, BlockQ2_K>;
  constexpr bool kK3 = std::is_same_v<Block, BlockQ3_K>;
  constexpr bool kXS = std::is_same_v<Block, BlockIQ4_XS>;
  constexpr int kBlockElems = kK2 || kK3 || kK4 || kK5 || kK6 || kXS ? kQK_K : 32;
  constexpr size_t kX8Bytes = kXS   ? kX8IQ4XSBlockBytes
                              : kK3 ? kX8Q3KBlockBytes
                              : kK4 ? kX8Q4KBlockBytes
                              : kK5 ? kX8Q5KBlockBytes
                                    : sizeof(Block);  // per row and block
  const int64_t nb = k / kBlockElems;
  const size_t row_bytes = static_cast<size_t>(nb) * kX8Bytes;
  if (w_row_bytes == 0) w_row_bytes = static_cast<size_t>(nb) * sizeof(Block);
  for (int64_t g = 0; g * kX8Rows < n; ++g) {
    const uint8_t* rows[kX8Rows];
    const int n_rows =
        static_cast<int>(std::min<int64_t>(kX8Rows, n - g * kX8Rows));
    for (int i = 0; i < n_rows; ++i)
      rows[i] = w + (g * kX8Rows + i) * w_row_bytes;
    uint8_t* dst = out + static_cast<size_t>(g) * kX8Rows * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      if constexpr (kK4 || kK5) {
        PackBlockQ45K<Block>(rows, n_rows, b, dst + b * kX8Rows * kX8Bytes);
      } else if constexpr (kXS) {
        PackBlockIQ4XS(rows, n_rows, b, dst + b * kX8Rows * kX8Bytes);
      } else if constexpr (kK3) {
        PackBlockQ3K(rows, n_rows, b, dst + b * kX8Rows * kX8Bytes);
      } else if constexpr (kK2) {
        PackBlockQ2K(rows, n_rows, b, dst + b * kX8Rows * kX8Bytes);
      } else if constexpr (kK6) {
        PackBlockQ6K(rows, n_rows, b, dst + b * kX8Rows * kX8Bytes);
      } else {
        PackBlock<Block>(rows, n_rows, b, dst + b * kX8Rows * kX8Bytes);
      }
    }
  }
}

}  // namespace

bool CanPackX8(GgmlType type) {
  return type == GgmlType::kQ4_0 || type == GgmlType::kQ5_0 ||
         type == GgmlType::kQ8_0 || type == GgmlType::kIQ4_NL || type == GgmlType::kQ4_1 ||
         type == GgmlType::kQ5_1 || type == GgmlType::kIQ4_XS || type == GgmlType::kQ2_K ||
         type == GgmlType::kQ3_K || type == GgmlType::kQ4_K ||
         type == GgmlType::kQ5_K || type == GgmlType::kQ6_K || type == GgmlType::kMXFP4;
}

size_t X8RowBytes(GgmlType type, int64_t k) {
  const GgmlTypeTraits& t = TypeTraits(type);
  CHECK(CanPackX8(type) && k % t.block_size == 0)
      << TypeName(type) << " k=" << k;
  const size_t per_block = type == GgmlType::kIQ4_XS  ? kX8IQ4XSBlockBytes
                           : type == GgmlType::kQ3_K ? kX8Q3KBlockBytes
                           : type == GgmlType::kQ4_K ? kX8Q4KBlockBytes
                           : type == GgmlType::kQ5_K ? kX8Q5KBlockBytes
                                                     : t.type_size;
  return static_cast<size_t>(k / t.block_size) * per_block;
}

size_t PackedX8Bytes(GgmlType type, int64_t n, int64_t k) {
  return static_cast<size_t>((n + kX8Rows - 1) / kX8Rows * kX8Rows) *
         X8RowBytes(type, k);
}

void PackX8(GgmlType type, const void* w, size_t w_row_bytes, int64_t n,
            int64_t k, void* out) {
  X8RowBytes(type, k);  // checks the type and k
  const uint8_t* src = static_cast<const uint8_t*>(w);
  uint8_t* dst = static_cast<uint8_t*>(out);
  switch (type) {
    case GgmlType::kQ4_0:
      PackAll<BlockQ4_0>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ5_0:
      PackAll<BlockQ5_0>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kIQ4_NL:
      PackAll<BlockIQ4_NL>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ4_1:
      PackAll<BlockQ4_1>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ5_1:
      PackAll<BlockQ5_1>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ4_K:
      PackAll<BlockQ4_K>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ5_K:
      PackAll<BlockQ5_K>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ6_K:
      PackAll<BlockQ6_K>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ2_K:
      PackAll<BlockQ2_K>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ3_K:
      PackAll<BlockQ3_K>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kIQ4_XS:
      PackAll<BlockIQ4_XS>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kMXFP4:
      PackAll<BlockMXFP4>(src, w_row_bytes, n, k, dst);
      break;
    default:
      PackAll<BlockQ8_0>(src, w_row_bytes, n, k, dst);
      break;
  }
}

}  // namespace weft::kernels
