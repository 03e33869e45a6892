// BlockPool: the mechanism under the paged KV cache. It owns N fixed-size
// blocks (block_size token slots each) and knows nothing about requests or
// tensors: reference counts, a free list, a prefix cache of full blocks, and
// LRU eviction of cached blocks nobody references.
//
// Prefix cache: a cached block is an entry with an id unique for the pool's
// lifetime (never reused), registered under its parent (the entry of the
// block before it, kRootEntry for a sequence's first block) and its tokens.
// A lookup matches the parent's id and every token exactly, so a hit is
// never wrong: a block's KV is reused only after the very blocks it was
// computed after. The 64-bit hash over (parent, tokens), seeded at random
// per pool, only indexes the entries; when two contents share an index the
// later one is not cached (a miss, never a wrong hit). vLLM chains hashes
// of the contents instead, which trusts the hash.
//
// Block states (every block is in exactly one):
//   free    ref == 0, not cached; in free_ (allocated first).
//   idle    ref == 0, cached (has a hash); in the LRU list, reusable by a
//           prefix hit until it is evicted to satisfy an allocation.
//   in use  ref > 0 (cached or not); owned by one or more block tables.
// Invariant: num_free() + num_idle() + (blocks with ref > 0) == num_blocks().
//
// Thread safety: none; the scheduler's loop thread owns the pool.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "util/status.h"

namespace weft::kv {

using BlockId = int32_t;
using TokenId = int32_t;
// A prefix cache entry's id (see the top of the file).
using CacheEntryId = uint64_t;

// A table entry for a block that was released (sliding window); never read.
inline constexpr BlockId kNullBlock = -1;
// The parent of a sequence's first block.
inline constexpr CacheEntryId kRootEntry = 0;
// No entry: a chain the cache cannot follow (see CacheBlock).
inline constexpr CacheEntryId kNoEntry = ~CacheEntryId{0};

// "Copy the token slots of block src into block dst before this pass's
// forward": the pool decides, the model layer does the tensor copy.
struct BlockCopy {
  BlockId src = kNullBlock;  // the shared block being left
  BlockId dst = kNullBlock;  // the private copy the sequence now appends to
  int group = 0;             // the KV cache group (pool) both belong to
  friend bool operator==(const BlockCopy&, const BlockCopy&) = default;
};

// Counters for /metrics and tests. Token counts are in tokens, not blocks.
struct BlockPoolStats {
  int64_t num_blocks = 0;          // total blocks in the pool
  int64_t num_free = 0;            // ref 0, not cached
  int64_t num_idle_cached = 0;     // ref 0, cached (evictable)
  int64_t num_used = 0;            // ref > 0
  int64_t num_cached = 0;          // blocks with a hash (idle or in use)
  int64_t prefix_query_tokens = 0; // tokens looked up in the prefix cache
  int64_t prefix_hit_tokens = 0;   // of which found cached
  int64_t evictions = 0;           // cached blocks evicted for reuse
};

class BlockPool {
 public:
  // REQUIRES: num_blocks > 0, block_size > 0. key_seed seeds the index
  // hash; 0 draws one from std::random_device.
  BlockPool(int num_blocks, int block_size, uint64_t key_seed = 0);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  int num_free() const { return static_cast<int>(free_.size()); }
  int num_idle() const { return static_cast<int>(lru_.size()); }
  // Blocks an allocation can take now (free first, then evicting idle).
  int num_available() const { return num_free() + num_idle(); }

  // One block with ref 1 and no hash, or nullopt when none is available.
  // Takes a free block if any, else evicts the least recently used idle one.
  std::optional<BlockId> Allocate();
  // n blocks or nothing (nullopt; the pool is unchanged).
  std::optional<std::vector<BlockId>> AllocateMany(int n);

  // Reference counting. AddRef on an idle block takes it out of the LRU.
  // Release at ref 1 moves the block to the LRU tail (cached) or free list.
  void AddRef(BlockId id);
  void Release(BlockId id);
  int ref_count(BlockId id) const;
  bool is_cached(BlockId id) const;

  // Copy-on-write for appending into `id`: if only the caller holds it,
  // returns id and leaves *copy empty; else allocates a private block, drops
  // the caller's reference to `id`, sets *copy = {id, new} and returns the new
  // block. nullopt (nothing changed) when no block is available.
  std::optional<BlockId> PrepareAppend(BlockId id,
                                       std::optional<BlockCopy>* copy);

  // Registers full block `id` (ref > 0) as the entry for `tokens` after
  // `parent` and returns the entry that holds these contents now: the
  // block's new one, or an existing entry with the same parent and tokens
  // (then `id` stays uncached; its KV is the same). nullopt when neither:
  // the index is taken by other contents, or `id` is already cached as
  // something else. A caller then caches no block after this one.
  std::optional<CacheEntryId> CacheBlock(BlockId id, CacheEntryId parent,
                                         std::span<const TokenId> tokens);
  // The cached block with exactly these tokens after entry `parent`.
  std::optional<BlockId> FindCached(CacheEntryId parent,
                                    std::span<const TokenId> tokens) const;
  // The entry a cached block holds. REQUIRES: is_cached(id).
  CacheEntryId entry_of(BlockId id) const;
  // Makes every index key the same, so that any two contents collide
  // (tests of the collision path).
  void SetConstantKeysForTesting() { constant_keys_ = true; }

  void RecordPrefixQuery(int64_t query_tokens, int64_t hit_tokens);
  BlockPoolStats stats() const;
  // Recounts every block; an error describes the first inconsistency.
  Status CheckInvariants() const;

 private:
  struct Block {
    int ref = 0;
    bool cached = false;
    bool idle = false;             // in lru_ (ref == 0 && cached)
    uint64_t key = 0;              // index key (by_key_), when cached
    CacheEntryId entry = 0;        // valid when cached
    CacheEntryId parent = 0;       // valid when cached
    std::vector<TokenId> tokens;   // contents when cached (matched exactly)
    std::list<BlockId>::iterator lru_it;
  };
  uint64_t Key(CacheEntryId parent, std::span<const TokenId> tokens) const;
  bool Matches(const Block& b, CacheEntryId parent,
               std::span<const TokenId> tokens) const;
  void Uncache(BlockId id);
  Block& at(BlockId id);
  const Block& at(BlockId id) const;

  int block_size_;
  std::vector<Block> blocks_;
  std::vector<BlockId> free_;    // stack; the back is allocated next
  std::list<BlockId> lru_;       // idle cached blocks, front = least recent
  std::unordered_map<uint64_t, BlockId> by_key_;  // cached blocks
  uint64_t key_seed_;
  bool constant_keys_ = false;
  CacheEntryId next_entry_ = kRootEntry + 1;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace weft::kv
