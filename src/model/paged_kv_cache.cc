#include "model/paged_kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "util/check.h"
#include "util/strings.h"

namespace weft::model {

uint64_t PagedKvCache::BytesPerBlock(const ModelConfig& config,
                                     int32_t block_size) {
  return static_cast<uint64_t>(config.n_layer) *
         static_cast<uint64_t>(std::max(block_size, 0)) *
         static_cast<uint64_t>(config.k_dim() + config.v_dim()) *
         sizeof(float);
}

StatusOr<std::unique_ptr<PagedKvCache>> PagedKvCache::Create(
    const ModelConfig& config, int32_t num_blocks, int32_t block_size,
    int32_t capacity) {
  if (num_blocks <= 0 || block_size <= 0 || capacity <= 0) {
    return InvalidArgumentError(StrFormat(
        "paged KV cache: %d blocks of %d tokens, capacity %d must be positive",
        num_blocks, block_size, capacity));
  }
  if (config.n_layer <= 0 || config.k_dim() <= 0 || config.v_dim() <= 0) {
    return InvalidArgumentError("paged KV cache: model config has no KV rows");
  }
  const double bytes = static_cast<double>(BytesPerBlock(config, block_size)) *
                       static_cast<double>(num_blocks);
  if (bytes > 256.0 * (1ull << 30)) {
    return ResourceExhaustedError(StrFormat(
        "paged KV cache of %d blocks x %d tokens needs %s; too large",
        num_blocks, block_size, HumanBytes(bytes).c_str()));
  }
  std::unique_ptr<PagedKvCache> c(new PagedKvCache());
  c->n_layer_ = static_cast<int32_t>(config.n_layer);
  c->num_blocks_ = num_blocks;
  c->block_size_ = block_size;
  c->capacity_ = capacity;
  c->num_slots_ = int64_t{num_blocks} * block_size;
  c->k_dim_ = config.k_dim();
  c->v_dim_ = config.v_dim();
  c->bytes_ = static_cast<uint64_t>(bytes);
  const size_t rows = static_cast<size_t>(c->n_layer_) *
                      static_cast<size_t>(c->num_slots_);
  // Uninitialized: a row is always written before it is read, and untouched
  // pages cost no memory.
  c->k_.reset(new (std::nothrow) float[rows * static_cast<size_t>(c->k_dim_)]);
  c->v_.reset(new (std::nothrow) float[rows * static_cast<size_t>(c->v_dim_)]);
  if (c->k_ == nullptr || c->v_ == nullptr) {
    return ResourceExhaustedError(StrFormat(
        "cannot allocate a paged KV cache of %s", HumanBytes(bytes).c_str()));
  }
  return c;
}

void PagedKvCache::SetBlockTable(int32_t seq, const std::vector<int32_t>& blocks,
                                 int32_t length) {
  CHECK_GE(seq, 0);
  CHECK(length >= 0 &&
        static_cast<int64_t>(length) <=
            static_cast<int64_t>(blocks.size()) * block_size_);
  for (int32_t b : blocks) CHECK(b == kNullBlock || (b >= 0 && b < num_blocks_));
  if (static_cast<size_t>(seq) >= tables_.size()) {
    tables_.resize(static_cast<size_t>(seq) + 1);
    lengths_.resize(static_cast<size_t>(seq) + 1, 0);
  }
  tables_[seq] = blocks;
  lengths_[seq] = length;
}

void PagedKvCache::ClearSequence(int32_t seq) {
  if (seq < 0 || static_cast<size_t>(seq) >= tables_.size()) return;
  tables_[seq].clear();
  lengths_[seq] = 0;
}

void PagedKvCache::CopyBlock(int32_t src, int32_t dst) {
  CHECK(src >= 0 && src < num_blocks_);
  CHECK(dst >= 0 && dst < num_blocks_);
  if (src == dst) return;
  const int64_t bs = block_size_;
  for (int32_t l = 0; l < n_layer_; ++l) {
    const int64_t base = int64_t{l} * num_slots_;
    std::memcpy(k_.get() + (base + int64_t{dst} * bs) * k_dim_,
                k_.get() + (base + int64_t{src} * bs) * k_dim_,
                static_cast<size_t>(bs * k_dim_) * sizeof(float));
    std::memcpy(v_.get() + (base + int64_t{dst} * bs) * v_dim_,
                v_.get() + (base + int64_t{src} * bs) * v_dim_,
                static_cast<size_t>(bs * v_dim_) * sizeof(float));
  }
}

Status PagedKvCache::Reserve(int32_t seq, int32_t end_pos) {
  if (seq < 0 || static_cast<size_t>(seq) >= tables_.size()) {
    return InvalidArgumentError(StrFormat(
        "sequence id %d has no block table (%zu sequences)", seq,
        tables_.size()));
  }
  const std::vector<int32_t>& table = tables_[seq];
  if (end_pos < 0 || end_pos > capacity_ ||
      static_cast<int64_t>(end_pos) >
          static_cast<int64_t>(table.size()) * block_size_) {
    return ResourceExhaustedError(StrFormat(
        "sequence %d needs %d positions; its block table covers %lld", seq,
        end_pos, static_cast<long long>(table.size()) * block_size_));
  }
  // Blocks that positions [Length, end_pos) will be written into.
  const int32_t first = lengths_[seq] / block_size_;
  const int32_t last = end_pos == 0 ? -1 : (end_pos - 1) / block_size_;
  for (int32_t i = first; i <= last; ++i) {
    if (table[static_cast<size_t>(i)] == kNullBlock) {
      return ResourceExhaustedError(StrFormat(
          "sequence %d: block %d to be written is released", seq, i));
    }
  }
  return OkStatus();
}

void PagedKvCache::Truncate(int32_t seq, int32_t pos) {
  CHECK(seq >= 0 && static_cast<size_t>(seq) < tables_.size());
  lengths_[seq] = std::clamp(pos, 0, lengths_[seq]);
}

int32_t PagedKvCache::Length(int32_t seq) const {
  CHECK(seq >= 0 && static_cast<size_t>(seq) < tables_.size());
  return lengths_[seq];
}

void PagedKvCache::Commit(int32_t seq, int32_t end_pos) {
  CHECK(seq >= 0 && static_cast<size_t>(seq) < tables_.size());
  CHECK(end_pos >= 0 &&
        static_cast<int64_t>(end_pos) <=
            static_cast<int64_t>(tables_[seq].size()) * block_size_);
  lengths_[seq] = std::max(lengths_[seq], end_pos);
}

int64_t PagedKvCache::Slot(int32_t seq, int32_t pos) const {
  DCHECK(seq >= 0 && static_cast<size_t>(seq) < tables_.size());
  const std::vector<int32_t>& table = tables_[static_cast<size_t>(seq)];
  const size_t bi = static_cast<size_t>(pos / block_size_);
  CHECK(pos >= 0 && bi < table.size());
  const int32_t block = table[bi];
  CHECK(block != kNullBlock);  // a released position is never accessed
  return int64_t{block} * block_size_ + pos % block_size_;
}

float* PagedKvCache::KeyRow(int32_t layer, int32_t seq, int32_t pos) {
  DCHECK(layer >= 0 && layer < n_layer_);
  return k_.get() + (int64_t{layer} * num_slots_ + Slot(seq, pos)) * k_dim_;
}
float* PagedKvCache::ValueRow(int32_t layer, int32_t seq, int32_t pos) {
  DCHECK(layer >= 0 && layer < n_layer_);
  return v_.get() + (int64_t{layer} * num_slots_ + Slot(seq, pos)) * v_dim_;
}
const float* PagedKvCache::KeyRow(int32_t layer, int32_t seq,
                                  int32_t pos) const {
  DCHECK(layer >= 0 && layer < n_layer_);
  return k_.get() + (int64_t{layer} * num_slots_ + Slot(seq, pos)) * k_dim_;
}
const float* PagedKvCache::ValueRow(int32_t layer, int32_t seq,
                                    int32_t pos) const {
  DCHECK(layer >= 0 && layer < n_layer_);
  return v_.get() + (int64_t{layer} * num_slots_ + Slot(seq, pos)) * v_dim_;
}

}  // namespace weft::model
