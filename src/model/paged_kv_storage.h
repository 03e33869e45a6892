// PagedKvStorage: a KvStorage whose rows live in fixed-size blocks of shared
// pools, addressed per sequence through block tables that the caller (the
// engine's executor) sets before each forward pass. Block ids are the KV
// block pools' (kv::BlockPool); this class only holds the tensors.
//
// Groups: with local_num_blocks > 0 the model's sliding-window layers
// (ModelConfig::IsLocalLayer) keep their rows in a second pool (group 1,
// "local") with its own block ids and per-sequence tables; every other
// layer uses group 0. Without it every layer uses group 0.
//
// Storage, per layer: K rows [group blocks * block_size, n_head_kv *
// head_dim_k] and V rows [group blocks * block_size, n_head_kv * head_dim_v]
// of KvType. Position p of a sequence lives in slot
// table[p / block_size] * block_size + p % block_size of its layer's group.
//
// A table entry may be -1 (kNullBlock: released, outside a sliding window);
// reading or writing a row there is a programming error (CHECK). Reserve()
// refuses to make such positions writable.
//
// "Sequences" here are small indexes chosen by the caller (e.g. the index
// of a sequence within a batch); they grow on demand with SetBlockTable.
//
// Thread safety: not thread-safe; one forward pass at a time.
// Invariants: every table entry is -1 or in [0, its group's num_blocks);
// lengths_[s] <= tables_[g][s].size() * block_size for every group g.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/config.h"
#include "model/kv_storage.h"
#include "util/large_alloc.h"
#include "util/status.h"

namespace weft::model {

struct PagedKvOptions {
  int32_t num_blocks = 0;        // blocks of group 0 (> 0)
  int32_t block_size = 16;       // token slots per block
  int32_t local_num_blocks = 0;  // blocks of group 1 (the model's sliding-
                                 // window layers); 0 = no group 1
  KvType type = KvType::kF32;    // row storage
  int32_t capacity = 1 << 30;    // positions one sequence may address
};

class PagedKvStorage : public KvStorage {
 public:
  // A block id that holds nothing (released or never allocated).
  static constexpr int32_t kNullBlock = -1;

  // Allocates the storage of every layer. Errors: non-positive sizes, a
  // local group for a model without both windowed and full layers, rows
  // that do not fit the type, or the storage cannot be allocated.
  static StatusOr<std::unique_ptr<PagedKvStorage>> Create(
      const ModelConfig& config, const PagedKvOptions& options);
  // One group of float32 rows.
  static StatusOr<std::unique_ptr<PagedKvStorage>> Create(
      const ModelConfig& config, int32_t num_blocks, int32_t block_size,
      int32_t capacity = 1 << 30);

  // Bytes of K and V storage one block takes over all layers (float32).
  static uint64_t BytesPerBlock(const ModelConfig& config, int32_t block_size);
  // Bytes one block of `type` takes in one layer (K and V).
  static uint64_t LayerBytesPerBlock(const ModelConfig& config,
                                     int32_t block_size, KvType type);
  // Layers that keep their rows in group 1 when it exists (the model's
  // sliding-window layers).
  static int64_t NumLocalLayers(const ModelConfig& config);

  // Points sequence `seq` (>= 0; grows MaxSequences() as needed) at
  // `blocks` in group 0 and declares its first `length` positions written
  // (the KV computed earlier, e.g. by a prefix-cache hit or a previous
  // chunk). Clears its group 1 table.
  // REQUIRES: every block is kNullBlock or in [0, num_blocks);
  // 0 <= length <= blocks.size() * block_size.
  void SetBlockTable(int32_t seq, const std::vector<int32_t>& blocks,
                     int32_t length);
  // Sets `seq`'s group 1 table (after SetBlockTable). REQUIRES: a group 1,
  // entries kNullBlock or in [0, local_num_blocks).
  void SetLocalBlockTable(int32_t seq, const std::vector<int32_t>& blocks);
  // Forgets sequence `seq`'s tables (its length becomes 0).
  void ClearSequence(int32_t seq);
  // Copies the K and V slots of block `src` into block `dst` of `group` in
  // every layer of the group (copy-on-write). REQUIRES: both in range.
  void CopyBlock(int32_t src, int32_t dst, int group = 0);

  int num_groups() const { return local_num_blocks_ > 0 ? 2 : 1; }
  int32_t num_blocks() const { return num_blocks_; }
  int32_t local_num_blocks() const { return local_num_blocks_; }
  int32_t group_num_blocks(int group) const {
    return group == 0 ? num_blocks_ : local_num_blocks_;
  }
  int32_t block_size() const { return block_size_; }
  uint64_t bytes() const { return bytes_; }

  // KvStorage. Reserve fails (RESOURCE_EXHAUSTED) when a table does not
  // cover end_pos or a block to be written is null.
  Status Reserve(int32_t seq, int32_t end_pos) override;
  void Truncate(int32_t seq, int32_t pos) override;
  int32_t Length(int32_t seq) const override;
  int32_t Capacity() const override { return capacity_; }
  int32_t MaxSequences() const override {
    return static_cast<int32_t>(lengths_.size());
  }
  KvType kv_type() const override { return type_; }
  int32_t key_tile() const override { return KeyTileFor(type_, block_size_); }
  int64_t value_head_dim() const override { return v_head_dim_; }
  using KvStorage::KeyData;
  using KvStorage::ValueData;
  uint8_t* KeyData(int32_t layer, int32_t seq, int32_t pos) override;
  uint8_t* ValueData(int32_t layer, int32_t seq, int32_t pos) override;
  void Commit(int32_t seq, int32_t end_pos) override;
  KvRowMap RowMap(int32_t layer, int32_t seq) const override;

 private:
  PagedKvStorage() = default;
  // The physical slot of (seq, pos) in `layer`'s group. CHECKs that the
  // block is not null.
  int64_t Slot(int32_t layer, int32_t seq, int32_t pos) const;

  KvType type_ = KvType::kF32;
  int32_t n_layer_ = 0;
  int32_t num_blocks_ = 0;
  int32_t local_num_blocks_ = 0;
  int32_t block_size_ = 0;
  int32_t capacity_ = 0;
  int64_t k_row_ = 0;  // bytes per key row
  int64_t v_row_ = 0;  // bytes per value row
  int64_t v_head_dim_ = 0;  // elements per kv head of a value row
  uint64_t bytes_ = 0;
  std::vector<int> layer_group_;                 // [n_layer] 0 or 1
  LargeBuffer storage_;                          // every layer's K and V
  std::vector<uint8_t*> k_;                      // per layer [slots, k_row_]
  std::vector<uint8_t*> v_;                      // per layer [slots, v_row_]
  std::vector<std::vector<int32_t>> tables_[2];  // per group, per sequence
  std::vector<int32_t> lengths_;                 // per sequence
};

}  // namespace weft::model
