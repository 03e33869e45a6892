// KvCache: where the forward pass keeps the keys and values of past tokens.
// The forward pass writes K and V of a (sequence, position) per layer, then
// reads rows back for attention; it never assumes how rows are laid out, so
// a paged implementation (blocks from a pool) can replace the contiguous one.
//
// Rows hold float32 activations: a key row is [n_head_kv * head_dim_k]
// (after RoPE), a value row [n_head_kv * head_dim_v].
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/config.h"
#include "util/status.h"

namespace weft::model {

// Thread safety: not thread-safe; one forward pass at a time per cache.
class KvCache {
 public:
  virtual ~KvCache() = default;

  // Makes rows [0, end_pos) of `seq` writable. Error when the sequence id
  // is unknown or the cache cannot hold that many positions.
  virtual Status Reserve(int32_t seq, int32_t end_pos) = 0;
  // Forgets positions >= `pos` of `seq` (pos = 0 clears it).
  virtual void Truncate(int32_t seq, int32_t pos) = 0;
  // Positions of `seq` written so far (one past the last written).
  virtual int32_t Length(int32_t seq) const = 0;
  // Most positions one sequence can hold.
  virtual int32_t Capacity() const = 0;
  virtual int32_t MaxSequences() const = 0;

  // REQUIRES: Reserve(seq, > pos) succeeded. Writing a row marks positions
  // up to `pos` as written.
  virtual float* KeyRow(int32_t layer, int32_t seq, int32_t pos) = 0;
  virtual float* ValueRow(int32_t layer, int32_t seq, int32_t pos) = 0;
  // REQUIRES: pos < Length(seq) (or written in the current pass).
  virtual const float* KeyRow(int32_t layer, int32_t seq, int32_t pos) const = 0;
  virtual const float* ValueRow(int32_t layer, int32_t seq, int32_t pos) const = 0;
  // Records that positions [0, end_pos) of `seq` hold data.
  virtual void Commit(int32_t seq, int32_t end_pos) = 0;
};

// One preallocated [layer][seq][pos] slab per K and V.
// Invariant: lengths_[s] <= capacity_ for every sequence.
class ContiguousKvCache : public KvCache {
 public:
  // Allocates n_layer * max_seqs * capacity rows of K and of V. Error when
  // the size is not positive or would overflow.
  static StatusOr<std::unique_ptr<ContiguousKvCache>> Create(
      const ModelConfig& config, int32_t capacity, int32_t max_seqs = 1);

  Status Reserve(int32_t seq, int32_t end_pos) override;
  void Truncate(int32_t seq, int32_t pos) override;
  int32_t Length(int32_t seq) const override;
  int32_t Capacity() const override { return capacity_; }
  int32_t MaxSequences() const override { return max_seqs_; }
  float* KeyRow(int32_t layer, int32_t seq, int32_t pos) override;
  float* ValueRow(int32_t layer, int32_t seq, int32_t pos) override;
  const float* KeyRow(int32_t layer, int32_t seq, int32_t pos) const override;
  const float* ValueRow(int32_t layer, int32_t seq, int32_t pos) const override;
  void Commit(int32_t seq, int32_t end_pos) override;

  // Bytes held by K and V together.
  uint64_t bytes() const { return (k_.size() + v_.size()) * sizeof(float); }

 private:
  ContiguousKvCache() = default;
  size_t Index(int32_t layer, int32_t seq, int32_t pos) const;

  int32_t n_layer_ = 0;
  int32_t capacity_ = 0;
  int32_t max_seqs_ = 0;
  int64_t k_dim_ = 0;
  int64_t v_dim_ = 0;
  std::vector<float> k_;
  std::vector<float> v_;
  std::vector<int32_t> lengths_;
};

}  // namespace weft::model
