#include "model/kv_cache.h"

#include <algorithm>
#include <new>

#include "util/strings.h"

namespace weft::model {

StatusOr<std::unique_ptr<ContiguousKvCache>> ContiguousKvCache::Create(
    const ModelConfig& config, int32_t capacity, int32_t max_seqs) {
  if (capacity <= 0 || max_seqs <= 0) {
    return InvalidArgumentError(StrFormat(
        "KV cache capacity %d and sequences %d must be positive", capacity,
        max_seqs));
  }
  const double rows = static_cast<double>(config.n_layer) * max_seqs * capacity;
  const double bytes = rows * (config.k_dim() + config.v_dim()) * sizeof(float);
  if (bytes > 64.0 * (1ull << 30)) {
    return ResourceExhaustedError(StrFormat(
        "KV cache of %d positions x %d sequences needs %s; too large",
        capacity, max_seqs, HumanBytes(bytes).c_str()));
  }
  std::unique_ptr<ContiguousKvCache> c(new ContiguousKvCache());
  c->n_layer_ = static_cast<int32_t>(config.n_layer);
  c->capacity_ = capacity;
  c->max_seqs_ = max_seqs;
  c->k_dim_ = config.k_dim();
  c->v_dim_ = config.v_dim();
  try {
    c->k_.assign(static_cast<size_t>(rows) * c->k_dim_, 0.0f);
    c->v_.assign(static_cast<size_t>(rows) * c->v_dim_, 0.0f);
  } catch (const std::bad_alloc&) {
    return ResourceExhaustedError(StrFormat(
        "cannot allocate a KV cache of %s", HumanBytes(bytes).c_str()));
  }
  c->lengths_.assign(static_cast<size_t>(max_seqs), 0);
  return c;
}

size_t ContiguousKvCache::Index(int32_t layer, int32_t seq, int32_t pos) const {
  DCHECK(layer >= 0 && layer < n_layer_);
  DCHECK(seq >= 0 && seq < max_seqs_);
  DCHECK(pos >= 0 && pos < capacity_);
  return (static_cast<size_t>(layer) * max_seqs_ + seq) * capacity_ + pos;
}

Status ContiguousKvCache::Reserve(int32_t seq, int32_t end_pos) {
  if (seq < 0 || seq >= max_seqs_) {
    return InvalidArgumentError(StrFormat(
        "sequence id %d out of range [0, %d)", seq, max_seqs_));
  }
  if (end_pos < 0 || end_pos > capacity_) {
    return ResourceExhaustedError(StrFormat(
        "sequence %d needs %d positions; the KV cache holds %d", seq, end_pos,
        capacity_));
  }
  return OkStatus();
}

void ContiguousKvCache::Truncate(int32_t seq, int32_t pos) {
  CHECK(seq >= 0 && seq < max_seqs_);
  lengths_[seq] = std::clamp(pos, 0, lengths_[seq]);
}

int32_t ContiguousKvCache::Length(int32_t seq) const {
  CHECK(seq >= 0 && seq < max_seqs_);
  return lengths_[seq];
}

void ContiguousKvCache::Commit(int32_t seq, int32_t end_pos) {
  CHECK(seq >= 0 && seq < max_seqs_);
  CHECK(end_pos >= 0 && end_pos <= capacity_);
  lengths_[seq] = std::max(lengths_[seq], end_pos);
}

float* ContiguousKvCache::KeyRow(int32_t layer, int32_t seq, int32_t pos) {
  return k_.data() + Index(layer, seq, pos) * k_dim_;
}
float* ContiguousKvCache::ValueRow(int32_t layer, int32_t seq, int32_t pos) {
  return v_.data() + Index(layer, seq, pos) * v_dim_;
}
const float* ContiguousKvCache::KeyRow(int32_t layer, int32_t seq,
                                       int32_t pos) const {
  return k_.data() + Index(layer, seq, pos) * k_dim_;
}
const float* ContiguousKvCache::ValueRow(int32_t layer, int32_t seq,
                                         int32_t pos) const {
  return v_.data() + Index(layer, seq, pos) * v_dim_;
}

}  // namespace weft::model
