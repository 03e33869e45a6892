#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <limits>

#include "util/strings.h"

namespace weft::kv {

Status KvCacheConfig::Validate() const {
  if (num_blocks < 1 || block_size < 1 || sliding_window < 0 ||
      local_num_blocks < 0 || local_window < 0) {
    return InvalidArgumentError(StrFormat(
        "bad KV cache config: %d blocks of %d tokens, window %d, local group "
        "%d blocks window %d",
        num_blocks, block_size, sliding_window, local_num_blocks,
        local_window));
  }
  if ((local_num_blocks > 0) != (local_window > 0)) {
    return InvalidArgumentError(StrFormat(
        "bad KV cache config: a local group needs both blocks (%d) and a "
        "window (%d)",
        local_num_blocks, local_window));
  }
  if (local_num_blocks > 0 && sliding_window > 0) {
    return InvalidArgumentError(
        "bad KV cache config: a windowed group 0 and a local group");
  }
  return OkStatus();
}

KvCacheManager::KvCacheManager(const KvCacheConfig& config) : config_(config) {
  CHECK(config.Validate().ok()) << config.Validate().ToString();
  pools_.push_back(
      std::make_unique<BlockPool>(config.num_blocks, config.block_size));
  windows_.push_back(config.sliding_window);
  if (config.local_num_blocks > 0) {
    pools_.push_back(std::make_unique<BlockPool>(config.local_num_blocks,
                                                 config.block_size));
    windows_.push_back(config.local_window);
  }
}

bool KvCacheManager::has_window() const {
  for (int w : windows_) {
    if (w > 0) return true;
  }
  return false;
}

BlockPoolStats KvCacheManager::stats() const {
  BlockPoolStats s = pools_[0]->stats();
  for (size_t g = 1; g < pools_.size(); ++g) {
    const BlockPoolStats o = pools_[g]->stats();
    s.num_blocks += o.num_blocks;
    s.num_free += o.num_free;
    s.num_idle_cached += o.num_idle_cached;
    s.num_used += o.num_used;
    s.num_cached += o.num_cached;
    s.evictions += o.evictions;
  }
  return s;
}

Status KvCacheManager::CheckInvariants() const {
  for (const auto& p : pools_) RETURN_IF_ERROR(p->CheckInvariants());
  // Every reference a table holds is counted by its pool.
  for (size_t g = 0; g < pools_.size(); ++g) {
    std::unordered_map<BlockId, int> refs;
    for (const auto& [seq, tables] : tables_) {
      if (tables.size() != pools_.size()) {
        return InternalError(StrFormat("seq %lld has %zu tables",
                                       (long long)seq, tables.size()));
      }
      const BlockTable& t = tables[g];
      if (static_cast<int>(t.blocks.size()) != BlocksFor(t.num_tokens) ||
          t.num_tokens != tables[0].num_tokens) {
        return InternalError(StrFormat("seq %lld group %zu: bad table size",
                                       (long long)seq, g));
      }
      for (BlockId b : t.blocks) {
        if (b != kNullBlock) ++refs[b];
      }
    }
    for (const auto& [b, n] : refs) {
      if (pools_[g]->ref_count(b) != n) {
        return InternalError(StrFormat("group %zu block %d: ref %d, tables %d",
                                       g, b, pools_[g]->ref_count(b), n));
      }
    }
  }
  return OkStatus();
}

int KvCacheManager::BlocksFor(int num_tokens) const {
  return (num_tokens + config_.block_size - 1) / config_.block_size;
}

namespace {

// The most blocks a group with a window of `window` tokens holds for one
// sequence fed chunks of at most max_chunk tokens, however long it grows:
// positions [start - window + 1, start + chunk) plus one block of
// misalignment.
int WindowedBlocksHeld(int window, int max_chunk, int block_size) {
  return (window - 1 + std::max(max_chunk, 1) + block_size - 1) / block_size +
         1;
}

}  // namespace

int KvCacheManager::MaxBlocksHeld(int group, int num_tokens,
                                  int max_chunk) const {
  const int all = BlocksFor(num_tokens);
  const int w = window(group);
  if (w <= 0) return all;
  return std::min(all, WindowedBlocksHeld(w, max_chunk, config_.block_size));
}

int KvCacheManager::MaxSequenceTokens(const KvCacheConfig& config,
                                      int max_chunk) {
  const int64_t bs = config.block_size;
  int64_t most = std::numeric_limits<int>::max();
  auto group = [&](int blocks, int window) {
    if (window > 0 &&
        WindowedBlocksHeld(window, max_chunk, config.block_size) <= blocks) {
      return;  // holds any length
    }
    most = std::min(most, blocks * bs);
  };
  group(config.num_blocks, config.sliding_window);
  if (config.num_groups() > 1) {
    group(config.local_num_blocks, config.local_window);
  }
  return static_cast<int>(most);
}

PrefixHit KvCacheManager::FindCachedPrefix(
    std::span<const TokenId> tokens) const {
  PrefixHit hit;
  const int bs = config_.block_size;
  if (tokens.empty()) return hit;
  const int max_blocks = (static_cast<int>(tokens.size()) - 1) / bs;
  // parents[i]: group 0's entry before block i (the local group's blocks
  // are registered under the same parents).
  std::vector<CacheEntryId> parents;
  for (int i = 0; i < max_blocks; ++i) {
    std::optional<BlockId> b = pools_[0]->FindCached(
        hit.last_entry, tokens.subspan(size_t(i) * bs, bs));
    if (!b) break;
    parents.push_back(hit.last_entry);
    hit.blocks.push_back(*b);
    hit.last_entry = pools_[0]->entry_of(*b);
  }
  if (num_groups() > 1) {
    // The local group: the longest k' <= k whose blocks covering positions
    // [k' * bs - window + 1, k' * bs) are all cached there.
    const BlockPool& lp = *pools_[kLocalGroup];
    const int w = window(kLocalGroup);
    const int k = static_cast<int>(hit.blocks.size());
    std::vector<BlockId> local(static_cast<size_t>(k), kNullBlock);
    std::vector<int> run(static_cast<size_t>(k), 0);  // cached run ending at i
    for (int i = 0; i < k; ++i) {
      std::optional<BlockId> b = lp.FindCached(
          parents[static_cast<size_t>(i)], tokens.subspan(size_t(i) * bs, bs));
      if (b) {
        local[static_cast<size_t>(i)] = *b;
        run[static_cast<size_t>(i)] = (i > 0 ? run[size_t(i) - 1] : 0) + 1;
      }
    }
    int kk = k;
    int first = 0;
    for (; kk > 0; --kk) {
      first = std::max(0, kk * bs - w + 1) / bs;
      if (run[static_cast<size_t>(kk) - 1] >= kk - first) break;
    }
    hit.blocks.resize(static_cast<size_t>(kk));
    hit.last_entry =
        kk == 0 ? kRootEntry : pools_[0]->entry_of(hit.blocks.back());
    local.resize(static_cast<size_t>(kk));
    for (int i = 0; i < std::min(first, kk); ++i) local[size_t(i)] = kNullBlock;
    hit.local_blocks = std::move(local);
  }
  hit.num_tokens = static_cast<int>(hit.blocks.size()) * bs;
  return hit;
}

int KvCacheManager::BlocksNeeded(int group, const BlockTable* t,
                                 const PrefixHit* prefix, int num_new_tokens,
                                 bool* cow) const {
  const BlockPool& pool = *pools_[static_cast<size_t>(group)];
  *cow = false;
  int touched_idle = 0;  // idle prefix blocks that stop being available
  int cur_tokens = 0;
  size_t cur_blocks = 0;
  if (t == nullptr) {
    if (prefix != nullptr) {
      const std::vector<BlockId>& blocks =
          group == 0 ? prefix->blocks : prefix->local_blocks;
      for (BlockId b : blocks) {
        if (b != kNullBlock && pool.ref_count(b) == 0) ++touched_idle;
      }
      cur_tokens = prefix->num_tokens;
      cur_blocks = blocks.size();
    }
  } else {
    cur_tokens = t->num_tokens;
    cur_blocks = t->blocks.size();
    *cow = num_new_tokens > 0 && t->num_tokens % config_.block_size != 0 &&
           t->blocks.back() != kNullBlock &&
           pool.ref_count(t->blocks.back()) > 1;
  }
  const int new_blocks = BlocksFor(cur_tokens + num_new_tokens) -
                         static_cast<int>(cur_blocks);
  return touched_idle + (*cow ? 1 : 0) + new_blocks;
}

void KvCacheManager::AdoptPrefix(const PrefixHit& prefix, std::vector<BlockTable>* tables) {
  for (int g = 0; g < num_groups(); ++g) {
    BlockTable& t = (*tables)[static_cast<size_t>(g)];
    const std::vector<BlockId>& blocks = g == 0 ? prefix.blocks : prefix.local_blocks;
    for (BlockId b : blocks) {
      if (b != kNullBlock) pools_[static_cast<size_t>(g)]->AddRef(b);
    }
    t.blocks = blocks;
    t.num_tokens = prefix.num_tokens;
    t.num_committed_blocks = static_cast<int>(blocks.size());
    t.last_entry = prefix.last_entry;
    while (t.num_released < static_cast<int>(blocks.size()) &&
           blocks[static_cast<size_t>(t.num_released)] == kNullBlock) {
      ++t.num_released;
    }
  }
}

std::optional<SlotAllocation> KvCacheManager::AllocateSlots(
    SeqId seq, int num_new_tokens, const PrefixHit* prefix, int query_tokens) {
  CHECK_GE(num_new_tokens, 0);
  const int bs = config_.block_size;
  const int ng = num_groups();
  auto it = tables_.find(seq);
  const bool is_new = it == tables_.end();
  CHECK(is_new || prefix == nullptr) << "prefix given for running seq " << seq;
  if (prefix != nullptr && ng > 1) {
    CHECK_EQ(prefix->local_blocks.size(), prefix->blocks.size());
  }

  // Count what this needs from every pool before touching anything.
  std::vector<char> cow(static_cast<size_t>(ng), 0);
  for (int g = 0; g < ng; ++g) {
    bool c = false;
    const BlockTable* t = is_new ? nullptr : &it->second[static_cast<size_t>(g)];
    if (BlocksNeeded(g, t, prefix, num_new_tokens, &c) >
        pools_[static_cast<size_t>(g)]->num_available()) {
      return std::nullopt;
    }
    cow[static_cast<size_t>(g)] = c;
  }

  if (is_new) {
    it = tables_.emplace(seq, std::vector<BlockTable>(static_cast<size_t>(ng)))
             .first;
    if (prefix != nullptr) AdoptPrefix(*prefix, &it->second);
    pools_[0]->RecordPrefixQuery(query_tokens, prefix ? prefix->num_tokens : 0);
  }
  SlotAllocation out;
  out.start_pos = it->second[0].num_tokens;
  for (int g = 0; g < ng; ++g) {
    BlockPool& pool = *pools_[static_cast<size_t>(g)];
    BlockTable& t = it->second[static_cast<size_t>(g)];
    if (cow[static_cast<size_t>(g)]) {
      std::optional<BlockCopy> copy;
      std::optional<BlockId> b = pool.PrepareAppend(t.blocks.back(), &copy);
      CHECK(b.has_value());
      t.blocks.back() = *b;
      if (copy) {
        copy->group = g;
        out.copies.push_back(*copy);
      }
    }
    const int new_blocks =
        BlocksFor(t.num_tokens + num_new_tokens) - static_cast<int>(t.blocks.size());
    for (int i = 0; i < new_blocks; ++i) {
      std::optional<BlockId> b = pool.Allocate();
      CHECK(b.has_value());
      t.blocks.push_back(*b);
    }
    if (g == 0) {
      out.slots.reserve(static_cast<size_t>(num_new_tokens));
      for (int p = t.num_tokens; p < t.num_tokens + num_new_tokens; ++p) {
        BlockId b = t.blocks[static_cast<size_t>(p / bs)];
        CHECK_NE(b, kNullBlock);
        out.slots.push_back(int64_t{b} * bs + p % bs);
      }
    }
    t.num_tokens += num_new_tokens;
  }
  return out;
}

void KvCacheManager::CommitComputed(SeqId seq, std::span<const TokenId> tokens,
                                    int num_computed) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  const int bs = config_.block_size;
  const int full = num_computed / bs;
  std::vector<BlockTable>& tables = it->second;
  const int first = tables[0].num_committed_blocks;
  // parents[i - first]: group 0's entry before block i.
  std::vector<CacheEntryId> parents;
  for (size_t g = 0; g < tables.size(); ++g) {
    BlockTable& t = tables[g];
    CHECK_LE(num_computed, t.num_tokens);
    CHECK_LE(num_computed, static_cast<int>(tokens.size()));
    CHECK_EQ(t.num_committed_blocks, first);  // the groups commit together
    for (int i = first; i < full; ++i) {
      std::span<const TokenId> blk = tokens.subspan(size_t(i) * bs, bs);
      const BlockId b = t.blocks[static_cast<size_t>(i)];
      if (g == 0) {
        parents.push_back(t.last_entry);
        if (t.last_entry == kNoEntry) continue;
        // A released block (never computed here) breaks the chain.
        std::optional<CacheEntryId> e;
        if (b != kNullBlock) e = pools_[g]->CacheBlock(b, t.last_entry, blk);
        t.last_entry = e.value_or(kNoEntry);
      } else {
        const CacheEntryId parent = parents[static_cast<size_t>(i - first)];
        if (b != kNullBlock && parent != kNoEntry) {
          (void)pools_[g]->CacheBlock(b, parent, blk);
        }
      }
    }
    t.num_committed_blocks = std::max(t.num_committed_blocks, full);
  }
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
  std::vector<BlockTable> copy = it->second;
  for (size_t g = 0; g < copy.size(); ++g) {
    for (BlockId b : copy[g].blocks) {
      if (b != kNullBlock) pools_[g]->AddRef(b);
    }
  }
  tables_.emplace(child, std::move(copy));
  return OkStatus();
}

void KvCacheManager::Free(SeqId seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  for (size_t g = 0; g < it->second.size(); ++g) {
    const std::vector<BlockId>& blocks = it->second[g].blocks;
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
      if (*b != kNullBlock) pools_[g]->Release(*b);
    }
  }
  tables_.erase(it);
}

void KvCacheManager::Truncate(SeqId seq, int new_len) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  const int keep = BlocksFor(new_len);
  for (size_t g = 0; g < it->second.size(); ++g) {
    BlockTable& t = it->second[g];
    CHECK_LE(new_len, t.num_tokens);
    CHECK_LE(t.num_committed_blocks * config_.block_size, new_len);
    while (static_cast<int>(t.blocks.size()) > keep) {
      if (t.blocks.back() != kNullBlock) pools_[g]->Release(t.blocks.back());
      t.blocks.pop_back();
    }
    t.num_tokens = new_len;
  }
}

int KvCacheManager::ReleaseOutsideWindow(SeqId seq, int next_position) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return 0;
  const int bs = config_.block_size;
  int released = 0;
  for (size_t g = 0; g < it->second.size(); ++g) {
    if (windows_[g] <= 0) continue;
    BlockTable& t = it->second[g];
    // Positions <= last_dead are invisible to every future query.
    const int last_dead = next_position - windows_[g];
    // Block i holds [i*bs, (i+1)*bs): dead when (i+1)*bs-1 <= last_dead.
    const int dead_blocks =
        std::min(last_dead >= 0 ? (last_dead + 1) / bs : 0,
                 static_cast<int>(t.blocks.size()));
    for (int i = t.num_released; i < dead_blocks; ++i) {
      BlockId& b = t.blocks[static_cast<size_t>(i)];
      if (b == kNullBlock) continue;
      pools_[g]->Release(b);
      b = kNullBlock;
      ++released;
    }
    t.num_released = std::max(t.num_released, dead_blocks);
  }
  return released;
}

const BlockTable* KvCacheManager::Table(SeqId seq, int group) const {
  auto it = tables_.find(seq);
  if (it == tables_.end() || group < 0 ||
      static_cast<size_t>(group) >= it->second.size()) {
    return nullptr;
  }
  return &it->second[static_cast<size_t>(group)];
}

}  // namespace weft::kv
