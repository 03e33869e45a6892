// PagedKvStorage: the forward pass over scattered blocks gives the same logits
// as over the contiguous storage; copy-on-write copies; null blocks refused.
#include "model/paged_kv_storage.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/model_executor.h"
#include "kv/kv_sizing.h"
#include "model/model.h"
#include "tensor/half.h"
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

// F16 keys and values are stored in tiles (KvRowMap::k_tile, v_tile): the
// largest power of two <= 16 dividing the block size, 16 in contiguous
// storage, none for other types. A key or value stored comes back (as F16),
// element e of position pos's key lies at half e * w + pos % w of its tile,
// kv head h's part of its value at ValueHead(pos, h), which is half
// (h * w + pos % w) * head_dim_v of the tile, and a block copy carries both.
TEST(PagedKvStorageTest, TiledKeysAndValuesRoundTrip) {
  ModelConfig c = SmallConfig();
  c.head_dim_k = 5;  // k_dim 10; v_dim 6
  auto check = [&](KvStorage* cache, int32_t seq, int32_t len, int32_t want_tile) {
    ASSERT_EQ(cache->key_tile(), want_tile);
    ASSERT_EQ(cache->value_tile(), want_tile);
    ASSERT_TRUE(cache->Reserve(seq, len).ok());
    auto key = [&](int32_t layer, int32_t pos, int64_t e) {
      return static_cast<float>(layer * 1000 + pos * 10 + e) / 8.0f;
    };
    auto value = [&](int32_t layer, int32_t pos, int64_t e) { return -key(layer, pos, e) - 0.5f; };
    std::vector<float> k(static_cast<size_t>(c.k_dim())), back(k.size());
    std::vector<float> v(static_cast<size_t>(c.v_dim())), vback(v.size());
    for (int32_t layer = 0; layer < 2; ++layer) {
      for (int32_t pos = 0; pos < len; ++pos) {
        for (int64_t e = 0; e < c.k_dim(); ++e) k[static_cast<size_t>(e)] = key(layer, pos, e);
        for (int64_t e = 0; e < c.v_dim(); ++e) v[static_cast<size_t>(e)] = value(layer, pos, e);
        cache->StoreKey(layer, seq, pos, k.data(), c.k_dim());
        cache->StoreValue(layer, seq, pos, v.data(), c.v_dim());
      }
    }
    for (int32_t layer = 0; layer < 2; ++layer) {
      const KvRowMap map = cache->RowMap(layer, seq);
      ASSERT_EQ(map.k_tile, want_tile);
      ASSERT_EQ(map.v_tile, want_tile);
      for (int32_t pos = 0; pos < len; ++pos) {
        cache->LoadKey(layer, seq, pos, c.k_dim(), back.data());
        for (int64_t e = 0; e < c.k_dim(); ++e) {
          const float want = Fp16ToFp32(Fp32ToFp16(key(layer, pos, e)));
          ASSERT_EQ(back[static_cast<size_t>(e)], want) << layer << " " << pos << " " << e;
          if (want_tile == 0) continue;
          const auto* tile = reinterpret_cast<const uint16_t*>(map.KeyTile(pos));
          ASSERT_EQ(Fp16ToFp32(tile[e * want_tile + pos % want_tile]), want) << pos;
        }
        cache->LoadValue(layer, seq, pos, c.v_dim(), vback.data());
        for (int64_t e = 0; e < c.v_dim(); ++e) {
          const float want = cache->kv_type() == KvType::kF32
                                 ? value(layer, pos, e)
                                 : Fp16ToFp32(Fp32ToFp16(value(layer, pos, e)));
          ASSERT_EQ(vback[static_cast<size_t>(e)], want) << layer << " " << pos << " " << e;
          if (want_tile == 0) continue;
          const int64_t h = e / c.head_dim_v, i = e % c.head_dim_v;
          const auto* head = reinterpret_cast<const uint16_t*>(map.ValueHead(pos, h));
          ASSERT_EQ(Fp16ToFp32(head[i]), want) << pos;
          const auto* tile = reinterpret_cast<const uint16_t*>(map.Value(pos - pos % want_tile));
          ASSERT_EQ(head, tile + (h * want_tile + pos % want_tile) * c.head_dim_v) << pos;
        }
      }
    }
  };
  for (const auto& [bs, tile] : std::vector<std::pair<int32_t, int32_t>>{
           {16, 16}, {32, 16}, {8, 8}, {6, 2}, {3, 1}}) {
    SCOPED_TRACE(bs);
    PagedKvOptions o;
    o.num_blocks = 8;
    o.block_size = bs;
    o.type = KvType::kF16;
    auto paged = PagedKvStorage::Create(c, o).value();
    paged->SetBlockTable(1, {5, 2, 7}, 0);
    check(paged.get(), 1, 3 * bs - 1, tile);
    // Block 2 (positions bs .. 2 bs - 1) copied to block 4 and read there.
    paged->CopyBlock(2, 4);
    paged->SetBlockTable(0, {5, 4}, 0);
    ASSERT_TRUE(paged->Reserve(0, 2 * bs).ok());
    std::vector<float> a(static_cast<size_t>(c.k_dim())), b(a.size());
    std::vector<float> va(static_cast<size_t>(c.v_dim())), vb(va.size());
    for (int32_t pos = bs; pos < 2 * bs; ++pos) {
      paged->LoadKey(1, 1, pos, c.k_dim(), a.data());
      paged->LoadKey(1, 0, pos, c.k_dim(), b.data());
      ASSERT_EQ(a, b) << pos;
      paged->LoadValue(1, 1, pos, c.v_dim(), va.data());
      paged->LoadValue(1, 0, pos, c.v_dim(), vb.data());
      ASSERT_EQ(va, vb) << pos;
    }
  }
  for (KvType type : {KvType::kF32, KvType::kQ8_0}) {
    PagedKvOptions o;
    o.num_blocks = 4;
    o.type = type;
    ModelConfig c32 = c;
    c32.head_dim_k = 16;  // Q8_0 rows: whole blocks of 32
    c32.head_dim_v = 16;
    auto paged = PagedKvStorage::Create(c32, o).value();
    paged->SetBlockTable(0, {1}, 0);
    EXPECT_EQ(paged->key_tile(), 0);
    EXPECT_EQ(paged->RowMap(0, 0).k_tile, 0);
    EXPECT_EQ(paged->value_tile(), 0);
    EXPECT_EQ(paged->RowMap(0, 0).v_tile, 0);
  }
  check(ContiguousKvStorage::Create(c, 21, 2, KvType::kF16).value().get(), 1, 21, 16);
  check(ContiguousKvStorage::Create(c, 7, 1, KvType::kF32).value().get(), 0, 7, 0);
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
