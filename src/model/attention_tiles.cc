#include "model/attention_tiles.h"

#include <algorithm>

#include "kernels/ops.h"

namespace weft::model::attention_internal {

namespace {
constexpr int64_t kSlice = kernels::kAttentionSlice;
}  // namespace

void KeyTiles(const TilePass& p, const SliceRows& sr, const float* q, float scale,
              float* scratch, int64_t scratch_floats) {
  const KvRowMap& map = sr.map;
  const int32_t w = map.k_tile, j0 = sr.j0, j1 = sr.j1;
  const int64_t head_halves = p.hd * w;  // one kv head's part of a tile
  const int64_t nk = p.k1 - p.k0;
  // The last tile's calls prefetch the first values: when the values lie in
  // tiles of the keys' shape, the head's part of the first value tile
  // through the kernel (`ahead`, spread among its arithmetic); else a share
  // of the first block's rows each.
  const bool values_ahead = map.v_tile == w && p.hdv == p.hd;
  const auto* first_tile =
      values_ahead ? reinterpret_cast<const uint16_t*>(map.Value(j0 - j0 % w)) : nullptr;
  const int64_t v_lines = (map.v_row + 63) / 64;
  const uint8_t* first_values[kTileRows];
  const int64_t n_values = values_ahead ? 0 : std::min<int64_t>(kTileRows, j1 - j0);
  map.Rows(false, j0, n_values, first_values);
  for (int32_t t = j0 - j0 % w; t < j1; t += w) {
    const int32_t a = std::max(t, j0), e = std::min(t + w, j1);
    const auto* tile = reinterpret_cast<const uint16_t*>(map.KeyTile(t));
    const auto* next =
        t + w < j1 ? reinterpret_cast<const uint16_t*>(map.KeyTile(t + w)) : first_tile;
    // The tile a slice ends in part way (a sequence's last, being filled)
    // goes through the whole-tile kernel into scratch, and its first e - a
    // lanes are kept: its slots past e are the storage's too (a tile is
    // whole slots of one block), and lanes never mix, so the kept scores
    // are the same bits as the lane-by-lane copies of the partial-tile
    // kernel, at a fraction of its cost.
    const bool whole = a == t && e - a < w && p.nr * w <= scratch_floats;
    for (int64_t kvh = p.k0; kvh < p.k1; ++kvh) {
      if (t + w >= j1) PrefetchShare(first_values, n_values, kvh - p.k0, nk, v_lines);
      float* s = p.scores + (kvh - p.k0) * p.nr * kSlice + (a - j0);
      p.kt.scores_f16t(q + (kvh - p.k0) * p.nr * p.hd, p.hd, static_cast<int>(p.nr),
                       tile + kvh * head_halves + (a - t), w, whole ? w : e - a, p.hd, scale,
                       whole ? scratch : s, whole ? w : kSlice,
                       next != nullptr ? next + kvh * head_halves : nullptr);
      if (whole) {
        for (int64_t r = 0; r < p.nr; ++r) std::copy_n(scratch + r * w, e - a, s + r * kSlice);
      }
    }
  }
}

void ValueTiles(const TilePass& p, const SliceRows& sr, float* y, int64_t ys) {
  const KvRowMap& map = sr.map;
  const int32_t w = map.v_tile, j0 = sr.j0, j1 = sr.j1;
  const int64_t vh = map.v_head, head_bytes = w * vh;  // one kv head's part of a tile
  // The next slice's first key tile, when its head parts lie as the
  // values' do (keys in tiles of the same width and head size).
  const bool keys_after = map.k_tile == w && p.hd == p.hdv && j1 <= sr.hi;
  const uint8_t* first_keys = keys_after ? map.KeyTile(j1) : nullptr;
  const void* rows[kTileRows];
  const void* ahead[kTileRows];
  for (int32_t t = j0 - j0 % w; t < j1; t += w) {
    const int32_t a = std::max(t, j0), e = std::min(t + w, j1);
    const int64_t n = e - a;
    const uint8_t* next = t + w < j1 ? map.Value(t + w) : first_keys;
    for (int64_t kvh = p.k0; kvh < p.k1; ++kvh) {
      const uint8_t* run = map.ValueHead(a, kvh);  // rows a .. e - 1 of the head's run
      for (int64_t j = 0; j < n; ++j) rows[j] = run + j * vh;
      if (next != nullptr) {
        const uint8_t* na = next + kvh * head_bytes;
        for (int64_t j = 0; j < n; ++j) ahead[j] = na + j * vh;
      }
      const int64_t i = kvh - p.k0;
      p.kt.wsum_f16(rows, next != nullptr ? ahead : nullptr, n,
                    p.scores + i * p.nr * kSlice + (a - j0), kSlice, static_cast<int>(p.nr),
                    p.hdv, y + i * p.nr * ys, ys);
    }
  }
}

}  // namespace weft::model::attention_internal
