#include "kernels/packed_x8.h"

#include <cstring>

#include "tensor/blocks.h"
#include "util/check.h"

namespace weft::kernels {
namespace {

// One block (index b) of the 8 rows of a group into dst; rows >= n_rows
// are zero. Block: the row-major block type (BlockQ4_0 etc.).
template <typename Block>
void PackBlock(const uint8_t* const* rows, int n_rows, int64_t b,
               uint8_t* dst) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0>;
  constexpr int kQsBytes = sizeof(Block{}.qs);
  std::memset(dst, 0, kX8Rows * sizeof(Block));
  uint8_t* d = dst;
  uint8_t* h = dst + 16;
  uint8_t* q = dst + 16 + (kQ5 ? 32 : 0);
  for (int i = 0; i < n_rows; ++i) {
    const Block& blk = reinterpret_cast<const Block*>(rows[i])[b];
    std::memcpy(d + 2 * i, &blk.d, 2);
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

template <typename Block>
void PackAll(const uint8_t* w, size_t w_row_bytes, int64_t n, int64_t k,
             uint8_t* out) {
  const int64_t nb = k / 32;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(Block);
  if (w_row_bytes == 0) w_row_bytes = row_bytes;
  for (int64_t g = 0; g * kX8Rows < n; ++g) {
    const uint8_t* rows[kX8Rows];
    const int n_rows =
        static_cast<int>(std::min<int64_t>(kX8Rows, n - g * kX8Rows));
    for (int i = 0; i < n_rows; ++i)
      rows[i] = w + (g * kX8Rows + i) * w_row_bytes;
    uint8_t* dst = out + static_cast<size_t>(g) * kX8Rows * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      PackBlock<Block>(rows, n_rows, b, dst + b * kX8Rows * sizeof(Block));
    }
  }
}

}  // namespace

bool CanPackX8(GgmlType type) {
  return type == GgmlType::kQ4_0 || type == GgmlType::kQ5_0 ||
         type == GgmlType::kQ8_0;
}

size_t PackedX8Bytes(GgmlType type, int64_t n, int64_t k) {
  CHECK(CanPackX8(type) && k % 32 == 0) << TypeName(type) << " k=" << k;
  const size_t row_bytes =
      static_cast<size_t>(k / 32) * TypeTraits(type).type_size;
  return static_cast<size_t>((n + kX8Rows - 1) / kX8Rows * kX8Rows) * row_bytes;
}

void PackX8(GgmlType type, const void* w, size_t w_row_bytes, int64_t n,
            int64_t k, void* out) {
  CHECK(CanPackX8(type) && k % 32 == 0) << TypeName(type) << " k=" << k;
  const uint8_t* src = static_cast<const uint8_t*>(w);
  uint8_t* dst = static_cast<uint8_t*>(out);
  switch (type) {
    case GgmlType::kQ4_0:
      PackAll<BlockQ4_0>(src, w_row_bytes, n, k, dst);
      break;
    case GgmlType::kQ5_0:
      PackAll<BlockQ5_0>(src, w_row_bytes, n, k, dst);
      break;
    default:
      PackAll<BlockQ8_0>(src, w_row_bytes, n, k, dst);
      break;
  }
}

}  // namespace weft::kernels
