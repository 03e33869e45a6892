// Attention over the KV storage and the writes that fill it, for one layer of
// a varlen batch (model/batch.h). Split from forward.cc so that the KV
// storage format and the attention kernels can change without touching the
// decoder stack.
//
// Thread safety: stateless functions; the per-thread score buffers in
// AttentionContext are used by one call at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/kv_storage.h"

namespace weft::model {

struct AttentionContext {
  const kernels::KernelTable* kt = nullptr;  // never null
  kernels::ThreadPool* pool = nullptr;       // null: the calling thread only
  // Per pool thread: room for at least AttentionScratchFloats floats (one
  // task's query rows, scores and a tile of dequantized rows). Size >=
  // pool's num_threads (1 without a pool).
  std::vector<std::vector<float>>* scores = nullptr;
  // [n_head] the layer's attention sink logits (gpt-oss); null: none.
  const float* sinks = nullptr;
};

// Floats of per-thread scratch Attention needs (any batch, any context).
int64_t AttentionScratchFloats(const ModelConfig& c);

// Stores every batch token's K and V rows for layer `layer`, converted
// to the cache's KvType.
// k: [T, k_dim] (after RoPE), v: [T, v_dim].
void WriteKv(const ModelConfig& c, int32_t layer, const Batch& batch,
             const float* k, const float* v, KvStorage* cache);

// Attention of every batch token against its own sequence's cached
// positions <= its position (and inside the window on sliding-window
// layers), by slices of kernels::kAttentionSlice positions, bitwise what
// kernels::Attention gives each (token, head) alone.
// q: [T, q_dim], out: [T, n_head * head_dim_v].
void Attention(const AttentionContext& ax, const ModelConfig& c, int32_t layer,
               const KvStorage& cache, const Batch& batch, const float* q,
               float* out);

}  // namespace weft::model
