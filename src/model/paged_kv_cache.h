// PagedKvCache: a KvCache whose rows live in fixed-size blocks of a shared
// pool, addressed per sequence through a block table that the caller (the
// engine's executor) sets before each forward pass. Block ids are the KV
// block pool's (kv::BlockPool); this class only holds the tensors.
//
// Storage, per layer: K rows [num_blocks * block_size, n_head_kv *
// head_dim_k] and V rows [num_blocks * block_size, n_head_kv * head_dim_v],
// float32. Position p of a sequence lives in slot
// table[p / block_size] * block_size + p % block_size.
//
// A table entry may be -1 (kNullBlock: released, outside a sliding window);
// reading or writing a row there is a programming error (CHECK). Reserve()
// refuses to make such positions writable.
//
// "Sequences" here are small indexes chosen by the caller (e.g. the index
// of a sequence within a batch); they grow on demand with SetBlockTable.
//
// Thread safety: not thread-safe; one forward pass at a time.
// Invariants: every table entry is -1 or in [0, num_blocks);
// lengths_[s] <= tables_[s].size() * block_size.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/config.h"
#include "model/kv_cache.h"
#include "util/status.h"

namespace weft::model {

class PagedKvCache : public KvCache {
 public:
  // A block id that holds nothing (released or never allocated).
  static constexpr int32_t kNullBlock = -1;

  // Allocates num_blocks * block_size slots of K and V for every layer of
  // `config`. `capacity` bounds the positions one sequence may address
  // (Capacity()). Errors: non-positive sizes, or the storage cannot be
  // allocated.
  static StatusOr<std::unique_ptr<PagedKvCache>> Create(
      const ModelConfig& config, int32_t num_blocks, int32_t block_size,
      int32_t capacity = 1 << 30);

  // Bytes of K and V storage one block takes over all layers.
  static uint64_t BytesPerBlock(const ModelConfig& config, int32_t block_size);

  // Points sequence `seq` (>= 0; grows MaxSequences() as needed) at
  // `blocks` and declares its first `length` positions written (the KV
  // computed earlier, e.g. by a prefix-cache hit or a previous chunk).
  // REQUIRES: every block is kNullBlock or in [0, num_blocks);
  // 0 <= length <= blocks.size() * block_size.
  void SetBlockTable(int32_t seq, const std::vector<int32_t>& blocks,
                     int32_t length);
  // Forgets sequence `seq`'s table (its length becomes 0).
  void ClearSequence(int32_t seq);
  // Copies every layer's K and V slots of block `src` into block `dst`
  // (copy-on-write). REQUIRES: both in [0, num_blocks).
  void CopyBlock(int32_t src, int32_t dst);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  uint64_t bytes() const { return bytes_; }

  // KvCache. Reserve fails (RESOURCE_EXHAUSTED) when the table does not
  // cover end_pos or a block to be written is null.
  Status Reserve(int32_t seq, int32_t end_pos) override;
  void Truncate(int32_t seq, int32_t pos) override;
  int32_t Length(int32_t seq) const override;
  int32_t Capacity() const override { return capacity_; }
  int32_t MaxSequences() const override {
    return static_cast<int32_t>(tables_.size());
  }
  float* KeyRow(int32_t layer, int32_t seq, int32_t pos) override;
  float* ValueRow(int32_t layer, int32_t seq, int32_t pos) override;
  const float* KeyRow(int32_t layer, int32_t seq, int32_t pos) const override;
  const float* ValueRow(int32_t layer, int32_t seq, int32_t pos) const override;
  void Commit(int32_t seq, int32_t end_pos) override;

 private:
  PagedKvCache() = default;
  // The physical slot of (seq, pos). CHECKs that the block is not null.
  int64_t Slot(int32_t seq, int32_t pos) const;

  int32_t n_layer_ = 0;
  int32_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  int32_t capacity_ = 0;
  int64_t num_slots_ = 0;  // num_blocks * block_size
  int64_t k_dim_ = 0;
  int64_t v_dim_ = 0;
  uint64_t bytes_ = 0;
  std::unique_ptr<float[]> k_;  // [n_layer, num_slots, k_dim]
  std::unique_ptr<float[]> v_;  // [n_layer, num_slots, v_dim]
  std::vector<std::vector<int32_t>> tables_;  // per sequence
  std::vector<int32_t> lengths_;              // per sequence
};

}  // namespace weft::model
