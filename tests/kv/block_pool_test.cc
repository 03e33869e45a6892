#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace weft::kv {
namespace {

std::vector<TokenId> Tokens(int first, int n) {
  std::vector<TokenId> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(BlockPoolTest, AllocateUntilExhaustedThenNullopt) {
  BlockPool pool(4, 16);
  std::vector<BlockId> got;
  for (int i = 0; i < 4; ++i) {
    auto b = pool.Allocate();
    ASSERT_TRUE(b.has_value());
    got.push_back(*b);
  }
  EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_FALSE(pool.Allocate().has_value());
  EXPECT_FALSE(pool.AllocateMany(1).has_value());
  EXPECT_EQ(pool.num_available(), 0);
  for (BlockId b : got) pool.Release(b);
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, AllocateManyIsAllOrNothing) {
  BlockPool pool(3, 4);
  EXPECT_FALSE(pool.AllocateMany(4).has_value());
  EXPECT_EQ(pool.num_free(), 3);
  auto two = pool.AllocateMany(2);
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->size(), 2u);
  EXPECT_EQ(pool.num_free(), 1);
}

TEST(BlockPoolTest, RefCounts) {
  BlockPool pool(2, 4);
  BlockId b = *pool.Allocate();
  pool.AddRef(b);
  pool.AddRef(b);
  EXPECT_EQ(pool.ref_count(b), 3);
  pool.Release(b);
  pool.Release(b);
  EXPECT_EQ(pool.num_free(), 1);
  pool.Release(b);
  EXPECT_EQ(pool.ref_count(b), 0);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, CopyOnWriteOnlyWhenShared) {
  BlockPool pool(3, 4);
  BlockId a = *pool.Allocate();
  std::optional<BlockCopy> copy;
  EXPECT_EQ(pool.PrepareAppend(a, &copy), a);
  EXPECT_FALSE(copy.has_value());

  pool.AddRef(a);  // now shared by two sequences
  auto b = pool.PrepareAppend(a, &copy);
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(*b, a);
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(*copy, (BlockCopy{a, *b}));
  EXPECT_EQ(pool.ref_count(a), 1);  // the other owner keeps it, in place
  EXPECT_EQ(pool.ref_count(*b), 1);
  EXPECT_EQ(pool.PrepareAppend(a, &copy), a);
  EXPECT_FALSE(copy.has_value());
}

TEST(BlockPoolTest, CopyOnWriteWithoutRoomChangesNothing) {
  BlockPool pool(1, 4);
  BlockId a = *pool.Allocate();
  pool.AddRef(a);
  std::optional<BlockCopy> copy;
  EXPECT_FALSE(pool.PrepareAppend(a, &copy).has_value());
  EXPECT_EQ(pool.ref_count(a), 2);
  EXPECT_FALSE(copy.has_value());
}

TEST(BlockPoolTest, EntryChainHitsAndMisses) {
  BlockPool pool(4, 4);
  BlockId a = *pool.Allocate();
  BlockId b = *pool.Allocate();
  auto t0 = Tokens(0, 4), t1 = Tokens(4, 4);
  const CacheEntryId ea = *pool.CacheBlock(a, kRootEntry, t0);
  EXPECT_EQ(pool.entry_of(a), ea);
  EXPECT_NE(ea, kRootEntry);
  const CacheEntryId eb = *pool.CacheBlock(b, ea, t1);
  EXPECT_NE(eb, ea);
  EXPECT_EQ(pool.FindCached(kRootEntry, t0), a);
  EXPECT_EQ(pool.FindCached(ea, t1), b);
  // Same tokens, different parent: a miss (position in the chain matters).
  EXPECT_FALSE(pool.FindCached(kRootEntry, t1).has_value());
  EXPECT_FALSE(pool.FindCached(kNoEntry, t0).has_value());
  // One token different: a miss.
  auto t0x = t0;
  t0x[3] = 99;
  EXPECT_FALSE(pool.FindCached(kRootEntry, t0x).has_value());
  // Duplicate contents in another block are not registered twice: the
  // existing entry is the one to chain from.
  BlockId c = *pool.Allocate();
  EXPECT_EQ(pool.CacheBlock(c, kRootEntry, t0), ea);
  EXPECT_FALSE(pool.is_cached(c));
  EXPECT_EQ(pool.FindCached(kRootEntry, t0), a);
  // Caching a block again is a no-op that names its entry; as other
  // contents it is refused.
  EXPECT_EQ(pool.CacheBlock(a, kRootEntry, t0), ea);
  EXPECT_FALSE(pool.CacheBlock(a, kRootEntry, t1).has_value());
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, ChildrenOfAnEvictedEntryAreNotReachedFromItsSuccessor) {
  BlockPool pool(2, 4);
  auto t0 = Tokens(0, 4), t1 = Tokens(4, 4);
  BlockId a = *pool.Allocate();
  BlockId b = *pool.Allocate();
  const CacheEntryId ea = *pool.CacheBlock(a, kRootEntry, t0);
  pool.CacheBlock(b, ea, t1);
  pool.Release(a);  // LRU: a, then b
  pool.Release(b);
  BlockId x = *pool.Allocate();  // evicts a
  EXPECT_EQ(x, a);
  const CacheEntryId ex = *pool.CacheBlock(x, kRootEntry, t0);
  // The same contents again, but a new entry: b was computed after the old
  // one, and entries are never reused, so it is not found under the new.
  EXPECT_NE(ex, ea);
  EXPECT_EQ(pool.FindCached(kRootEntry, t0), x);
  EXPECT_FALSE(pool.FindCached(ex, t1).has_value());
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, AnIndexCollisionIsAMissNeverAWrongHit) {
  BlockPool pool(4, 4);
  pool.SetConstantKeysForTesting();  // every content collides
  auto t0 = Tokens(0, 4), t1 = Tokens(4, 4);
  BlockId a = *pool.Allocate();
  BlockId b = *pool.Allocate();
  const CacheEntryId ea = *pool.CacheBlock(a, kRootEntry, t0);
  EXPECT_FALSE(pool.CacheBlock(b, kRootEntry, t1).has_value());
  EXPECT_FALSE(pool.is_cached(b));
  EXPECT_FALSE(pool.CacheBlock(b, ea, t1).has_value());
  EXPECT_EQ(pool.FindCached(kRootEntry, t0), a);
  EXPECT_FALSE(pool.FindCached(kRootEntry, t1).has_value());
  EXPECT_FALSE(pool.FindCached(ea, t0).has_value());
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, FreedCachedBlockStaysReusableUntilEvicted) {
  BlockPool pool(2, 4);
  auto t0 = Tokens(0, 4);
  BlockId a = *pool.Allocate();
  pool.CacheBlock(a, kRootEntry, t0);
  pool.Release(a);
  EXPECT_EQ(pool.num_idle(), 1);
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.num_available(), 2);
  // A prefix hit revives it.
  ASSERT_EQ(pool.FindCached(kRootEntry, t0), a);
  pool.AddRef(a);
  EXPECT_EQ(pool.num_idle(), 0);
  EXPECT_EQ(pool.ref_count(a), 1);
  pool.Release(a);
  // Allocation prefers the free block over evicting.
  BlockId b = *pool.Allocate();
  EXPECT_NE(b, a);
  EXPECT_EQ(pool.stats().evictions, 0);
  // Then evicts: the block loses its hash.
  BlockId c = *pool.Allocate();
  EXPECT_EQ(c, a);
  EXPECT_FALSE(pool.is_cached(a));
  EXPECT_FALSE(pool.FindCached(kRootEntry, t0).has_value());
  EXPECT_EQ(pool.stats().evictions, 1);
  EXPECT_TRUE(pool.CheckInvariants().ok());
}

TEST(BlockPoolTest, EvictionIsLeastRecentlyUsedFirst) {
  BlockPool pool(3, 2);
  std::vector<BlockId> ids;
  for (int i = 0; i < 3; ++i) {
    BlockId b = *pool.Allocate();
    pool.CacheBlock(b, kRootEntry, Tokens(10 * i, 2));
    ids.push_back(b);
  }
  // Released in order 1, 0, 2 -> LRU order 1, 0, 2.
  pool.Release(ids[1]);
  pool.Release(ids[0]);
  pool.Release(ids[2]);
  // Touch 1 (a prefix hit) and release it again: now 0, 2, 1.
  pool.AddRef(ids[1]);
  pool.Release(ids[1]);
  EXPECT_EQ(*pool.Allocate(), ids[0]);
  EXPECT_EQ(*pool.Allocate(), ids[2]);
  EXPECT_EQ(*pool.Allocate(), ids[1]);
  EXPECT_FALSE(pool.Allocate().has_value());
  EXPECT_EQ(pool.stats().evictions, 3);
}

TEST(BlockPoolTest, StatsCountPrefixQueries) {
  BlockPool pool(2, 4);
  pool.RecordPrefixQuery(10, 4);
  pool.RecordPrefixQuery(6, 0);
  BlockPoolStats s = pool.stats();
  EXPECT_EQ(s.prefix_query_tokens, 16);
  EXPECT_EQ(s.prefix_hit_tokens, 4);
  EXPECT_EQ(s.num_blocks, 2);
  EXPECT_EQ(s.num_free, 2);
}

}  // namespace
}  // namespace weft::kv
