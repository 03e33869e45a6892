#include "kv/block_pool.h"

#include <algorithm>
#include <random>

#include "util/strings.h"

namespace weft::kv {
namespace {

// splitmix64 finaliser: a cheap, well-mixed 64-bit permutation.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t RandomSeed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ rd() ^ 1;  // never 0
}

BlockPool::BlockPool(int num_blocks, int block_size, uint64_t key_seed)
    : block_size_(block_size),
      blocks_(static_cast<size_t>(num_blocks)),
      key_seed_(key_seed != 0 ? key_seed : RandomSeed()) {
  CHECK_GT(num_blocks, 0);
  CHECK_GT(block_size, 0);
  free_.reserve(blocks_.size());
  // Block 0 is allocated first.
  for (BlockId id = num_blocks - 1; id >= 0; --id) free_.push_back(id);
}

BlockPool::Block& BlockPool::at(BlockId id) {
  CHECK(id >= 0 && id < num_blocks()) << "bad block id " << id;
  return blocks_[static_cast<size_t>(id)];
}

const BlockPool::Block& BlockPool::at(BlockId id) const {
  CHECK(id >= 0 && id < num_blocks()) << "bad block id " << id;
  return blocks_[static_cast<size_t>(id)];
}

std::optional<BlockId> BlockPool::Allocate() {
  BlockId id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    id = lru_.front();
    lru_.pop_front();
    Block& b = at(id);
    b.idle = false;
    Uncache(id);
    ++evictions_;
  } else {
    return std::nullopt;
  }
  Block& b = at(id);
  CHECK_EQ(b.ref, 0);
  b.ref = 1;
  return id;
}

std::optional<std::vector<BlockId>> BlockPool::AllocateMany(int n) {
  if (n < 0 || n > num_available()) return std::nullopt;
  std::vector<BlockId> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(*Allocate());
  return out;
}

void BlockPool::AddRef(BlockId id) {
  Block& b = at(id);
  if (b.idle) {
    CHECK_EQ(b.ref, 0);
    lru_.erase(b.lru_it);
    b.idle = false;
  } else {
    CHECK_GT(b.ref, 0) << "AddRef on free block " << id;
  }
  ++b.ref;
}

void BlockPool::Release(BlockId id) {
  Block& b = at(id);
  CHECK_GT(b.ref, 0) << "double release of block " << id;
  if (--b.ref > 0) return;
  if (b.cached) {
    b.lru_it = lru_.insert(lru_.end(), id);
    b.idle = true;
  } else {
    free_.push_back(id);
  }
}

int BlockPool::ref_count(BlockId id) const { return at(id).ref; }
bool BlockPool::is_cached(BlockId id) const { return at(id).cached; }

CacheEntryId BlockPool::entry_of(BlockId id) const {
  const Block& b = at(id);
  CHECK(b.cached);
  return b.entry;
}

std::optional<BlockId> BlockPool::PrepareAppend(
    BlockId id, std::optional<BlockCopy>* copy) {
  copy->reset();
  CHECK_GT(at(id).ref, 0);
  if (at(id).ref == 1) return id;
  std::optional<BlockId> fresh = Allocate();
  if (!fresh) return std::nullopt;
  Release(id);
  *copy = BlockCopy{id, *fresh};
  return fresh;
}

uint64_t BlockPool::Key(CacheEntryId parent,
                        std::span<const TokenId> tokens) const {
  if (constant_keys_) return 0;
  uint64_t h = Mix(key_seed_ ^ Mix(parent));
  for (TokenId t : tokens) h = Mix(h ^ static_cast<uint32_t>(t));
  return h;
}

bool BlockPool::Matches(const Block& b, CacheEntryId parent,
                        std::span<const TokenId> tokens) const {
  return b.cached && b.parent == parent &&
         std::equal(tokens.begin(), tokens.end(), b.tokens.begin(),
                    b.tokens.end());
}

std::optional<CacheEntryId> BlockPool::CacheBlock(
    BlockId id, CacheEntryId parent, std::span<const TokenId> tokens) {
  Block& b = at(id);
  CHECK_GT(b.ref, 0) << "caching an unowned block " << id;
  CHECK_EQ(static_cast<int>(tokens.size()), block_size_);
  CHECK_NE(parent, kNoEntry);
  if (b.cached) {
    if (Matches(b, parent, tokens)) return b.entry;
    return std::nullopt;
  }
  const uint64_t key = Key(parent, tokens);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) {
    const Block& other = at(it->second);
    if (Matches(other, parent, tokens)) return other.entry;
    return std::nullopt;  // an index collision: the first entry stays
  }
  b.cached = true;
  b.key = key;
  b.entry = next_entry_++;
  b.parent = parent;
  b.tokens.assign(tokens.begin(), tokens.end());
  by_key_.emplace(key, id);
  return b.entry;
}

std::optional<BlockId> BlockPool::FindCached(
    CacheEntryId parent, std::span<const TokenId> tokens) const {
  if (parent == kNoEntry) return std::nullopt;
  auto it = by_key_.find(Key(parent, tokens));
  if (it == by_key_.end() || !Matches(at(it->second), parent, tokens)) {
    return std::nullopt;
  }
  return it->second;
}

void BlockPool::Uncache(BlockId id) {
  Block& b = at(id);
  if (!b.cached) return;
  by_key_.erase(b.key);
  b.cached = false;
  b.tokens.clear();
  b.tokens.shrink_to_fit();
}

void BlockPool::RecordPrefixQuery(int64_t query_tokens, int64_t hit_tokens) {
  prefix_query_tokens_ += query_tokens;
  prefix_hit_tokens_ += hit_tokens;
}

BlockPoolStats BlockPool::stats() const {
  BlockPoolStats s;
  s.num_blocks = num_blocks();
  s.num_free = num_free();
  s.num_idle_cached = num_idle();
  s.num_cached = static_cast<int64_t>(by_key_.size());
  s.num_used = s.num_blocks - s.num_free - s.num_idle_cached;
  s.prefix_query_tokens = prefix_query_tokens_;
  s.prefix_hit_tokens = prefix_hit_tokens_;
  s.evictions = evictions_;
  return s;
}

Status BlockPool::CheckInvariants() const {
  int free_count = 0, idle_count = 0, used_count = 0, cached_count = 0;
  std::vector<char> in_free(blocks_.size(), 0);
  for (BlockId id : free_) {
    if (in_free[static_cast<size_t>(id)]) {
      return InternalError(StrFormat("block %d twice in the free list", id));
    }
    in_free[static_cast<size_t>(id)] = 1;
  }
  for (BlockId id = 0; id < num_blocks(); ++id) {
    const Block& b = at(id);
    if (b.ref < 0) return InternalError(StrFormat("block %d ref < 0", id));
    if (b.cached) ++cached_count;
    if (b.ref > 0) {
      ++used_count;
      if (b.idle || in_free[static_cast<size_t>(id)]) {
        return InternalError(StrFormat("block %d in use but listed free", id));
      }
    } else if (b.cached) {
      ++idle_count;
      if (!b.idle) return InternalError(StrFormat("cached %d not in LRU", id));
    } else {
      ++free_count;
      if (!in_free[static_cast<size_t>(id)]) {
        return InternalError(StrFormat("block %d leaked (ref 0)", id));
      }
    }
    if (b.cached) {
      auto it = by_key_.find(b.key);
      if (it == by_key_.end() || it->second != id) {
        return InternalError(StrFormat("block %d key not indexed", id));
      }
    }
  }
  if (free_count != num_free() || idle_count != num_idle() ||
      cached_count != static_cast<int>(by_key_.size()) ||
      free_count + idle_count + used_count != num_blocks()) {
    return InternalError(StrFormat(
        "counts: free %d/%d idle %d/%d cached %d/%zu used %d total %d",
        free_count, num_free(), idle_count, num_idle(), cached_count,
        by_key_.size(), used_count, num_blocks()));
  }
  return OkStatus();
}

}  // namespace weft::kv
