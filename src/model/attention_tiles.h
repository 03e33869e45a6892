// The key and value passes of one attention task over F16 rows stored in
// tiles (KvRowMap::k_tile, v_tile), a tile at a time (model/attention.cc's
// SliceAttention runs them; rows stored as rows go through its block loop).
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"
#include "model/slice_rows.h"

namespace weft::model::attention_internal {

// What both passes share: the kernels, the head sizes, and the task's
// buffers. Scores of kv head k0 + i's query rows: scores + i * nr * kSlice,
// [nr, kSlice] from the slice's first key (kernels::kAttentionSlice).
struct TilePass {
  const kernels::KernelTable& kt;
  int64_t hd, hdv;  // key and value elements per kv head
  int64_t k0, k1;   // the task's kv heads
  int64_t nr;       // query rows per kv head
  float* scores;
};

// Scores of the slice's keys, kv heads [k0, k1) of each tile in turn
// (queries q: [k1 - k0, nr, hd]); each head's call prefetches its part of
// the next tile, the last tile's the first value tile (or a share of the
// first value rows). scratch: scratch_floats floats the pass may use (a
// part-filled last tile's nr x tile-width scores, when they fit).
void KeyTiles(const TilePass& p, const SliceRows& sr, const float* q, float scale,
              float* scratch, int64_t scratch_floats);

// Weighted sums of the slice's values (weights: the softmaxed scores) into
// kv head k0 + i's partials, y + i * nr * ys (row 0's o, rows ys apart): a
// head's values of a tile are one run, so row j is the run's start plus j
// rows; each call prefetches the head's part of the next tile, the last
// tile's the next slice's first key tile (the slice a thread usually runs
// next).
void ValueTiles(const TilePass& p, const SliceRows& sr, float* y, int64_t ys);

}  // namespace weft::model::attention_internal
