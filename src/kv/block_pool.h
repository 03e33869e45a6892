// BlockPool: the mechanism under the paged KV cache. It owns N fixed-size
// blocks (block_size token slots each) and knows nothing about requests or
// tensors: reference counts, a free list, a prefix cache of full blocks keyed
// by a hash chain, and LRU eviction of cached blocks nobody references.
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
using BlockHash = uint64_t;

// A table entry for a block that was released (sliding window); never read.
inline constexpr BlockId kNullBlock = -1;
// The parent hash of a sequence's first block.
inline constexpr BlockHash kRootHash = 0x9e3779b97f4a7c15ULL;

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
  // REQUIRES: num_blocks > 0, block_size > 0.
  BlockPool(int num_blocks, int block_size);
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

  // The hash of a full block: a chain over the parent block's hash.
  static BlockHash HashBlock(BlockHash parent, std::span<const TokenId> tokens);
  // Registers full block `id` (ref > 0) in the prefix cache. No-op when the
  // block is already cached or another block holds the same contents.
  void CacheBlock(BlockId id, BlockHash parent,
                  std::span<const TokenId> tokens);
  // The cached block with exactly these contents after `parent`, or nullopt.
  // Hash collisions are ruled out by comparing the stored tokens.
  std::optional<BlockId> FindCached(BlockHash parent,
                                    std::span<const TokenId> tokens) const;
  // The hash a cached block is registered under. REQUIRES: is_cached(id).
  BlockHash hash_of(BlockId id) const;

  void RecordPrefixQuery(int64_t query_tokens, int64_t hit_tokens);
  BlockPoolStats stats() const;
  // Recounts every block; an error describes the first inconsistency.
  Status CheckInvariants() const;

 private:
  struct Block {
    int ref = 0;
    bool cached = false;
    bool idle = false;             // in lru_ (ref == 0 && cached)
    BlockHash hash = 0;            // valid when cached
    BlockHash parent = 0;          // valid when cached
    std::vector<TokenId> tokens;   // contents when cached (collision check)
    std::list<BlockId>::iterator lru_it;
  };
  void Uncache(BlockId id);
  Block& at(BlockId id);
  const Block& at(BlockId id) const;

  int block_size_;
  std::vector<Block> blocks_;
  std::vector<BlockId> free_;    // stack; the back is allocated next
  std::list<BlockId> lru_;       // idle cached blocks, front = least recent
  std::unordered_map<BlockHash, BlockId> by_hash_;
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t evictions_ = 0;
};

}  // namespace weft::kv
