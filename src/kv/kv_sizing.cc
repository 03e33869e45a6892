#include "kv/kv_sizing.h"

#include <algorithm>

#include "util/strings.h"

namespace weft::kv {

uint64_t KvLayout::LayerBytesPerBlock(int block_size) const {
  return static_cast<uint64_t>(std::max(block_size, 0)) * row_bytes;
}

int64_t KvBlocksForBytes(const KvLayout& layout, int block_size,
                         uint64_t bytes) {
  if (block_size <= 0 || layout.num_layers <= 0) return 0;
  const uint64_t per = static_cast<uint64_t>(layout.num_layers) *
                       layout.LayerBytesPerBlock(block_size);
  if (per == 0) return 0;
  return static_cast<int64_t>(bytes / per);
}

StatusOr<KvCacheConfig> KvConfigForBytes(const KvLayout& layout,
                                         int block_size, uint64_t bytes,
                                         const KvPassLimits& limits,
                                         bool split_groups,
                                         uint64_t* bytes_used) {
  if (block_size <= 0) {
    return InvalidArgumentError(StrFormat("KV block size %d", block_size));
  }
  const uint64_t layer = layout.LayerBytesPerBlock(block_size);
  const int64_t n_local = layout.num_local_layers;
  const int64_t n_full = layout.num_layers - n_local;
  KvCacheConfig kv;
  kv.block_size = block_size;
  int64_t full = 0, local = 0;
  if (split_groups && n_local > 0 && n_full > 0 && layer > 0) {
    const int64_t bs = block_size;
    const int64_t w = layout.sliding_window;
    const int64_t need =
        int64_t{std::max(limits.max_seqs, 1)} * ((w + bs - 1) / bs + 1) +
        (int64_t{std::max(limits.max_pass_tokens, 1)} + bs - 1) / bs;
    const uint64_t gb = static_cast<uint64_t>(n_full) * layer;
    const uint64_t lb = static_cast<uint64_t>(n_local) * layer;
    const uint64_t local_bytes = static_cast<uint64_t>(need) * lb;
    const int64_t rest =
        bytes > local_bytes ? static_cast<int64_t>((bytes - local_bytes) / gb)
                            : 0;
    if (rest >= need) {
      full = rest;
      local = need;
    } else {
      full = local = static_cast<int64_t>(bytes / (gb + lb));
    }
    kv.local_window = static_cast<int>(w);
    if (bytes_used != nullptr) {
      *bytes_used = static_cast<uint64_t>(full) * gb +
                    static_cast<uint64_t>(local) * lb;
    }
  } else {
    full = KvBlocksForBytes(layout, block_size, bytes);
    if (bytes_used != nullptr) {
      *bytes_used = static_cast<uint64_t>(full) *
                    static_cast<uint64_t>(layout.num_layers) * layer;
    }
  }
  if (full < 1 || full > (int64_t{1} << 30)) {
    return InvalidArgumentError(StrFormat(
        "a KV budget of %s holds %lld blocks of %d tokens; need at least one",
        HumanBytes(static_cast<double>(bytes)).c_str(), (long long)full,
        block_size));
  }
  kv.num_blocks = static_cast<int>(full);
  kv.local_num_blocks = static_cast<int>(local);
  if (local == 0) kv.local_window = 0;
  return kv;
}

}  // namespace weft::kv
