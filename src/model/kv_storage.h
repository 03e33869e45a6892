// KvStorage: where the forward pass keeps the keys and values of past tokens
// (the tensors only; "KV cache" is kv/'s block-table bookkeeping,
// kv::KvCacheManager). The forward pass writes K and V of a (sequence, position) per layer, then
// reads rows back for attention; it never assumes how rows are laid out, so
// a paged implementation (blocks from a pool) can replace the contiguous one.
//
// A key row is [n_head_kv * head_dim_k] (after RoPE), a value row
// [n_head_kv * head_dim_v], stored as KvType: float32, float16, or Q8_0
// (ggml's blocks of 32: an fp16 scale and 32 int8, 34 bytes). Writes convert
// from float32 (StoreKvRow); attention reads the typed rows (model/
// attention.cc). F16 keys are stored transposed in tiles of up to 16
// positions (KvRowMap::k_tile, written and read through StoreKey /
// LoadKey), so the score kernel multiplies a key element into 16 positions
// at once with no horizontal sums. F16 values share those tiles, stored
// head-major in them (KvRowMap::v_tile, StoreValue / LoadValue), so one kv
// head's values of a tile are one contiguous run that streams like a key
// tile. The float* accessors exist for F32 storage only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "kv/kv_sizing.h"
#include "model/config.h"
#include "util/large_alloc.h"
#include "util/status.h"

namespace weft::model {

enum class KvType { kF32, kF16, kQ8_0 };

// "f32", "f16", "q8_0".
const char* KvTypeName(KvType type);
// Parses KvTypeName's names (case-insensitive); INVALID_ARGUMENT otherwise.
StatusOr<KvType> ParseKvType(std::string_view name);
// Bytes of one row of n elements. REQUIRES: KvRowFits(type, n).
int64_t KvRowBytes(KvType type, int64_t n);
// Whether n elements make whole rows of `type` (Q8_0: n % 32 == 0).
bool KvRowFits(KvType type, int64_t n);
// INVALID_ARGUMENT when the model's K or V rows do not fit `type`.
Status CheckKvType(KvType type, const ModelConfig& config);
// What the model's KV storage of `type` needs, for kv's sizing
// (kv::KvConfigForBytes). Errors: CheckKvType's.
StatusOr<kv::KvLayout> KvLayoutOf(const ModelConfig& config, KvType type);
// dst (KvRowBytes(type, n) bytes) = src [n] converted to `type` (F16:
// round to nearest even; Q8_0: ggml's reference quantizer).
void StoreKvRow(KvType type, const float* src, int64_t n, uint8_t* dst);
// dst [n] = elements [first, first + n) of a row of `type` as float32.
void LoadKvRow(KvType type, const uint8_t* row, int64_t first, int64_t n,
               float* dst);

// The most slots of one key tile (KvRowMap::k_tile).
inline constexpr int32_t kMaxKeyTile = 16;
// KvRowMap::k_tile of storage of `type` whose blocks hold block_size slots
// (0: contiguous storage): for F16, the largest power of two <= kMaxKeyTile
// dividing block_size (kMaxKeyTile when contiguous); 0 (rows) otherwise.
int32_t KeyTileFor(KvType type, int32_t block_size);

// Where one (layer, sequence)'s K and V rows are, for reading many
// positions without a virtual call each: row p lives at slot p
// (contiguous) or table[p / block_size] * block_size + p % block_size
// (paged), times the row's bytes. Valid until the storage changes.
struct KvRowMap {
  const uint8_t* k = nullptr;      // slot 0's key row
  const uint8_t* v = nullptr;      // slot 0's value row
  int64_t k_row = 0;               // bytes per key row
  int64_t v_row = 0;               // bytes per value row
  const int32_t* table = nullptr;  // paged: a block per entry
  int32_t block_size = 0;          // paged: slots per block; 0: contiguous
  int32_t block_shift = -1;        // log2(block_size) when a power of two
  // > 0: F16 keys in tiles of k_tile slots (a power of two <= 16 that
  // divides block_size): the keys of slots s0 .. s0 + k_tile - 1 (s0 a
  // multiple of k_tile) fill those slots' bytes transposed, element e of
  // slot s0 + p at half e * k_tile + p (kernel_table.h scores_f16t).
  // 0: key rows.
  int32_t k_tile = 0;
  // > 0: F16 values in the keys' tiles (v_tile == k_tile), head-major: the
  // values of slots s0 .. s0 + v_tile - 1 fill those slots' bytes as
  // [n_head_kv][v_tile][head_dim_v] halves, so a kv head's values of a
  // tile are v_tile * v_head contiguous bytes. 0: value rows.
  int32_t v_tile = 0;
  int64_t v_head = 0;  // v_tile > 0: bytes of one kv head's part of a value

  int64_t Slot(int32_t pos) const {
    if (block_size == 0) return pos;
    if (block_shift >= 0) {
      return (int64_t{table[pos >> block_shift]} << block_shift) | (pos & (block_size - 1));
    }
    return int64_t{table[pos / block_size]} * block_size + pos % block_size;
  }
  // REQUIRES: pos readable (KvStorage::KeyData's conditions).
  const uint8_t* Key(int32_t pos) const { return k + Slot(pos) * k_row; }
  const uint8_t* Value(int32_t pos) const { return v + Slot(pos) * v_row; }
  // The tile holding pos's key. REQUIRES: k_tile > 0, pos readable.
  const uint8_t* KeyTile(int32_t pos) const { return Key(pos - pos % k_tile); }
  // Kv head `head`'s part of pos's value (v_head bytes).
  // REQUIRES: v_tile > 0, pos readable.
  const uint8_t* ValueHead(int32_t pos, int64_t head) const {
    const int32_t lane = pos & (v_tile - 1);  // v_tile is a power of two
    return Value(pos - lane) + (head * v_tile + lane) * v_head;
  }
  // out[i] = Key(pos + i) (key) or Value(pos + i) for i < n: one table
  // lookup per block, the rest by the row's bytes.
  // REQUIRES: positions pos .. pos + n - 1 readable.
  void Rows(bool key, int32_t pos, int64_t n, const uint8_t** out) const {
    const int64_t stride = key ? k_row : v_row;
    for (int64_t i = 0; i < n;) {
      const int32_t at = pos + static_cast<int32_t>(i);
      const int64_t run = block_size > 0 ? std::min<int64_t>(n - i, block_size - at % block_size)
                                         : n - i;
      const uint8_t* r = key ? Key(at) : Value(at);
      for (const int64_t e = i + run; i < e; ++i, r += stride) out[i] = r;
    }
  }
};

// Thread safety: not thread-safe; one forward pass at a time per storage.
class KvStorage {
 public:
  virtual ~KvStorage() = default;

  // Makes rows [0, end_pos) of `seq` writable. Error when the sequence id
  // is unknown or the storage cannot hold that many positions.
  virtual Status Reserve(int32_t seq, int32_t end_pos) = 0;
  // Forgets positions >= `pos` of `seq` (pos = 0 clears it).
  virtual void Truncate(int32_t seq, int32_t pos) = 0;
  // Positions of `seq` written so far (one past the last written).
  virtual int32_t Length(int32_t seq) const = 0;
  // Most positions one sequence can hold.
  virtual int32_t Capacity() const = 0;
  virtual int32_t MaxSequences() const = 0;
  // The storage type of every row.
  virtual KvType kv_type() const = 0;

  // Raw rows (KvRowBytes(kv_type(), k_dim or v_dim) bytes). With tiles
  // (key_tile() > 0) a slot's bytes hold parts of its tile's keys or
  // values: they are written and read whole through StoreKey / LoadKey /
  // StoreValue / LoadValue, and slots are copied a whole tile at a time.
  // REQUIRES: Reserve(seq, > pos) succeeded (writes), pos < Length(seq) or
  // written in the current pass (reads).
  virtual uint8_t* KeyData(int32_t layer, int32_t seq, int32_t pos) = 0;
  virtual uint8_t* ValueData(int32_t layer, int32_t seq, int32_t pos) = 0;
  // The same rows, read-only (the accessors above only compute an address).
  const uint8_t* KeyData(int32_t layer, int32_t seq, int32_t pos) const {
    return const_cast<KvStorage*>(this)->KeyData(layer, seq, pos);
  }
  const uint8_t* ValueData(int32_t layer, int32_t seq, int32_t pos) const {
    return const_cast<KvStorage*>(this)->ValueData(layer, seq, pos);
  }
  // KvRowMap::k_tile of every layer and sequence (0: keys are rows).
  virtual int32_t key_tile() const = 0;
  // Stores the key k [n = k_dim] of (layer, seq, pos) as kv_type(): the
  // row KeyData gives, or its elements in the tile (key_tile() > 0).
  // REQUIRES: as KeyData's writes.
  void StoreKey(int32_t layer, int32_t seq, int32_t pos, const float* k, int64_t n);
  // dst [n = k_dim] = that key as float32. REQUIRES: as KeyData's reads.
  void LoadKey(int32_t layer, int32_t seq, int32_t pos, int64_t n, float* dst) const;
  // KvRowMap::v_tile of every layer and sequence: F16 values share the
  // keys' tiles.
  int32_t value_tile() const { return key_tile(); }
  // Elements of one kv head's part of a value row (the model's head_dim_v).
  virtual int64_t value_head_dim() const = 0;
  // Stores the value v [n = v_dim] of (layer, seq, pos) as kv_type(): the
  // row ValueData gives, or its heads' parts in the tile (value_tile() > 0).
  // REQUIRES: as KeyData's writes.
  void StoreValue(int32_t layer, int32_t seq, int32_t pos, const float* v, int64_t n);
  // dst [n = v_dim] = that value as float32. REQUIRES: as KeyData's reads.
  void LoadValue(int32_t layer, int32_t seq, int32_t pos, int64_t n, float* dst) const;
  // Records that positions [0, end_pos) of `seq` hold data.
  virtual void Commit(int32_t seq, int32_t end_pos) = 0;
  // The addresses of `seq`'s rows in `layer` (KeyData / ValueData's, for
  // the positions those may read), valid until the storage changes.
  virtual KvRowMap RowMap(int32_t layer, int32_t seq) const = 0;

  // Float rows. REQUIRES: kv_type() == KvType::kF32 (CHECK).
  float* KeyRow(int32_t layer, int32_t seq, int32_t pos);
  float* ValueRow(int32_t layer, int32_t seq, int32_t pos);
  const float* KeyRow(int32_t layer, int32_t seq, int32_t pos) const;
  const float* ValueRow(int32_t layer, int32_t seq, int32_t pos) const;
};

// One preallocated [layer][seq][pos] slab per K and V.
// Invariant: lengths_[s] <= capacity_ for every sequence.
class ContiguousKvStorage : public KvStorage {
 public:
  // Allocates n_layer * max_seqs * capacity rows of K and of V. Error when
  // the size is not positive or would overflow, or the rows do not fit
  // `type`.
  static StatusOr<std::unique_ptr<ContiguousKvStorage>> Create(
      const ModelConfig& config, int32_t capacity, int32_t max_seqs = 1,
      KvType type = KvType::kF32);

  Status Reserve(int32_t seq, int32_t end_pos) override;
  void Truncate(int32_t seq, int32_t pos) override;
  int32_t Length(int32_t seq) const override;
  int32_t Capacity() const override { return capacity_; }
  int32_t MaxSequences() const override { return max_seqs_; }
  KvType kv_type() const override { return type_; }
  int32_t key_tile() const override { return KeyTileFor(type_, 0); }
  int64_t value_head_dim() const override { return v_head_dim_; }
  using KvStorage::KeyData;
  using KvStorage::ValueData;
  uint8_t* KeyData(int32_t layer, int32_t seq, int32_t pos) override;
  uint8_t* ValueData(int32_t layer, int32_t seq, int32_t pos) override;
  void Commit(int32_t seq, int32_t end_pos) override;
  KvRowMap RowMap(int32_t layer, int32_t seq) const override;

  // Bytes held by K and V together.
  uint64_t bytes() const { return k_bytes_ + v_bytes_; }

 private:
  ContiguousKvStorage() = default;
  size_t Index(int32_t layer, int32_t seq, int32_t pos) const;

  KvType type_ = KvType::kF32;
  int32_t n_layer_ = 0;
  int32_t capacity_ = 0;
  int32_t max_seqs_ = 0;
  int32_t slots_ = 0;  // slots per (layer, sequence): capacity_ in whole key tiles
  int64_t k_row_ = 0;  // bytes per key row
  int64_t v_row_ = 0;  // bytes per value row
  int64_t v_head_dim_ = 0;  // elements per kv head of a value row
  LargeBuffer k_;  // [n_layer, max_seqs, slots_, k_row_]
  LargeBuffer v_;  // [n_layer, max_seqs, slots_, v_row_]
  size_t k_bytes_ = 0;
  size_t v_bytes_ = 0;
  std::vector<int32_t> lengths_;
};

}  // namespace weft::model
