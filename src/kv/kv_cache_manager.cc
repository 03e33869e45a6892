#include "kv/kv_cache_manager.h"

#include <algorithm>

#include "util/strings.h"

namespace weft::kv {

KvCacheManager::KvCacheManager(const KvCacheConfig& config)
    : config_(config), pool_(config.num_blocks, config.block_size) {
  CHECK_GE(config.sliding_window, 0);
}

int KvCacheManager::BlocksFor(int num_tokens) const {
  return (num_tokens + config_.block_size - 1) / config_.block_size;
}

PrefixHit KvCacheManager::FindCachedPrefix(
    std::span<const TokenId> tokens) const {
  PrefixHit hit;
  const int bs = config_.block_size;
  if (tokens.empty()) return hit;
  const int max_blocks = (static_cast<int>(tokens.size()) - 1) / bs;
  for (int i = 0; i < max_blocks; ++i) {
    std::optional<BlockId> b =
        pool_.FindCached(hit.last_hash, tokens.subspan(size_t(i) * bs, bs));
    if (!b) break;
    hit.blocks.push_back(*b);
    hit.last_hash = pool_.hash_of(*b);
  }
  hit.num_tokens = static_cast<int>(hit.blocks.size()) * bs;
  return hit;
}

std::optional<SlotAllocation> KvCacheManager::AllocateSlots(
    SeqId seq, int num_new_tokens, const PrefixHit* prefix, int query_tokens) {
  CHECK_GE(num_new_tokens, 0);
  const int bs = config_.block_size;
  auto it = tables_.find(seq);
  const bool is_new = it == tables_.end();
  CHECK(is_new || prefix == nullptr) << "prefix given for running seq " << seq;

  // Count what this needs from the pool before touching anything.
  int touched_idle = 0;  // idle prefix blocks that stop being available
  int cur_tokens = 0;
  size_t cur_blocks = 0;
  bool needs_cow = false;
  if (is_new) {
    if (prefix != nullptr) {
      for (BlockId b : prefix->blocks) {
        if (pool_.ref_count(b) == 0) ++touched_idle;
      }
      cur_tokens = prefix->num_tokens;
      cur_blocks = prefix->blocks.size();
    }
  } else {
    const BlockTable& t = it->second;
    cur_tokens = t.num_tokens;
    cur_blocks = t.blocks.size();
    needs_cow = num_new_tokens > 0 && t.num_tokens % bs != 0 &&
                t.blocks.back() != kNullBlock &&
                pool_.ref_count(t.blocks.back()) > 1;
  }
  const int new_blocks = BlocksFor(cur_tokens + num_new_tokens) -
                         static_cast<int>(cur_blocks);
  if (touched_idle + (needs_cow ? 1 : 0) + new_blocks > pool_.num_available()) {
    return std::nullopt;
  }

  if (is_new) {
    it = tables_.emplace(seq, BlockTable{}).first;
    if (prefix != nullptr) {
      for (BlockId b : prefix->blocks) pool_.AddRef(b);
      it->second.blocks = prefix->blocks;
      it->second.num_tokens = prefix->num_tokens;
      it->second.num_committed_blocks = static_cast<int>(prefix->blocks.size());
      it->second.last_hash = prefix->last_hash;
    }
    pool_.RecordPrefixQuery(query_tokens, prefix ? prefix->num_tokens : 0);
  }
  BlockTable& t = it->second;
  SlotAllocation out;
  out.start_pos = t.num_tokens;
  if (needs_cow) {
    std::optional<BlockCopy> copy;
    std::optional<BlockId> b = pool_.PrepareAppend(t.blocks.back(), &copy);
    CHECK(b.has_value());
    t.blocks.back() = *b;
    if (copy) out.copies.push_back(*copy);
  }
  for (int i = 0; i < new_blocks; ++i) {
    std::optional<BlockId> b = pool_.Allocate();
    CHECK(b.has_value());
    t.blocks.push_back(*b);
  }
  out.slots.reserve(static_cast<size_t>(num_new_tokens));
  for (int p = t.num_tokens; p < t.num_tokens + num_new_tokens; ++p) {
    BlockId b = t.blocks[static_cast<size_t>(p / bs)];
    CHECK_NE(b, kNullBlock);
    out.slots.push_back(int64_t{b} * bs + p % bs);
  }
  t.num_tokens += num_new_tokens;
  return out;
}

void KvCacheManager::CommitComputed(SeqId seq, std::span<const TokenId> tokens,
                                    int num_computed) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  BlockTable& t = it->second;
  CHECK_LE(num_computed, t.num_tokens);
  CHECK_LE(num_computed, static_cast<int>(tokens.size()));
  const int bs = config_.block_size;
  const int full = num_computed / bs;
  for (int i = t.num_committed_blocks; i < full; ++i) {
    std::span<const TokenId> blk = tokens.subspan(size_t(i) * bs, bs);
    BlockId b = t.blocks[static_cast<size_t>(i)];
    if (b != kNullBlock) pool_.CacheBlock(b, t.last_hash, blk);
    // The chain continues from the contents, whichever block holds them.
    t.last_hash = BlockPool::HashBlock(t.last_hash, blk);
  }
  t.num_committed_blocks = std::max(t.num_committed_blocks, full);
}

Status KvCacheManager::Fork(SeqId parent, SeqId child) {
  auto it = tables_.find(parent);
  if (it == tables_.end()) {
    return NotFoundError(StrFormat("no sequence %lld", (long long)parent));
  }
  if (tables_.count(child)) {
    return InvalidArgumentError(
        StrFormat("sequence %lld exists", (long long)child));
  }
  BlockTable copy = it->second;
  for (BlockId b : copy.blocks) {
    if (b != kNullBlock) pool_.AddRef(b);
  }
  tables_.emplace(child, std::move(copy));
  return OkStatus();
}

void KvCacheManager::Free(SeqId seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  const std::vector<BlockId>& blocks = it->second.blocks;
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
    if (*b != kNullBlock) pool_.Release(*b);
  }
  tables_.erase(it);
}

int KvCacheManager::ReleaseOutsideWindow(SeqId seq, int next_position) {
  CHECK_GT(config_.sliding_window, 0);
  auto it = tables_.find(seq);
  if (it == tables_.end()) return 0;
  BlockTable& t = it->second;
  const int bs = config_.block_size;
  // Positions <= last_dead are invisible to every future query.
  const int last_dead = next_position - config_.sliding_window;
  // Block i holds positions [i*bs, (i+1)*bs): dead when (i+1)*bs-1 <= last_dead.
  const int dead_blocks =
      std::min(last_dead >= 0 ? (last_dead + 1) / bs : 0,
               static_cast<int>(t.blocks.size()));
  int released = 0;
  for (int i = t.num_released; i < dead_blocks; ++i) {
    BlockId& b = t.blocks[static_cast<size_t>(i)];
    if (b == kNullBlock) continue;
    pool_.Release(b);
    b = kNullBlock;
    ++released;
  }
  t.num_released = std::max(t.num_released, dead_blocks);
  return released;
}

const BlockTable* KvCacheManager::Table(SeqId seq) const {
  auto it = tables_.find(seq);
  return it == tables_.end() ? nullptr : &it->second;
}

}  // namespace weft::kv
