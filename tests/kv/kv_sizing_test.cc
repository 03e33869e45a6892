// kv::KvConfigForBytes and KvBlocksForBytes on hand-built layouts: one
// group, a split local group, the fallback when the budget is too small
// for the split, and errors.
#include "kv/kv_sizing.h"

#include <gtest/gtest.h>

namespace weft::kv {
namespace {

// Two layers of 14 float32 elements per token (K 8 + V 6).
KvLayout Small() {
  KvLayout l;
  l.row_bytes = 14 * 4;
  l.num_layers = 2;
  return l;
}

// Gemma 3's shape: 5 of every 6 layers windowed (512 tokens).
KvLayout Hybrid() {
  KvLayout l;
  l.row_bytes = 4;
  l.num_layers = 6;
  l.num_local_layers = 5;
  l.sliding_window = 512;
  return l;
}

TEST(KvSizingTest, BlocksForBytes) {
  EXPECT_EQ(Small().LayerBytesPerBlock(4), 4u * 56);
  // 2 layers * 4 tokens * 56 bytes = 448 bytes per block.
  EXPECT_EQ(KvBlocksForBytes(Small(), 4, 448 * 10 + 5), 10);
  EXPECT_EQ(KvBlocksForBytes(Small(), 0, 1 << 20), 0);
  EXPECT_EQ(KvBlocksForBytes(KvLayout(), 4, 1 << 20), 0);
}

TEST(KvSizingTest, OneGroup) {
  uint64_t used = 0;
  auto kv = KvConfigForBytes(Small(), 4, 448 * 10 + 5, {}, true, &used);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->num_blocks, 10);
  EXPECT_EQ(kv->block_size, 4);
  EXPECT_EQ(kv->num_groups(), 1);
  EXPECT_EQ(kv->local_window, 0);
  EXPECT_EQ(used, 4480u);
  EXPECT_TRUE(kv->Validate().ok());
}

TEST(KvSizingTest, LocalGroupGetsWhatTheSchedulerHolds) {
  // need = 2 * (512 / 16 + 1) + ceil(56 / 16) = 70 local blocks of
  // 5 * 64 bytes; every other byte goes to the full layer's 64-byte blocks.
  const KvPassLimits limits{2, 56};
  const uint64_t bytes = 70 * 320 + 1000 * 64 + 63;
  uint64_t used = 0;
  auto kv = KvConfigForBytes(Hybrid(), 16, bytes, limits, true, &used);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->num_blocks, 1000);
  EXPECT_EQ(kv->local_num_blocks, 70);
  EXPECT_EQ(kv->local_window, 512);
  EXPECT_EQ(used, bytes - 63);
  EXPECT_TRUE(kv->Validate().ok());

  // Without the split: one group over all 6 layers.
  kv = KvConfigForBytes(Hybrid(), 16, bytes, limits, false, &used);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->num_blocks, static_cast<int>(bytes / 384));
  EXPECT_EQ(kv->num_groups(), 1);
  EXPECT_EQ(kv->local_window, 0);
}

TEST(KvSizingTest, SmallBudgetGivesBothGroupsTheSameCount) {
  // 50 blocks of both groups (384 bytes) fit; the full group's rest after
  // 70 local blocks would be none.
  uint64_t used = 0;
  auto kv = KvConfigForBytes(Hybrid(), 16, 384 * 50 + 100, {2, 56}, true,
                             &used);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  EXPECT_EQ(kv->num_blocks, 50);
  EXPECT_EQ(kv->local_num_blocks, 50);
  EXPECT_EQ(used, 384u * 50);
}

TEST(KvSizingTest, Errors) {
  EXPECT_EQ(KvConfigForBytes(Small(), 0, 1 << 20, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(KvConfigForBytes(Small(), 4, 447, {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(KvConfigForBytes(Hybrid(), 16, 383, {2, 56}).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::kv
