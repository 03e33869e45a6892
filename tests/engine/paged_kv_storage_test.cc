// PagedKvStorage: the forward pass over scattered blocks gives the same logits
// as over the contiguous storage; copy-on-write copies; null blocks refused.
#include "model/paged_kv_storage.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/model_executor.h"
#include "kv/kv_sizing.h"
#include "model/model.h"
#include "tests/engine/model_harness.h"

namespace weft::model {
namespace {

std::string Stories() {
  return std::string(WEFT_SHARED_MODELS_DIR) + "/stories260K.gguf";
}

ModelConfig SmallConfig() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head_kv = 2;
  c.head_dim_k = 4;
  c.head_dim_v = 3;
  return c;
}

// KvRowMap::Rows (one table lookup per block, then the row's stride) gives
// the rows KeyData / ValueData give, for runs that start inside a block and
// cross several, with power-of-two and other block sizes, and contiguous.
TEST(PagedKvStorageTest, RowMapRowsMatchKeyAndValueData) {
  auto check = [](KvStorage* cache, int32_t seq, int32_t len) {
    for (int32_t layer = 0; layer < 2; ++layer) {
      const KvRowMap map = cache->RowMap(layer, seq);
      for (int32_t pos = 0; pos < len; ++pos) {
        for (int64_t n = 0; pos + n <= len; ++n) {
          std::vector<const uint8_t*> k(static_cast<size_t>(n)), v(static_cast<size_t>(n));
          map.Rows(true, pos, n, k.data());
          map.Rows(false, pos, n, v.data());
          for (size_t i = 0; i < k.size(); ++i) {
            const int32_t at = pos + static_cast<int32_t>(i);
            ASSERT_EQ(k[i], cache->KeyData(layer, seq, at)) << pos << "+" << i;
            ASSERT_EQ(v[i], cache->ValueData(layer, seq, at)) << pos << "+" << i;
          }
        }
      }
    }
  };
  for (int32_t bs : {4, 3}) {
    SCOPED_TRACE(bs);
    auto paged = PagedKvStorage::Create(SmallConfig(), 8, bs).value();
    paged->SetBlockTable(1, {5, 2, 7, 0}, 0);
    ASSERT_TRUE(paged->Reserve(1, 4 * bs).ok());
    check(paged.get(), 1, 4 * bs);
  }
  auto flat = ContiguousKvStorage::Create(SmallConfig(), 11, 2, KvType::kF32).value();
  ASSERT_TRUE(flat->Reserve(1, 11).ok());
  check(flat.get(), 1, 11);
}

TEST(PagedKvStorageTest, RowsFollowTheBlockTable) {
  auto cache = PagedKvStorage::Create(SmallConfig(), 8, 4).value();
  EXPECT_EQ(cache->MaxSequences(), 0);
  cache->SetBlockTable(1, {5, 2}, 0);
  EXPECT_EQ(cache->MaxSequences(), 2);
  ASSERT_TRUE(cache->Reserve(1, 8).ok());
  EXPECT_FALSE(cache->Reserve(1, 9).ok());  // the table covers 8
  EXPECT_FALSE(cache->Reserve(3, 1).ok());  // no such sequence
  // Position 5 is block 2, offset 1; rows of different layers differ.
  float* k = cache->KeyRow(1, 1, 5);
  for (int i = 0; i < 8; ++i) k[i] = 10.0f + static_cast<float>(i);
  float* v = cache->ValueRow(0, 1, 5);
  for (int i = 0; i < 6; ++i) v[i] = -1.0f - static_cast<float>(i);
  EXPECT_NE(cache->KeyRow(0, 1, 5), k);
  EXPECT_EQ(cache->Length(1), 0);
  cache->Commit(1, 6);
  EXPECT_EQ(cache->Length(1), 6);
  cache->Truncate(1, 2);
  EXPECT_EQ(cache->Length(1), 2);
  // Another sequence sharing physical block 2 sees the same rows.
  cache->SetBlockTable(0, {2}, 4);
  EXPECT_EQ(cache->KeyRow(1, 0, 1), k);
  // Copy-on-write: block 2 -> 7 copies every layer's K and V.
  cache->CopyBlock(2, 7);
  cache->SetBlockTable(0, {7}, 4);
  const PagedKvStorage& cc = *cache;
  for (int i = 0; i < 8; ++i) EXPECT_EQ(cc.KeyRow(1, 0, 1)[i], k[i]);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(cc.ValueRow(0, 0, 1)[i], v[i]);
  EXPECT_NE(cc.KeyRow(1, 0, 1), k);
  // A released (null) block may not be written.
  cache->SetBlockTable(2, {PagedKvStorage::kNullBlock, 3}, 4);
  EXPECT_TRUE(cache->Reserve(2, 8).ok());
  cache->SetBlockTable(2, {PagedKvStorage::kNullBlock, 3}, 0);
  EXPECT_EQ(cache->Reserve(2, 8).code(), StatusCode::kResourceExhausted);
}

TEST(PagedKvStorageTest, BadSizesAreErrors) {
  EXPECT_FALSE(PagedKvStorage::Create(SmallConfig(), 0, 4).ok());
  EXPECT_FALSE(PagedKvStorage::Create(SmallConfig(), 4, 0).ok());
  EXPECT_FALSE(PagedKvStorage::Create(ModelConfig(), 4, 4).ok());
  // (2 layers * 4 tokens * (8 + 6) floats * 4 bytes) per block.
  EXPECT_EQ(PagedKvStorage::BytesPerBlock(SmallConfig(), 4), 448u);
  const kv::KvLayout layout = KvLayoutOf(SmallConfig(), KvType::kF32).value();
  EXPECT_EQ(kv::KvBlocksForBytes(layout, 4, 448 * 10 + 5), 10);
  EXPECT_EQ(kv::KvBlocksForBytes(layout, 0, 1 << 20), 0);
}

// Prefill then decode on stories260K, once over contiguous storage, once
// over blocks scattered in the pool: logits must be bitwise equal.
// The same for every storage type (f16, q8_0 rows convert the same way in
// both).
TEST(PagedKvStorageTest, ForwardMatchesContiguousStorage) {
  if (!engine::testing::FileExists(Stories())) GTEST_SKIP() << "no model";
  auto model = Model::Load(Stories()).value();
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
  SCOPED_TRACE(KvTypeName(type));
  const std::vector<int32_t> prompt =
      engine::testing::RandomPrompt(1, 21, 3, 500);
  auto flat = ContiguousKvStorage::Create(model->config(), 64, 1, type).value();
  PagedKvOptions po;
  po.num_blocks = 16;
  po.block_size = 4;
  po.type = type;
  auto paged = PagedKvStorage::Create(model->config(), po).value();
  EXPECT_EQ(paged->kv_type(), type);
  const std::vector<int32_t> table = {9, 3, 14, 0, 7, 11, 2, 5};  // 32 slots
  std::vector<float> a, b;
  // Prefill in two chunks (13 + 8), then 5 decode steps.
  int pos = 0;
  std::vector<int> steps = {13, 8, 1, 1, 1, 1, 1};
  int32_t next = 0;
  for (int n : steps) {
    std::vector<int32_t> ids;
    for (int i = 0; i < n; ++i) {
      ids.push_back(pos + i < 21 ? prompt[static_cast<size_t>(pos + i)]
                                 : next);
    }
    ASSERT_TRUE(model->Forward(Batch::ForPrompt(ids, pos), flat.get(), &a).ok());
    paged->SetBlockTable(0, table, pos);
    ASSERT_TRUE(model->Forward(Batch::ForPrompt(ids, pos), paged.get(), &b).ok());
    ASSERT_EQ(a, b) << "at position " << pos;
    next = static_cast<int32_t>(std::max_element(a.begin(), a.end()) - a.begin());
    pos += n;
  }
  }
}

TEST(PagedKvStorageTest, StorageTypes) {
  // SmallConfig rows: K 8, V 6 elements per layer.
  EXPECT_EQ(PagedKvStorage::LayerBytesPerBlock(SmallConfig(), 4, KvType::kF16),
            4u * (8 + 6) * 2);
  // The layout kv sizes from agrees, counts the windowed layers and
  // refuses rows that do not fit the type.
  EXPECT_EQ(KvLayoutOf(SmallConfig(), KvType::kF16)->LayerBytesPerBlock(4),
            4u * (8 + 6) * 2);
  EXPECT_EQ(KvLayoutOf(SmallConfig(), KvType::kQ8_0).status().code(),
            StatusCode::kInvalidArgument);
  ModelConfig hybrid = SmallConfig();
  hybrid.n_layer = 7;
  hybrid.sliding_window = 8;
  hybrid.swa_pattern = 6;  // layer 5 is the one full-attention layer
  const kv::KvLayout layout = KvLayoutOf(hybrid, KvType::kF32).value();
  EXPECT_EQ(layout.num_layers, 7);
  EXPECT_EQ(layout.num_local_layers, 6);
  EXPECT_EQ(layout.sliding_window, 8);
  PagedKvOptions po;
  po.num_blocks = 4;
  po.block_size = 4;
  po.type = KvType::kQ8_0;  // rows are not multiples of 32
  EXPECT_EQ(PagedKvStorage::Create(SmallConfig(), po).status().code(),
            StatusCode::kInvalidArgument);
  po.type = KvType::kF32;
  po.local_num_blocks = 4;  // no sliding-window layers
  EXPECT_EQ(PagedKvStorage::Create(SmallConfig(), po).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseKvType("F16").value(), KvType::kF16);
  EXPECT_EQ(ParseKvType("q8_0").value(), KvType::kQ8_0);
  EXPECT_FALSE(ParseKvType("q4_0").ok());
  // Q8_0 rows round-trip within half a quantization step.
  std::vector<float> row(64);
  for (int i = 0; i < 64; ++i) row[i] = std::sin(0.37f * i) * (1 + i % 5);
  std::vector<uint8_t> q(static_cast<size_t>(KvRowBytes(KvType::kQ8_0, 64)));
  ASSERT_EQ(q.size(), 68u);
  StoreKvRow(KvType::kQ8_0, row.data(), 64, q.data());
  std::vector<float> back(40);
  LoadKvRow(KvType::kQ8_0, q.data(), 20, 40, back.data());  // spans blocks
  for (int i = 0; i < 40; ++i) EXPECT_NEAR(back[i], row[20 + i], 5.0f / 127);
  std::vector<uint8_t> h(128);
  StoreKvRow(KvType::kF16, row.data(), 64, h.data());
  LoadKvRow(KvType::kF16, h.data(), 3, 10, back.data());
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(back[i], row[3 + i], 4e-3f);
}

}  // namespace
}  // namespace weft::model
