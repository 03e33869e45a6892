// KvCacheManager: per-sequence block tables on top of a BlockPool. It maps a
// sequence's token positions to physical slots (block * block_size + offset),
// grows tables as tokens are scheduled, shares blocks between sequences
// (prefix-cache hits, Fork) and returns them to the pool. It knows sequences
// (opaque ids) and blocks, not requests or tensors; the scheduler decides
// who gets blocks and acts on "does not fit" (nullopt).
//
// Sliding window (documented choice): one manager serves one attention kind.
// With sliding_window > 0 every layer reading this manager's blocks is
// windowed, and ReleaseOutsideWindow() hands blocks that fell entirely out
// of the window back to the pool (the table keeps kNullBlock there). A model
// with both global and windowed layers (Gemma 3) either uses one manager with
// sliding_window = 0 (windowed layers mask, all blocks kept: simple, wastes
// memory) or, later, a second manager/pool for its windowed layers with the
// scheduler allocating in both all-or-nothing, like vLLM's KV cache groups.
//
// Thread safety: none; owned by the scheduler's loop thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "util/status.h"

namespace weft::kv {

using SeqId = int64_t;

struct KvCacheConfig {
  int num_blocks = 1024;   // blocks in the pool (sized from free memory)
  int block_size = 16;     // token slots per block
  int sliding_window = 0;  // 0: full attention; > 0: window in tokens, see
                           // ReleaseOutsideWindow()
};

// One sequence's view of the cache.
// Invariant: blocks.size() == ceil(num_tokens / block_size).
struct BlockTable {
  std::vector<BlockId> blocks;  // logical block i -> physical (or kNullBlock)
  int num_tokens = 0;           // token slots reserved (computed or scheduled)
  int num_committed_blocks = 0; // leading full blocks hashed into the cache
  BlockHash last_hash = kRootHash;  // chain hash of the last committed block
  int num_released = 0;         // leading blocks released (sliding window)
};

// The longest cached prefix of a token list, in whole blocks.
struct PrefixHit {
  std::vector<BlockId> blocks;  // physical blocks, in order
  int num_tokens = 0;           // blocks.size() * block_size
  BlockHash last_hash = kRootHash;
};

// Where one scheduling step's new tokens of a sequence go.
struct SlotAllocation {
  int start_pos = 0;             // position of the first new token
  std::vector<int64_t> slots;    // [num_new_tokens] physical slot per token
  std::vector<BlockCopy> copies; // copy-on-write to do before the forward
};

class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheConfig& config);
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  const KvCacheConfig& config() const { return config_; }
  int block_size() const { return config_.block_size; }
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }

  // Blocks needed to hold num_tokens tokens.
  int BlocksFor(int num_tokens) const;

  // The longest run of cached full blocks that prefixes `tokens`, never the
  // whole list: at least one token is left to compute (for its logits).
  // No side effects (the caller records the query when it uses the hit).
  PrefixHit FindCachedPrefix(std::span<const TokenId> tokens) const;

  // Reserves slots for the next num_new_tokens of `seq`. For a sequence
  // without a table, creates one starting from `prefix` (may be null) and
  // records the prefix query of `query_tokens` tokens. Returns nullopt, with
  // nothing changed, when the pool cannot supply the blocks.
  std::optional<SlotAllocation> AllocateSlots(SeqId seq, int num_new_tokens,
                                              const PrefixHit* prefix = nullptr,
                                              int query_tokens = 0);

  // Tells the manager that `seq`'s first num_computed tokens (`tokens`, at
  // least that long) now have their KV written: newly full blocks enter the
  // prefix cache. Call after the forward pass, never before.
  void CommitComputed(SeqId seq, std::span<const TokenId> tokens,
                      int num_computed);

  // Gives `child` a table sharing all of `parent`'s blocks (n > 1 sampling).
  // The shared partial block is copied on the first append of either.
  Status Fork(SeqId parent, SeqId child);

  // Returns all of `seq`'s blocks (tail first, so the tail is evicted first).
  // No-op for an unknown sequence.
  void Free(SeqId seq);

  // Sliding window: releases blocks holding only positions that no query at
  // position >= next_position can see (pos <= next_position - window).
  // Returns the number released. REQUIRES: config().sliding_window > 0.
  int ReleaseOutsideWindow(SeqId seq, int next_position);

  bool Has(SeqId seq) const { return tables_.count(seq) != 0; }
  const BlockTable* Table(SeqId seq) const;
  int num_sequences() const { return static_cast<int>(tables_.size()); }

 private:
  KvCacheConfig config_;
  BlockPool pool_;
  std::unordered_map<SeqId, BlockTable> tables_;
};

}  // namespace weft::kv
