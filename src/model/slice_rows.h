// The cached rows one attention task reads (model/attention.cc): a context
// slice's key and value rows in blocks of kTileRows positions, and the
// order in which the rows after them are prefetched.
#pragma once

#include <algorithm>
#include <cstdint>

#include "model/kv_storage.h"

namespace weft::model::attention_internal {

// Positions per block of rows (and per dequantized tile of Q8_0 rows).
inline constexpr int64_t kTileRows = 16;

// (F16 keys and values in tiles, KvRowMap::k_tile / v_tile, take
// SliceAttention::KeyTiles' and ValueTiles' order instead, a tile at a time.)
// The cached rows of one task's slice, keys [j0, j1): its blocks of
// kTileRows positions are read in order, every kv head of a block before
// the next block, so the rows (all heads of a position side by side) are
// read each once. The rows one block ahead are prefetched as the block
// is read (SliceAttention::PrefetchNext): by the kernels, a line or two
// among each position's multiply-adds, for F16 / F32 rows; a share before
// each kv head's call for Q8_0 rows. Bursts of a block's prefetches fill
// the core's fill buffers and stall it: spreading them over the heads'
// calls took attention_bench ctx 2,000, B=16, 1 thread from 93 to 84 ms,
// and into the kernels, 2 threads, from 38.3-38.9 to 34.9-35.3 ms. One
// block ahead: farther measured no faster on a 2-core Xeon.
// The last block of the keys prefetches the first values, and the last
// of the values the next slice's first keys (the slice a thread usually
// runs next), so no pass starts on a cold block (attention_bench, ctx
// 1,000-4,000, 2 threads: B=16 -3 to -4%, one sequence from memory -2%).
struct SliceRows {
  KvRowMap map;
  int32_t j0, j1;  // this slice's keys
  int32_t hi;      // the group's last key (the next slice's keys end there)

  // The rows from `at` positions past j0 in reading order, at most n, in
  // out: this pass's (keys or values) within the slice, then the next
  // pass's first block (the values from j0, or the next slice's keys from
  // j1); returns how many there are.
  int64_t AheadRows(bool key, int64_t at, int64_t n, const uint8_t** out) const {
    const int64_t span = j1 - j0;
    int64_t done = 0;
    if (at < span) {
      done = std::min(n, span - at);
      map.Rows(key, j0 + static_cast<int32_t>(at), done, out);
    }
    if (done == n) return done;
    const int32_t first = key ? j0 : j1;
    const int64_t skip = std::max<int64_t>(0, at - span);  // rows of the next pass passed over
    const int32_t end = std::min(key ? j1 : hi + 1, first + static_cast<int32_t>(kTileRows));
    const int64_t more = std::clamp<int64_t>(end - first - skip, 0, n - done);
    map.Rows(!key, first + static_cast<int32_t>(skip), more, out + done);
    return done + more;
  }
};

// Prefetches kv head `share`'s share of n rows of `lines` lines each: lines
// share, share + nk, ... of every row (so nk heads' calls split a block's
// lines between them).
inline void PrefetchShare(const uint8_t* const* rows, int64_t n, int64_t share, int64_t nk,
                   int64_t lines) {
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t l = share; l < lines; l += nk) __builtin_prefetch(rows[j] + l * 64, 0, 3);
  }
}

}  // namespace weft::model::attention_internal
