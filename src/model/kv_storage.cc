#include "model/kv_storage.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "kernels/isa.h"
#include "tensor/blocks.h"
#include "tensor/half.h"
#include "tensor/quant.h"
#include "util/enum_name.h"
#include "util/large_alloc.h"
#include "util/strings.h"

namespace weft::model {
namespace {

constexpr int64_t kQ8Block = 32;     // elements per Q8_0 block
constexpr int64_t kQ8Bytes = 34;     // fp16 scale + 32 int8
static_assert(sizeof(BlockQ8_0) == kQ8Bytes);

}  // namespace

const char* KvTypeName(KvType type) {
  static constexpr const char* kNames[] = {"f32", "f16", "q8_0"};
  return EnumName<KvType::kQ8_0>(type, kNames, "?");
}

StatusOr<KvType> ParseKvType(std::string_view name) {
  std::string lower(name);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(ch));
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
    if (lower == KvTypeName(t)) return t;
  }
  return InvalidArgumentError(StrFormat(
      "unknown KV cache type '%s' (want f32, f16 or q8_0)",
      CEscape(name).c_str()));
}

bool KvRowFits(KvType type, int64_t n) {
  return n > 0 && (type != KvType::kQ8_0 || n % kQ8Block == 0);
}

int32_t KeyTileFor(KvType type, int32_t block_size) {
  if (type != KvType::kF16) return 0;
  if (block_size <= 0) return kMaxKeyTile;
  return std::min(kMaxKeyTile, block_size & -block_size);
}

int64_t KvRowBytes(KvType type, int64_t n) {
  DCHECK(KvRowFits(type, n));
  switch (type) {
    case KvType::kF32: return n * 4;
    case KvType::kF16: return n * 2;
    case KvType::kQ8_0: return n / kQ8Block * kQ8Bytes;
  }
  return 0;
}

Status CheckKvType(KvType type, const ModelConfig& config) {
  if (!KvRowFits(type, config.k_dim()) || !KvRowFits(type, config.v_dim())) {
    return InvalidArgumentError(StrFormat(
        "a %s KV cache needs K and V rows that are multiples of 32 elements; "
        "this model's are %lld and %lld",
        KvTypeName(type), static_cast<long long>(config.k_dim()),
        static_cast<long long>(config.v_dim())));
  }
  return OkStatus();
}

StatusOr<kv::KvLayout> KvLayoutOf(const ModelConfig& config, KvType type) {
  RETURN_IF_ERROR(CheckKvType(type, config));
  kv::KvLayout layout;
  layout.row_bytes = static_cast<uint64_t>(KvRowBytes(type, config.k_dim()) +
                                           KvRowBytes(type, config.v_dim()));
  layout.num_layers = config.n_layer;
  for (int64_t il = 0; il < config.n_layer; ++il) {
    layout.num_local_layers += config.IsLocalLayer(il);
  }
  layout.sliding_window = config.sliding_window;
  return layout;
}

void StoreKvRow(KvType type, const float* src, int64_t n, uint8_t* dst) {
  switch (type) {
    case KvType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case KvType::kF16:
      // The active table's (F16C where the CPU has it): every table's
      // f32_to_f16 is bitwise Fp32ToFp16.
      kernels::Kernels().f32_to_f16(src, reinterpret_cast<uint16_t*>(dst), n);
      return;
    case KvType::kQ8_0: {
      const Status s = QuantizeRow(GgmlType::kQ8_0, src, dst, n);
      CHECK(s.ok()) << s.ToString();
      return;
    }
  }
}

void LoadKvRow(KvType type, const uint8_t* row, int64_t first, int64_t n,
               float* dst) {
  switch (type) {
    case KvType::kF32:
      std::memcpy(dst, reinterpret_cast<const float*>(row) + first,
                  static_cast<size_t>(n) * sizeof(float));
      return;
    case KvType::kF16: {
      const uint16_t* h = reinterpret_cast<const uint16_t*>(row) + first;
      for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(h[i]);
      return;
    }
    case KvType::kQ8_0: {
      int64_t i = 0;
      while (i < n) {
        const int64_t e = first + i;
        const BlockQ8_0* b =
            reinterpret_cast<const BlockQ8_0*>(row + e / kQ8Block * kQ8Bytes);
        const float d = Fp16ToFp32(b->d);
        const int64_t end = std::min(n, i + kQ8Block - e % kQ8Block);
        for (; i < end; ++i) dst[i] = d * static_cast<float>(b->qs[(first + i) % kQ8Block]);
      }
      return;
    }
  }
}

void KvStorage::StoreKey(int32_t layer, int32_t seq, int32_t pos, const float* k, int64_t n) {
  const int32_t w = key_tile();
  if (w == 0) {
    StoreKvRow(kv_type(), k, n, KeyData(layer, seq, pos));
    return;
  }
  // The tile's slots are adjacent (w divides the block size). Converted
  // by the active table (bitwise Fp32ToFp16, as in StoreKvRow), a piece at
  // a time, then scattered: the scalar conversion took ~2% of a prefill.
  uint16_t* h = reinterpret_cast<uint16_t*>(KeyData(layer, seq, pos - pos % w)) + pos % w;
  constexpr int64_t kPiece = 256;
  uint16_t piece[kPiece];
  for (int64_t e0 = 0; e0 < n; e0 += kPiece) {
    const int64_t m = std::min(kPiece, n - e0);
    kernels::Kernels().f32_to_f16(k + e0, piece, m);
    for (int64_t e = 0; e < m; ++e) h[(e0 + e) * w] = piece[e];
  }
}

void KvStorage::LoadKey(int32_t layer, int32_t seq, int32_t pos, int64_t n, float* dst) const {
  const int32_t w = key_tile();
  if (w == 0) {
    LoadKvRow(kv_type(), KeyData(layer, seq, pos), 0, n, dst);
    return;
  }
  const uint16_t* h =
      reinterpret_cast<const uint16_t*>(KeyData(layer, seq, pos - pos % w)) + pos % w;
  for (int64_t e = 0; e < n; ++e) dst[e] = Fp16ToFp32(h[e * w]);
}

void KvStorage::StoreValue(int32_t layer, int32_t seq, int32_t pos, const float* v, int64_t n) {
  const int32_t w = value_tile();
  if (w == 0) {
    StoreKvRow(kv_type(), v, n, ValueData(layer, seq, pos));
    return;
  }
  // Head h's part goes to [h][pos % w] of the tile, whose slots are
  // adjacent (w divides the block size), stored as the row would hold it.
  const int64_t hd = value_head_dim(), hb = KvRowBytes(kv_type(), hd);
  uint8_t* tile = ValueData(layer, seq, pos - pos % w);
  for (int64_t h = 0; h * hd < n; ++h) {
    StoreKvRow(kv_type(), v + h * hd, hd, tile + (h * w + pos % w) * hb);
  }
}

void KvStorage::LoadValue(int32_t layer, int32_t seq, int32_t pos, int64_t n, float* dst) const {
  const int32_t w = value_tile();
  if (w == 0) {
    LoadKvRow(kv_type(), ValueData(layer, seq, pos), 0, n, dst);
    return;
  }
  const int64_t hd = value_head_dim(), hb = KvRowBytes(kv_type(), hd);
  const uint8_t* tile = ValueData(layer, seq, pos - pos % w);
  for (int64_t h = 0; h * hd < n; ++h) {
    LoadKvRow(kv_type(), tile + (h * w + pos % w) * hb, 0, hd, dst + h * hd);
  }
}

float* KvStorage::KeyRow(int32_t layer, int32_t seq, int32_t pos) {
  CHECK(kv_type() == KvType::kF32) << "float rows of a " << KvTypeName(kv_type())
                                   << " KV cache";
  return reinterpret_cast<float*>(KeyData(layer, seq, pos));
}
float* KvStorage::ValueRow(int32_t layer, int32_t seq, int32_t pos) {
  CHECK(kv_type() == KvType::kF32) << "float rows of a " << KvTypeName(kv_type())
                                   << " KV cache";
  return reinterpret_cast<float*>(ValueData(layer, seq, pos));
}
const float* KvStorage::KeyRow(int32_t layer, int32_t seq, int32_t pos) const {
  CHECK(kv_type() == KvType::kF32) << "float rows of a " << KvTypeName(kv_type())
                                   << " KV cache";
  return reinterpret_cast<const float*>(KeyData(layer, seq, pos));
}
const float* KvStorage::ValueRow(int32_t layer, int32_t seq, int32_t pos) const {
  CHECK(kv_type() == KvType::kF32) << "float rows of a " << KvTypeName(kv_type())
                                   << " KV cache";
  return reinterpret_cast<const float*>(ValueData(layer, seq, pos));
}

StatusOr<std::unique_ptr<ContiguousKvStorage>> ContiguousKvStorage::Create(
    const ModelConfig& config, int32_t capacity, int32_t max_seqs,
    KvType type) {
  if (capacity <= 0 || max_seqs <= 0) {
    return InvalidArgumentError(StrFormat(
        "KV cache capacity %d and sequences %d must be positive", capacity,
        max_seqs));
  }
  RETURN_IF_ERROR(CheckKvType(type, config));
  const int64_t k_row = KvRowBytes(type, config.k_dim());
  const int64_t v_row = KvRowBytes(type, config.v_dim());
  // F16 keys are stored in tiles of kMaxKeyTile slots: a sequence's slots
  // are rounded up to whole tiles.
  const int32_t tile = KeyTileFor(type, 0);
  const int32_t slots = tile > 0 ? (capacity + tile - 1) / tile * tile : capacity;
  const double rows = static_cast<double>(config.n_layer) * max_seqs * slots;
  const double bytes = rows * static_cast<double>(k_row + v_row);
  if (bytes > 64.0 * (1ull << 30)) {
    return ResourceExhaustedError(StrFormat(
        "KV cache of %d positions x %d sequences needs %s; too large",
        capacity, max_seqs, HumanBytes(bytes).c_str()));
  }
  std::unique_ptr<ContiguousKvStorage> c(new ContiguousKvStorage());
  c->type_ = type;
  c->n_layer_ = static_cast<int32_t>(config.n_layer);
  c->capacity_ = capacity;
  c->slots_ = slots;
  c->max_seqs_ = max_seqs;
  c->k_row_ = k_row;
  c->v_row_ = v_row;
  c->v_head_dim_ = config.head_dim_v;
  // Huge pages (util/large_alloc.h): attention streams every cached row
  // of a sequence each step, a 4 KiB page every few positions.
  c->k_bytes_ = static_cast<size_t>(rows) * static_cast<size_t>(k_row);
  c->v_bytes_ = static_cast<size_t>(rows) * static_cast<size_t>(v_row);
  c->k_ = LargeAlloc(c->k_bytes_);
  c->v_ = LargeAlloc(c->v_bytes_);
  if (c->k_ == nullptr || c->v_ == nullptr) {
    return ResourceExhaustedError(StrFormat(
        "cannot allocate a KV cache of %s", HumanBytes(bytes).c_str()));
  }
  std::memset(c->k_.get(), 0, c->k_bytes_);
  std::memset(c->v_.get(), 0, c->v_bytes_);
  c->lengths_.assign(static_cast<size_t>(max_seqs), 0);
  return c;
}

size_t ContiguousKvStorage::Index(int32_t layer, int32_t seq, int32_t pos) const {
  DCHECK(layer >= 0 && layer < n_layer_);
  DCHECK(seq >= 0 && seq < max_seqs_);
  DCHECK(pos >= 0 && pos < capacity_);
  return (static_cast<size_t>(layer) * max_seqs_ + seq) * slots_ + pos;
}

Status ContiguousKvStorage::Reserve(int32_t seq, int32_t end_pos) {
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

void ContiguousKvStorage::Truncate(int32_t seq, int32_t pos) {
  CHECK(seq >= 0 && seq < max_seqs_);
  lengths_[seq] = std::clamp(pos, 0, lengths_[seq]);
}

int32_t ContiguousKvStorage::Length(int32_t seq) const {
  CHECK(seq >= 0 && seq < max_seqs_);
  return lengths_[seq];
}

void ContiguousKvStorage::Commit(int32_t seq, int32_t end_pos) {
  CHECK(seq >= 0 && seq < max_seqs_);
  CHECK(end_pos >= 0 && end_pos <= capacity_);
  lengths_[seq] = std::max(lengths_[seq], end_pos);
}

uint8_t* ContiguousKvStorage::KeyData(int32_t layer, int32_t seq, int32_t pos) {
  return k_.get() + Index(layer, seq, pos) * static_cast<size_t>(k_row_);
}
uint8_t* ContiguousKvStorage::ValueData(int32_t layer, int32_t seq, int32_t pos) {
  return v_.get() + Index(layer, seq, pos) * static_cast<size_t>(v_row_);
}

KvRowMap ContiguousKvStorage::RowMap(int32_t layer, int32_t seq) const {
  const size_t slot0 = Index(layer, seq, 0);
  KvRowMap m;
  m.k = k_.get() + slot0 * static_cast<size_t>(k_row_);
  m.v = v_.get() + slot0 * static_cast<size_t>(v_row_);
  m.k_row = k_row_;
  m.v_row = v_row_;
  m.k_tile = key_tile();
  m.v_tile = value_tile();
  if (m.v_tile > 0) m.v_head = KvRowBytes(type_, v_head_dim_);
  return m;
}

}  // namespace weft::model
