#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>
#include <vector>

namespace weft::kv {
namespace {

std::vector<TokenId> Tokens(int first, int n) {
  std::vector<TokenId> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

KvCacheManager Make(int blocks, int bs, int window = 0, int local_blocks = 0,
                    int local_window = 0) {
  KvCacheConfig c;
  c.num_blocks = blocks;
  c.block_size = bs;
  c.sliding_window = window;
  c.local_num_blocks = local_blocks;
  c.local_window = local_window;
  return KvCacheManager(c);
}

TEST(KvCacheManagerTest, SlotsFollowTheBlockTable) {
  KvCacheManager m = Make(8, 4);
  auto a = m.AllocateSlots(1, 6);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->start_pos, 0);
  const BlockTable* t = m.Table(1);
  ASSERT_EQ(t->blocks.size(), 2u);
  std::vector<int64_t> want;
  for (int p = 0; p < 6; ++p) want.push_back(t->blocks[p / 4] * 4 + p % 4);
  EXPECT_EQ(a->slots, want);
  auto d = m.AllocateSlots(1, 1);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->start_pos, 6);
  EXPECT_EQ(d->slots, (std::vector<int64_t>{t->blocks[1] * 4 + 2}));
  EXPECT_EQ(m.Table(1)->num_tokens, 7);
}

TEST(KvCacheManagerTest, ExhaustionReturnsNulloptAndChangesNothing) {
  KvCacheManager m = Make(3, 4);
  ASSERT_TRUE(m.AllocateSlots(1, 8).has_value());
  EXPECT_FALSE(m.AllocateSlots(2, 5).has_value());
  EXPECT_FALSE(m.Has(2));
  EXPECT_EQ(m.pool().num_free(), 1);
  EXPECT_FALSE(m.AllocateSlots(1, 5).has_value());
  EXPECT_EQ(m.Table(1)->num_tokens, 8);
  EXPECT_TRUE(m.AllocateSlots(1, 4).has_value());
  m.Free(1);
  EXPECT_EQ(m.pool().num_free(), 3);
}

TEST(KvCacheManagerTest, PrefixHitFullBlocksOnlyAndNeverWholePrompt) {
  KvCacheManager m = Make(16, 4);
  std::vector<TokenId> prompt = Tokens(100, 12);  // exactly 3 blocks
  ASSERT_TRUE(m.AllocateSlots(1, 12).has_value());
  m.CommitComputed(1, prompt, 12);
  m.Free(1);
  EXPECT_EQ(m.pool().num_idle(), 3);

  // The same prompt: 2 blocks, since one token must be computed.
  PrefixHit hit = m.FindCachedPrefix(prompt);
  EXPECT_EQ(hit.num_tokens, 8);
  // A longer prompt with the same start reuses all three.
  std::vector<TokenId> longer = prompt;
  longer.push_back(7);
  EXPECT_EQ(m.FindCachedPrefix(longer).num_tokens, 12);
  // A prompt diverging inside block 1 reuses block 0 only.
  std::vector<TokenId> diverge = prompt;
  diverge[5] = -3;
  EXPECT_EQ(m.FindCachedPrefix(diverge).num_tokens, 4);
  EXPECT_EQ(m.FindCachedPrefix(Tokens(0, 12)).num_tokens, 0);

  auto a = m.AllocateSlots(2, 4, &hit, 12);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->start_pos, 8);
  EXPECT_EQ(m.Table(2)->blocks[0], hit.blocks[0]);
  EXPECT_EQ(m.pool().ref_count(hit.blocks[0]), 1);
  BlockPoolStats s = m.pool().stats();
  EXPECT_EQ(s.prefix_query_tokens, 12);
  EXPECT_EQ(s.prefix_hit_tokens, 8);
  m.Free(2);
  EXPECT_TRUE(m.pool().CheckInvariants().ok());
}

TEST(KvCacheManagerTest, PartialComputeCommitsOnlyComputedFullBlocks) {
  KvCacheManager m = Make(16, 4);
  std::vector<TokenId> prompt = Tokens(0, 10);
  ASSERT_TRUE(m.AllocateSlots(1, 10).has_value());
  m.CommitComputed(1, prompt, 5);  // only block 0 is computed and full
  EXPECT_EQ(m.FindCachedPrefix(Tokens(0, 20)).num_tokens, 4);
  m.CommitComputed(1, prompt, 10);
  EXPECT_EQ(m.FindCachedPrefix(Tokens(0, 20)).num_tokens, 8);
}

// Rejected speculative tokens: Truncate frees the blocks past the new end
// in both groups, the next allocation reuses the kept block's slots, and
// only verified (committed) blocks ever reach the prefix cache.
TEST(KvCacheManagerTest, TruncateFreesTheTailAndCachesOnlyVerifiedBlocks) {
  for (int local : {0, 16}) {
    SCOPED_TRACE(local);
    KvCacheManager m = Make(16, 4, 0, local, local > 0 ? 8 : 0);
    const int idle = m.pool().num_available();
    std::vector<TokenId> toks = Tokens(0, 20);
    ASSERT_TRUE(m.AllocateSlots(1, 5).has_value());
    m.CommitComputed(1, toks, 5);
    // 1 verified + 6 drafted tokens: positions 5..11 (blocks 1 and 2).
    auto a = m.AllocateSlots(1, 7);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(m.Table(1)->blocks.size(), 3u);
    m.Truncate(1, 7);  // one draft accepted: positions 0..6 verified
    EXPECT_EQ(m.Table(1)->num_tokens, 7);
    ASSERT_EQ(m.Table(1)->blocks.size(), 2u);
    if (local > 0) {
      EXPECT_EQ(m.Table(1, kLocalGroup)->blocks.size(), 2u);
      EXPECT_EQ(m.pool(kLocalGroup).num_available(), local - 2);
    }
    EXPECT_EQ(m.pool().num_available(), idle - 2);
    m.CommitComputed(1, toks, 7);
    // Block 1 holds positions 4..7; 7 is unverified: not cached yet.
    EXPECT_EQ(m.FindCachedPrefix(Tokens(0, 20)).num_tokens, 4);
    auto b = m.AllocateSlots(1, 1);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->start_pos, 7);
    EXPECT_EQ(b->slots[0], int64_t{m.Table(1)->blocks[1]} * 4 + 3);
    m.CommitComputed(1, toks, 8);
    EXPECT_EQ(m.FindCachedPrefix(Tokens(0, 20)).num_tokens, 8);
    EXPECT_TRUE(m.CheckInvariants().ok());
    m.Free(1);
    EXPECT_EQ(m.pool().num_available(), idle);
    m.Truncate(1, 0);  // unknown sequence: no-op
  }
}

// A block after one that could not be cached (its index taken by other
// contents) is not cached either: were it registered under the contents'
// neighbour, a request with that neighbour's prefix would reuse KV computed
// after different tokens.
TEST(KvCacheManagerTest, NothingIsCachedAfterABlockThatCouldNotBe) {
  KvCacheManager m = Make(16, 4);
  m.pool().SetConstantKeysForTesting();  // every content collides
  const std::vector<TokenId> x = Tokens(0, 4), x2 = Tokens(50, 4);
  const std::vector<TokenId> y = Tokens(100, 4);
  std::vector<TokenId> a = x;
  a.push_back(1);
  ASSERT_TRUE(m.AllocateSlots(1, 5).has_value());
  m.CommitComputed(1, a, 5);  // caches x
  std::vector<TokenId> b = x2;
  b.insert(b.end(), y.begin(), y.end());
  b.push_back(1);
  ASSERT_TRUE(m.AllocateSlots(2, 9).has_value());
  m.CommitComputed(2, b, 9);  // x2 collides with x: neither it nor y cached
  EXPECT_FALSE(m.pool().is_cached(m.Table(2)->blocks[0]));
  EXPECT_FALSE(m.pool().is_cached(m.Table(2)->blocks[1]));
  std::vector<TokenId> c = x;
  c.insert(c.end(), y.begin(), y.end());
  c.push_back(9);
  const PrefixHit hit = m.FindCachedPrefix(c);
  ASSERT_EQ(hit.blocks.size(), 1u);
  EXPECT_EQ(hit.blocks[0], m.Table(1)->blocks[0]);
  EXPECT_TRUE(m.pool().CheckInvariants().ok());
}

TEST(KvCacheManagerTest, ForkSharesBlocksAndCopiesOnWrite) {
  KvCacheManager m = Make(8, 4);
  ASSERT_TRUE(m.AllocateSlots(1, 6).has_value());  // blocks: full, partial
  ASSERT_TRUE(m.Fork(1, 2).ok());
  EXPECT_FALSE(m.Fork(1, 2).ok());
  EXPECT_FALSE(m.Fork(9, 3).ok());
  const BlockId full = m.Table(1)->blocks[0];
  const BlockId partial = m.Table(1)->blocks[1];
  EXPECT_EQ(m.pool().ref_count(full), 2);
  EXPECT_EQ(m.pool().ref_count(partial), 2);

  auto a = m.AllocateSlots(2, 1);  // the child appends first: copies
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->copies.size(), 1u);
  EXPECT_EQ(a->copies[0].src, partial);
  const BlockId copy = a->copies[0].dst;
  EXPECT_EQ(m.Table(2)->blocks[1], copy);
  EXPECT_EQ(a->slots, (std::vector<int64_t>{copy * 4 + 2}));
  EXPECT_EQ(m.Table(2)->blocks[0], full);  // full blocks stay shared

  auto b = m.AllocateSlots(1, 1);  // the parent now owns `partial` alone
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->copies.empty());
  EXPECT_EQ(b->slots, (std::vector<int64_t>{partial * 4 + 2}));
  m.Free(1);
  EXPECT_EQ(m.pool().ref_count(full), 1);
  m.Free(2);
  EXPECT_EQ(m.pool().num_free(), 8);
  EXPECT_TRUE(m.pool().CheckInvariants().ok());
}

TEST(KvCacheManagerTest, CopyOnWriteCountsTowardsFit) {
  KvCacheManager m = Make(2, 4);
  ASSERT_TRUE(m.AllocateSlots(1, 6).has_value());
  ASSERT_TRUE(m.Fork(1, 2).ok());
  EXPECT_FALSE(m.AllocateSlots(2, 1).has_value());  // needs a copy block
  EXPECT_EQ(m.Table(2)->num_tokens, 6);
}

TEST(KvCacheManagerTest, SlidingWindowReleasesDeadBlocks) {
  KvCacheManager m = Make(8, 4, /*window=*/6);
  ASSERT_TRUE(m.AllocateSlots(1, 12).has_value());
  // Next query at 9 sees positions 4..9: block 0 (0..3) is dead.
  EXPECT_EQ(m.ReleaseOutsideWindow(1, 9), 1);
  EXPECT_EQ(m.Table(1)->blocks[0], kNullBlock);
  EXPECT_EQ(m.pool().num_free(), 6);
  EXPECT_EQ(m.ReleaseOutsideWindow(1, 9), 0);
  // At 10 it sees 5..10: block 1 (4..7) still partly visible.
  EXPECT_EQ(m.ReleaseOutsideWindow(1, 10), 0);
  EXPECT_EQ(m.ReleaseOutsideWindow(1, 14), 1);
  auto a = m.AllocateSlots(1, 1);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->start_pos, 12);
  m.Free(1);
  EXPECT_EQ(m.pool().num_free(), 8);
  EXPECT_TRUE(m.pool().CheckInvariants().ok());
}

// Thousands of random allocate / prefix-share / fork / commit / free /
// window-release operations; every block must come back.
TEST(KvCacheManagerTest, RandomisedOperationsLeakNothing) {
  int64_t local_hits = 0;  // prefix hits with a local group
  for (int seed = 0; seed < 60; ++seed) {
    std::mt19937 rng(static_cast<unsigned>(seed));
    const int bs = 1 + static_cast<int>(rng() % 8);
    // Seeds % 4: 0, 1 one full group; 2 a local group; 3 windowed group 0.
    const int window = 8 + static_cast<int>(rng() % 16);
    KvCacheManager m =
        seed % 4 == 2
            ? Make(32 + static_cast<int>(rng() % 64), bs, 0,
                   8 + static_cast<int>(rng() % 40), window)
            : Make(32 + static_cast<int>(rng() % 64), bs,
                   seed % 4 == 3 ? window : 0);
    std::map<SeqId, std::vector<TokenId>> live;  // seq -> its tokens
    SeqId next = 0;
    for (int op = 0; op < 2000; ++op) {
      const int kind = static_cast<int>(rng() % 10);
      if (kind < 3 || live.empty()) {  // a new sequence, maybe a prefix hit
        std::vector<TokenId> toks;
        const int n = 1 + static_cast<int>(rng() % 40);
        const int family = static_cast<int>(rng() % 3);  // shared prefixes
        for (int i = 0; i < n; ++i) toks.push_back(family * 1000 + i);
        PrefixHit hit = m.FindCachedPrefix(toks);
        ASSERT_LT(hit.num_tokens, n);
        const int todo = n - hit.num_tokens;
        if (m.AllocateSlots(next, todo, &hit, n)) {
          m.CommitComputed(next, toks, n);
          live[next] = toks;
        }
        ++next;
      } else {
        auto it = live.begin();
        std::advance(it, static_cast<long>(rng() % live.size()));
        const SeqId s = it->first;
        if (kind < 6) {  // decode some tokens
          const int n = 1 + static_cast<int>(rng() % 3);
          if (m.AllocateSlots(s, n)) {
            for (int i = 0; i < n; ++i) {
              it->second.push_back(static_cast<TokenId>(rng() % 50));
            }
            m.CommitComputed(s, it->second, m.Table(s)->num_tokens);
            if (m.has_window()) {
              m.ReleaseOutsideWindow(s, m.Table(s)->num_tokens);
            }
          }
        } else if (kind < 8) {
          ASSERT_TRUE(m.Fork(s, next).ok());
          live[next++] = it->second;
        } else {
          m.Free(s);
          live.erase(it);
        }
      }
      if (op % 97 == 0) {
        const Status st = m.CheckInvariants();
        ASSERT_TRUE(st.ok()) << op << ": " << st.ToString();
      }
    }
    for (auto& [s, toks] : live) m.Free(s);
    EXPECT_EQ(m.num_sequences(), 0);
    ASSERT_TRUE(m.CheckInvariants().ok());
    for (int g = 0; g < m.num_groups(); ++g) {
      const BlockPoolStats st = m.pool(g).stats();
      EXPECT_EQ(st.num_free + st.num_idle_cached, st.num_blocks) << seed;
      EXPECT_EQ(st.num_used, 0) << seed;
    }
    const BlockPoolStats all = m.stats();
    EXPECT_EQ(all.num_used, 0);
    EXPECT_EQ(all.num_blocks,
              m.config().num_blocks + m.config().local_num_blocks);
    local_hits += m.num_groups() > 1 ? all.prefix_hit_tokens : 0;
  }
  EXPECT_GT(local_hits, 0);
}

// Two groups: a local group of windowed layers next to the full group.
TEST(KvCacheManagerTest, GroupsAllocateAllOrNothing) {
  KvCacheManager m = Make(8, 4, 0, /*local_blocks=*/2, /*local_window=*/6);
  ASSERT_EQ(m.num_groups(), 2);
  ASSERT_TRUE(m.AllocateSlots(1, 8).has_value());  // 2 + 2 blocks
  EXPECT_EQ(m.pool(kLocalGroup).num_free(), 0);
  // The full group has room, the local one not: nothing changes.
  EXPECT_FALSE(m.AllocateSlots(2, 4).has_value());
  EXPECT_FALSE(m.Has(2));
  EXPECT_EQ(m.pool().num_free(), 6);
  EXPECT_FALSE(m.AllocateSlots(1, 1).has_value());
  EXPECT_EQ(m.Table(1)->num_tokens, 8);
  EXPECT_EQ(m.Table(1, kLocalGroup)->num_tokens, 8);
  // Next query at 8 sees 3..8: local block 0 (0..3) is still visible; at
  // 10 (sees 5..10) it is dead and comes back to the local pool only.
  EXPECT_EQ(m.ReleaseOutsideWindow(1, 8), 0);
  EXPECT_EQ(m.ReleaseOutsideWindow(1, 10), 1);
  EXPECT_EQ(m.Table(1, kLocalGroup)->blocks[0], kNullBlock);
  EXPECT_NE(m.Table(1)->blocks[0], kNullBlock);
  auto a = m.AllocateSlots(1, 4);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->start_pos, 8);
  EXPECT_EQ(m.Table(1, kLocalGroup)->blocks.size(), 3u);
  const BlockPoolStats st = m.stats();
  EXPECT_EQ(st.num_blocks, 10);
  EXPECT_EQ(st.num_used, 3 + 2);
  EXPECT_TRUE(m.CheckInvariants().ok());
  m.Free(1);
  EXPECT_EQ(m.stats().num_free, 10);
  EXPECT_TRUE(m.CheckInvariants().ok());
}

TEST(KvCacheManagerTest, CopyOnWriteInBothGroups) {
  KvCacheManager m = Make(8, 4, 0, 8, 16);
  ASSERT_TRUE(m.AllocateSlots(1, 6).has_value());
  ASSERT_TRUE(m.Fork(1, 2).ok());
  auto a = m.AllocateSlots(2, 1);
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->copies.size(), 2u);
  EXPECT_EQ(a->copies[0].group, kFullGroup);
  EXPECT_EQ(a->copies[1].group, kLocalGroup);
  EXPECT_EQ(a->copies[1].src, m.Table(1, kLocalGroup)->blocks[1]);
  EXPECT_EQ(a->copies[1].dst, m.Table(2, kLocalGroup)->blocks[1]);
  EXPECT_TRUE(m.CheckInvariants().ok());
  m.Free(1);
  m.Free(2);
  EXPECT_EQ(m.stats().num_used, 0);
}

// vLLM's sliding-window hit: the local group only needs the blocks covering
// the last window - 1 tokens of the prefix; without them the hit shrinks.
TEST(KvCacheManagerTest, PrefixHitNeedsLocalBlocksInTheWindow) {
  KvCacheManager m = Make(32, 4, 0, /*local_blocks=*/8, /*local_window=*/6);
  const std::vector<TokenId> prompt = Tokens(100, 24);  // 6 blocks
  ASSERT_TRUE(m.AllocateSlots(1, 24).has_value());
  m.CommitComputed(1, prompt, 24);
  EXPECT_EQ(m.ReleaseOutsideWindow(1, 24), 4);  // sees 19..24: blocks 4, 5
  m.Free(1);  // local LRU: 0 1 2 3 5 4 (released ones first)
  EXPECT_EQ(m.pool(kLocalGroup).num_idle(), 6);
  // Another sequence takes the 2 free local blocks and evicts 0, 1, 2.
  ASSERT_TRUE(m.AllocateSlots(2, 20).has_value());
  EXPECT_EQ(m.pool(kLocalGroup).stats().evictions, 3);

  // The whole prompt (+1): full group hit of 6 blocks; the local group has
  // blocks 4 and 5, which cover positions 16..23 ⊇ 19..23.
  std::vector<TokenId> longer = prompt;
  longer.push_back(7);
  PrefixHit hit = m.FindCachedPrefix(longer);
  EXPECT_EQ(hit.num_tokens, 24);
  ASSERT_EQ(hit.local_blocks.size(), 6u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(hit.local_blocks[i], kNullBlock);
  EXPECT_NE(hit.local_blocks[4], kNullBlock);
  EXPECT_NE(hit.local_blocks[5], kNullBlock);
  auto a = m.AllocateSlots(3, 1, &hit, 25);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->start_pos, 24);
  EXPECT_EQ(m.Table(3, kLocalGroup)->num_released, 4);
  EXPECT_EQ(m.stats().prefix_hit_tokens, 24);
  EXPECT_TRUE(m.CheckInvariants().ok());

  // A 17-token prompt: the full group holds 4 blocks, but every usable
  // length needs an evicted local block (e.g. 16 needs blocks 2, 3).
  PrefixHit short_hit = m.FindCachedPrefix(Tokens(100, 17));
  EXPECT_EQ(short_hit.num_tokens, 0);
  EXPECT_TRUE(short_hit.local_blocks.empty());
  m.Free(2);
  m.Free(3);
  EXPECT_EQ(m.stats().num_used, 0);
  EXPECT_TRUE(m.CheckInvariants().ok());
}

TEST(KvCacheManagerTest, ConfigValidation) {
  KvCacheConfig c;
  EXPECT_TRUE(c.Validate().ok());
  c.local_num_blocks = 4;  // no window
  EXPECT_FALSE(c.Validate().ok());
  c.local_window = 8;
  EXPECT_TRUE(c.Validate().ok());
  c.sliding_window = 8;  // both kinds of window
  EXPECT_FALSE(c.Validate().ok());
  c = KvCacheConfig();
  c.num_blocks = 0;
  EXPECT_FALSE(c.Validate().ok());
}

TEST(KvCacheManagerTest, MaxBlocksHeld) {
  KvCacheManager m = Make(8, 4, 0, 8, 6);
  EXPECT_EQ(m.MaxBlocksHeld(kFullGroup, 100, 8), 25);
  // Window 6, chunks of 8: positions [s - 5, s + 8) = 13 -> 4 blocks + 1.
  EXPECT_EQ(m.MaxBlocksHeld(kLocalGroup, 100, 8), 5);
  EXPECT_EQ(m.MaxBlocksHeld(kLocalGroup, 6, 8), 2);
}

}  // namespace
}  // namespace weft::kv
