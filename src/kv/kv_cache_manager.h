// KvCacheManager: per-sequence block tables on top of block pools. It maps a
// sequence's token positions to physical slots (block * block_size + offset),
// grows tables as tokens are scheduled, shares blocks between sequences
// (prefix-cache hits, Fork) and returns them to the pools. It knows sequences
// (opaque ids) and blocks, not requests or tensors; the scheduler decides
// who gets blocks and acts on "does not fit" (nullopt).
//
// KV cache groups (vLLM's design): group 0 ("full") holds the blocks of the
// full-attention layers; an optional group 1 ("local") those of a hybrid
// model's sliding-window layers (Gemma 3: 5 of every 6 layers). Each group
// has its own BlockPool and each sequence one table per group, with the same
// number of logical blocks; allocation is all-or-nothing over the groups.
// The local group releases blocks that fell out of its window
// (ReleaseOutsideWindow; the table keeps kNullBlock there), so a long
// sequence holds about window / block_size + 1 local blocks. A prefix hit
// needs the local group's cached blocks for the last `window - 1` tokens of
// the prefix; when they are missing the hit is shortened
// (FindCachedPrefix, like vLLM's SlidingWindowManager.find_longest_cache_hit).
//
// A single group may itself be windowed (sliding_window > 0, every layer of
// the model windowed): then group 0 releases blocks the same way.
//
// Thread safety: none; owned by the scheduler's loop thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "util/status.h"

namespace weft::kv {

using SeqId = int64_t;

inline constexpr int kFullGroup = 0;   // full-attention layers (or all)
inline constexpr int kLocalGroup = 1;  // sliding-window layers, if split

struct KvCacheConfig {
  int num_blocks = 1024;   // blocks in group 0's pool (sized from memory)
  int block_size = 16;     // token slots per block (both groups)
  int sliding_window = 0;  // 0: group 0 is full attention; > 0: every layer
                           // is windowed, see ReleaseOutsideWindow()
  int local_num_blocks = 0;  // blocks of the local group; 0 = no local group
  int local_window = 0;      // the local group's window in tokens (> 0 iff
                             // local_num_blocks > 0)

  int num_groups() const { return local_num_blocks > 0 ? 2 : 1; }
  // INVALID_ARGUMENT on non-positive sizes or an inconsistent local group.
  Status Validate() const;
};

// One sequence's view of one group.
// Invariant: blocks.size() == ceil(num_tokens / block_size).
struct BlockTable {
  std::vector<BlockId> blocks;  // logical block i -> physical (or kNullBlock)
  int num_tokens = 0;           // token slots reserved (computed or scheduled)
  int num_committed_blocks = 0; // leading full blocks offered to the cache
  // Group 0's table: the cache entry holding the last committed block's
  // contents (kRootEntry before the first), the parent of the next one;
  // kNoEntry once a block could not be cached (no later block is).
  CacheEntryId last_entry = kRootEntry;
  int num_released = 0;         // leading blocks released (sliding window)
};

// The longest usable cached prefix of a token list, in whole blocks.
struct PrefixHit {
  std::vector<BlockId> blocks;  // group 0's physical blocks, in order
  // The local group's blocks for the same logical blocks (kNullBlock for
  // those outside the window); empty without a local group.
  std::vector<BlockId> local_blocks;
  int num_tokens = 0;           // blocks.size() * block_size
  CacheEntryId last_entry = kRootEntry;  // group 0's entry of the last block
};

// Where one scheduling step's new tokens of a sequence go.
struct SlotAllocation {
  int start_pos = 0;             // position of the first new token
  std::vector<int64_t> slots;    // [num_new_tokens] group 0 slot per token
  std::vector<BlockCopy> copies; // copy-on-write to do before the forward
                                 // (tagged with their group)
};

class KvCacheManager {
 public:
  // REQUIRES: config.Validate().ok().
  explicit KvCacheManager(const KvCacheConfig& config);
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  const KvCacheConfig& config() const { return config_; }
  int block_size() const { return config_.block_size; }
  int num_groups() const { return static_cast<int>(pools_.size()); }
  // Group g's window in tokens (0: full attention).
  int window(int group) const { return windows_[static_cast<size_t>(group)]; }
  bool has_window() const;
  BlockPool& pool(int group = kFullGroup) { return *pools_.at(size_t(group)); }
  const BlockPool& pool(int group = kFullGroup) const {
    return *pools_.at(static_cast<size_t>(group));
  }
  // Counters over every group: block counts and evictions summed; prefix
  // queries and hits (tokens) counted once, in group 0.
  BlockPoolStats stats() const;
  // Every pool's invariants, and every table's blocks held by its pool.
  Status CheckInvariants() const;

  // Blocks needed to hold num_tokens tokens.
  int BlocksFor(int num_tokens) const;
  // The most blocks of `group` one sequence of num_tokens tokens holds at
  // once when fed chunks of at most max_chunk tokens.
  int MaxBlocksHeld(int group, int num_tokens, int max_chunk) const;
  // The longest sequence (tokens) a cache of `config` holds alone, fed
  // chunks of at most max_chunk tokens: what a server's context length may
  // be. INT_MAX when every group is windowed and holds its window.
  static int MaxSequenceTokens(const KvCacheConfig& config, int max_chunk);

  // The longest run of cached full blocks that prefixes `tokens` and, with a
  // local group, whose last window - 1 tokens are cached there too; never
  // the whole list: at least one token is left to compute (for its logits).
  // No side effects (the caller records the query when it uses the hit).
  PrefixHit FindCachedPrefix(std::span<const TokenId> tokens) const;

  // Reserves slots for the next num_new_tokens of `seq` in every group. For
  // a sequence without tables, creates them starting from `prefix` (may be
  // null) and records the prefix query of `query_tokens` tokens. Returns
  // nullopt, with nothing changed, when any pool cannot supply the blocks.
  std::optional<SlotAllocation> AllocateSlots(SeqId seq, int num_new_tokens,
                                              const PrefixHit* prefix = nullptr,
                                              int query_tokens = 0);

  // Tells the manager that `seq`'s first num_computed tokens (`tokens`, at
  // least that long) now have their KV written: newly full blocks enter the
  // prefix cache of every group. Call after the forward pass, never before.
  void CommitComputed(SeqId seq, std::span<const TokenId> tokens,
                      int num_computed);

  // Gives `child` tables sharing all of `parent`'s blocks (n > 1 sampling).
  // The shared partial block is copied on the first append of either.
  Status Fork(SeqId parent, SeqId child);

  // Shrinks `seq` to its first new_len token slots in every group (rejected
  // speculative tokens): blocks wholly past the new end go back to their
  // pools (tail first). Slots in [new_len, old end) of the kept last block
  // hold stale KV that the next allocation overwrites; no block that held
  // them was committed, because CommitComputed only ever sees verified
  // tokens (REQUIRES: new_len >= the committed blocks' tokens, and
  // new_len <= the reserved slots). No-op for an unknown sequence.
  void Truncate(SeqId seq, int new_len);

  // Returns all of `seq`'s blocks (tail first, so the tail is evicted first).
  // No-op for an unknown sequence.
  void Free(SeqId seq);

  // For every windowed group: releases blocks holding only positions that no
  // query at position >= next_position can see (pos <= next_position -
  // window). Returns the number released (0 without windowed groups).
  int ReleaseOutsideWindow(SeqId seq, int next_position);

  bool Has(SeqId seq) const { return tables_.count(seq) != 0; }
  const BlockTable* Table(SeqId seq, int group = kFullGroup) const;
  int num_sequences() const { return static_cast<int>(tables_.size()); }

 private:
  // Blocks group g needs from its pool to extend `seq` by n tokens (or to
  // create it from `prefix`); sets *cow when a copy-on-write is due.
  // A new sequence's tables take the prefix hit's blocks (one reference
  // more on each), tokens and committed count.
  void AdoptPrefix(const PrefixHit& prefix, std::vector<BlockTable>* tables);
  int BlocksNeeded(int group, const BlockTable* t, const PrefixHit* prefix,
                   int num_new_tokens, bool* cow) const;

  KvCacheConfig config_;
  std::vector<std::unique_ptr<BlockPool>> pools_;  // per group
  std::vector<int> windows_;                       // per group
  std::unordered_map<SeqId, std::vector<BlockTable>> tables_;  // per group
};

}  // namespace weft::kv
