// KV sizing: how many blocks of each KV cache group a byte budget buys.
//
// The model describes its KV storage in a KvLayout (model::KvLayoutOf:
// the bytes one token's K and V rows take in one layer, how many layers
// there are and how many of them are sliding-window layers); this file does
// the arithmetic on that plain struct and knows no model, tensor or type.
// Engine assembly (runtime/) and the benchmarks size their caches here.
//
//   ASSIGN_OR_RETURN(kv::KvLayout layout, model::KvLayoutOf(mc, type));
//   ASSIGN_OR_RETURN(kv::KvCacheConfig kv, kv::KvConfigForBytes(
//       layout, 16, 1 << 30, {sched.max_seqs, sched.MaxPassTokens()}));
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstdint>

#include "kv/kv_cache_manager.h"
#include "util/status.h"

namespace weft::kv {

// A model's KV storage needs, independent of block size and budget.
// Invariant (of a valid layout): 0 <= num_local_layers <= num_layers.
struct KvLayout {
  // Bytes of one token's K and V rows in one layer, in the storage type.
  uint64_t row_bytes = 0;
  int64_t num_layers = 0;        // every layer keeps K and V
  int64_t num_local_layers = 0;  // sliding-window layers (Gemma 3: 5 in 6)
  int64_t sliding_window = 0;    // their window in tokens; 0 = none

  // Bytes one block of block_size tokens takes in one layer (K and V).
  uint64_t LayerBytesPerBlock(int block_size) const;
};

// What the scheduler can hold at once, which bounds the local group.
struct KvPassLimits {
  int max_seqs = 1;         // sequences running at once
  int max_pass_tokens = 1;  // tokens one forward pass may schedule
};

// How many blocks of block_size tokens fit in `bytes` when every layer
// keeps its rows in one group. At least 0.
int64_t KvBlocksForBytes(const KvLayout& layout, int block_size,
                         uint64_t bytes);

// The KV cache config for `bytes` of memory. A layout with both sliding-
// window and full-attention layers (Gemma 3) gets a local group when
// split_groups: its windowed layers' blocks, sized for what the scheduler
// can hold at once,
//   need = max_seqs * (ceil(window / block_size) + 1)
//          + ceil(max_pass_tokens / block_size)
// (every running sequence's window plus one pass of prompt chunks), and the
// full group gets the rest; if the rest would be fewer blocks than `need`,
// both groups get the same count (a local table is never longer than a full
// one). Other layouts get one group. INVALID_ARGUMENT when the block size is
// not positive or the budget holds no block. *bytes_used: the storage it
// needs.
StatusOr<KvCacheConfig> KvConfigForBytes(const KvLayout& layout,
                                         int block_size, uint64_t bytes,
                                         const KvPassLimits& limits,
                                         bool split_groups = true,
                                         uint64_t* bytes_used = nullptr);

}  // namespace weft::kv
