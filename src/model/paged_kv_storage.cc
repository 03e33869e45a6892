#include "model/paged_kv_storage.h"

#include <algorithm>
#include <cstring>

#include "util/check.h"
#include "util/large_alloc.h"
#include "util/strings.h"

namespace weft::model {

uint64_t PagedKvStorage::BytesPerBlock(const ModelConfig& config,
                                       int32_t block_size) {
  if (config.k_dim() <= 0 || config.v_dim() <= 0) return 0;
  return static_cast<uint64_t>(std::max<int64_t>(config.n_layer, 0)) *
         LayerBytesPerBlock(config, block_size, KvType::kF32);
}

uint64_t PagedKvStorage::LayerBytesPerBlock(const ModelConfig& config,
                                            int32_t block_size, KvType type) {
  if (!KvRowFits(type, config.k_dim()) || !KvRowFits(type, config.v_dim())) {
    return 0;
  }
  return static_cast<uint64_t>(std::max(block_size, 0)) *
         static_cast<uint64_t>(KvRowBytes(type, config.k_dim()) +
                               KvRowBytes(type, config.v_dim()));
}

int64_t PagedKvStorage::NumLocalLayers(const ModelConfig& config) {
  int64_t n = 0;
  for (int64_t il = 0; il < config.n_layer; ++il) n += config.IsLocalLayer(il);
  return n;
}

StatusOr<std::unique_ptr<PagedKvStorage>> PagedKvStorage::Create(
    const ModelConfig& config, int32_t num_blocks, int32_t block_size,
    int32_t capacity) {
  PagedKvOptions o;
  o.num_blocks = num_blocks;
  o.block_size = block_size;
  o.capacity = capacity;
  return Create(config, o);
}

StatusOr<std::unique_ptr<PagedKvStorage>> PagedKvStorage::Create(
    const ModelConfig& config, const PagedKvOptions& o) {
  if (o.num_blocks <= 0 || o.block_size <= 0 || o.capacity <= 0 ||
      o.local_num_blocks < 0) {
    return InvalidArgumentError(StrFormat(
        "paged KV cache: %d blocks (+%d local) of %d tokens, capacity %d must "
        "be positive",
        o.num_blocks, o.local_num_blocks, o.block_size, o.capacity));
  }
  if (config.n_layer <= 0 || config.k_dim() <= 0 || config.v_dim() <= 0) {
    return InvalidArgumentError("paged KV cache: model config has no KV rows");
  }
  RETURN_IF_ERROR(CheckKvType(o.type, config));
  const int64_t n_local = NumLocalLayers(config);
  if (o.local_num_blocks > 0 && (n_local == 0 || n_local == config.n_layer)) {
    return InvalidArgumentError(StrFormat(
        "paged KV cache: a local block group needs a model with both "
        "sliding-window and full-attention layers (%s has %lld of %lld "
        "windowed)",
        config.arch_name.c_str(), static_cast<long long>(n_local),
        static_cast<long long>(config.n_layer)));
  }
  std::unique_ptr<PagedKvStorage> c(new PagedKvStorage());
  c->type_ = o.type;
  c->n_layer_ = static_cast<int32_t>(config.n_layer);
  c->num_blocks_ = o.num_blocks;
  c->local_num_blocks_ = o.local_num_blocks;
  c->block_size_ = o.block_size;
  c->capacity_ = o.capacity;
  c->k_row_ = KvRowBytes(o.type, config.k_dim());
  c->v_row_ = KvRowBytes(o.type, config.v_dim());
  c->v_head_dim_ = config.head_dim_v;
  c->layer_group_.assign(static_cast<size_t>(c->n_layer_), 0);
  double bytes = 0;
  for (int32_t l = 0; l < c->n_layer_; ++l) {
    if (o.local_num_blocks > 0 && config.IsLocalLayer(l)) {
      c->layer_group_[static_cast<size_t>(l)] = 1;
    }
    bytes += static_cast<double>(c->group_num_blocks(c->layer_group_[size_t(l)])) *
             o.block_size * static_cast<double>(c->k_row_ + c->v_row_);
  }
  if (bytes > 256.0 * (1ull << 30)) {
    return ResourceExhaustedError(StrFormat(
        "paged KV cache of %d blocks x %d tokens needs %s; too large",
        o.num_blocks, o.block_size, HumanBytes(bytes).c_str()));
  }
  c->bytes_ = static_cast<uint64_t>(bytes);
  // One buffer on huge pages (util/large_alloc.h: attention streams every
  // cached row of a sequence each step, a 4 KiB page every few positions),
  // each layer's K then V regions 64-byte aligned. Zeroed, which touches
  // every page now: the cache is allocated once from its budget, so its
  // memory is resident from the start (RSS stays flat as blocks fill, and a
  // machine without the memory fails here, not later).
  auto align = [](size_t n) { return (n + 63) & ~size_t{63}; };
  std::vector<size_t> offsets;
  size_t total = 0;
  for (int32_t l = 0; l < c->n_layer_; ++l) {
    const size_t slots =
        static_cast<size_t>(c->group_num_blocks(c->layer_group_[size_t(l)])) *
        static_cast<size_t>(o.block_size);
    offsets.push_back(total);
    total += align(slots * static_cast<size_t>(c->k_row_));
    offsets.push_back(total);
    total += align(slots * static_cast<size_t>(c->v_row_));
  }
  c->storage_ = LargeAlloc(total);
  if (c->storage_ == nullptr) {
    return ResourceExhaustedError(StrFormat(
        "cannot allocate a paged KV cache of %s", HumanBytes(bytes).c_str()));
  }
  std::memset(c->storage_.get(), 0, total);
  for (int32_t l = 0; l < c->n_layer_; ++l) {
    c->k_.push_back(c->storage_.get() + offsets[2 * static_cast<size_t>(l)]);
    c->v_.push_back(c->storage_.get() + offsets[2 * static_cast<size_t>(l) + 1]);
  }
  return c;
}

void PagedKvStorage::SetBlockTable(int32_t seq, const std::vector<int32_t>& blocks,
                                   int32_t length) {
  CHECK_GE(seq, 0);
  CHECK(length >= 0 &&
        static_cast<int64_t>(length) <=
            static_cast<int64_t>(blocks.size()) * block_size_);
  for (int32_t b : blocks) CHECK(b == kNullBlock || (b >= 0 && b < num_blocks_));
  if (static_cast<size_t>(seq) >= lengths_.size()) {
    tables_[0].resize(static_cast<size_t>(seq) + 1);
    tables_[1].resize(static_cast<size_t>(seq) + 1);
    lengths_.resize(static_cast<size_t>(seq) + 1, 0);
  }
  tables_[0][seq] = blocks;
  tables_[1][seq].clear();
  lengths_[seq] = length;
}

void PagedKvStorage::SetLocalBlockTable(int32_t seq,
                                        const std::vector<int32_t>& blocks) {
  CHECK_GT(local_num_blocks_, 0);
  CHECK(seq >= 0 && static_cast<size_t>(seq) < lengths_.size());
  for (int32_t b : blocks) {
    CHECK(b == kNullBlock || (b >= 0 && b < local_num_blocks_));
  }
  CHECK_LE(static_cast<int64_t>(lengths_[seq]),
           static_cast<int64_t>(blocks.size()) * block_size_);
  tables_[1][seq] = blocks;
}

void PagedKvStorage::ClearSequence(int32_t seq) {
  if (seq < 0 || static_cast<size_t>(seq) >= lengths_.size()) return;
  tables_[0][seq].clear();
  tables_[1][seq].clear();
  lengths_[seq] = 0;
}

void PagedKvStorage::CopyBlock(int32_t src, int32_t dst, int group) {
  CHECK(group == 0 || (group == 1 && local_num_blocks_ > 0));
  const int32_t n = group_num_blocks(group);
  CHECK(src >= 0 && src < n);
  CHECK(dst >= 0 && dst < n);
  if (src == dst) return;
  const size_t bs = static_cast<size_t>(block_size_);
  const size_t kb = bs * static_cast<size_t>(k_row_);
  const size_t vb = bs * static_cast<size_t>(v_row_);
  for (int32_t l = 0; l < n_layer_; ++l) {
    if (layer_group_[static_cast<size_t>(l)] != group) continue;
    std::memcpy(k_[l] + dst * kb, k_[l] + src * kb, kb);
    std::memcpy(v_[l] + dst * vb, v_[l] + src * vb, vb);
  }
}

Status PagedKvStorage::Reserve(int32_t seq, int32_t end_pos) {
  if (seq < 0 || static_cast<size_t>(seq) >= lengths_.size()) {
    return InvalidArgumentError(StrFormat(
        "sequence id %d has no block table (%zu sequences)", seq,
        lengths_.size()));
  }
  for (int g = 0; g < num_groups(); ++g) {
    const std::vector<int32_t>& table = tables_[g][seq];
    if (end_pos < 0 || end_pos > capacity_ ||
        static_cast<int64_t>(end_pos) >
            static_cast<int64_t>(table.size()) * block_size_) {
      return ResourceExhaustedError(StrFormat(
          "sequence %d needs %d positions; its group %d block table covers "
          "%lld",
          seq, end_pos, g, static_cast<long long>(table.size()) * block_size_));
    }
    // Blocks that positions [Length, end_pos) will be written into.
    const int32_t first = lengths_[seq] / block_size_;
    const int32_t last = end_pos == 0 ? -1 : (end_pos - 1) / block_size_;
    for (int32_t i = first; i <= last; ++i) {
      if (table[static_cast<size_t>(i)] == kNullBlock) {
        return ResourceExhaustedError(StrFormat(
            "sequence %d: group %d block %d to be written is released", seq, g,
            i));
      }
    }
  }
  return OkStatus();
}

void PagedKvStorage::Truncate(int32_t seq, int32_t pos) {
  CHECK(seq >= 0 && static_cast<size_t>(seq) < lengths_.size());
  lengths_[seq] = std::clamp(pos, 0, lengths_[seq]);
}

int32_t PagedKvStorage::Length(int32_t seq) const {
  CHECK(seq >= 0 && static_cast<size_t>(seq) < lengths_.size());
  return lengths_[seq];
}

void PagedKvStorage::Commit(int32_t seq, int32_t end_pos) {
  CHECK(seq >= 0 && static_cast<size_t>(seq) < lengths_.size());
  for (int g = 0; g < num_groups(); ++g) {
    CHECK(end_pos >= 0 &&
          static_cast<int64_t>(end_pos) <=
              static_cast<int64_t>(tables_[g][seq].size()) * block_size_);
  }
  lengths_[seq] = std::max(lengths_[seq], end_pos);
}

int64_t PagedKvStorage::Slot(int32_t layer, int32_t seq, int32_t pos) const {
  DCHECK(layer >= 0 && layer < n_layer_);
  DCHECK(seq >= 0 && static_cast<size_t>(seq) < lengths_.size());
  const std::vector<int32_t>& table =
      tables_[layer_group_[static_cast<size_t>(layer)]][static_cast<size_t>(seq)];
  const size_t bi = static_cast<size_t>(pos / block_size_);
  CHECK(pos >= 0 && bi < table.size());
  const int32_t block = table[bi];
  CHECK(block != kNullBlock);  // a released position is never accessed
  return int64_t{block} * block_size_ + pos % block_size_;
}

uint8_t* PagedKvStorage::KeyData(int32_t layer, int32_t seq, int32_t pos) {
  return k_[static_cast<size_t>(layer)] + Slot(layer, seq, pos) * k_row_;
}
uint8_t* PagedKvStorage::ValueData(int32_t layer, int32_t seq, int32_t pos) {
  return v_[static_cast<size_t>(layer)] + Slot(layer, seq, pos) * v_row_;
}

KvRowMap PagedKvStorage::RowMap(int32_t layer, int32_t seq) const {
  DCHECK(layer >= 0 && layer < n_layer_);
  DCHECK(seq >= 0 && static_cast<size_t>(seq) < lengths_.size());
  KvRowMap m;
  m.k = k_[static_cast<size_t>(layer)];
  m.v = v_[static_cast<size_t>(layer)];
  m.k_row = k_row_;
  m.v_row = v_row_;
  m.table = tables_[layer_group_[static_cast<size_t>(layer)]][static_cast<size_t>(seq)].data();
  m.block_size = block_size_;
  if ((block_size_ & (block_size_ - 1)) == 0) m.block_shift = __builtin_ctz(block_size_);
  m.k_tile = key_tile();
  m.v_tile = value_tile();
  if (m.v_tile > 0) m.v_head = KvRowBytes(type_, v_head_dim_);
  return m;
}

}  // namespace weft::model
