#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace weft::model {
namespace {

// A per-thread row of n floats for dequantized Q8_0 K/V head slices.
float* DecodeBuffer(int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

}  // namespace

void WriteKv(const ModelConfig& c, int32_t layer, const Batch& batch,
             const float* k, const float* v, KvCache* cache) {
  const int64_t T = static_cast<int64_t>(batch.size());
  const KvType type = cache->kv_type();
  for (int64_t t = 0; t < T; ++t) {
    const int32_t seq = batch.seq_ids[t], pos = batch.positions[t];
    StoreKvRow(type, k + t * c.k_dim(), c.k_dim(),
               cache->KeyData(layer, seq, pos));
    StoreKvRow(type, v + t * c.v_dim(), c.v_dim(),
               cache->ValueData(layer, seq, pos));
  }
}

// One task per (token, kv head, slice of the kv head's query heads): the
// task reads each cached K and V row once for all of its query heads (GQA
// sharing; a row stays in L1 while the heads use it). Slices exist only to
// give every thread work when T * n_head_kv is small. Every query head does
// exactly the kernel calls of a one-head loop in the same order, so a
// head's result does not depend on the slicing, the batch or the threads.
void Attention(const AttentionContext& ax, const ModelConfig& c, int32_t layer,
               const KvCache& cache, const Batch& batch, const float* q,
               float* out) {
  const kernels::KernelTable& kt = *ax.kt;
  const int64_t group = c.n_head / c.n_head_kv;
  const int64_t hd = c.head_dim_k, hdv = c.head_dim_v;
  const bool local = c.IsLocalLayer(layer);
  const KvType type = cache.kv_type();
  const int64_t T = static_cast<int64_t>(batch.size());
  const int n_threads = ax.pool != nullptr ? ax.pool->num_threads() : 1;
  // Query heads per task: the whole group unless that leaves threads idle.
  const int64_t kv_tasks = T * c.n_head_kv;
  const int64_t slices =
      std::clamp<int64_t>((n_threads + kv_tasks - 1) / kv_tasks, 1, group);
  const int64_t per_slice = (group + slices - 1) / slices;
  const int64_t n_slices = (group + per_slice - 1) / per_slice;
  auto task = [&](int64_t job, int thread) {
    const int64_t slice = job % n_slices;
    const int64_t kvh = (job / n_slices) % c.n_head_kv;
    const int64_t t = job / (n_slices * c.n_head_kv);
    const int64_t h0 = kvh * group + slice * per_slice;
    const int64_t nh = std::min(per_slice, (kvh + 1) * group - h0);
    const int32_t seq = batch.seq_ids[t];
    const int32_t pos = batch.positions[t];
    // llama.cpp's standard SWA: key p is visible iff pos - p < window.
    int32_t lo = 0;
    if (local && pos >= c.sliding_window) {
      lo = pos - static_cast<int32_t>(c.sliding_window) + 1;
    }
    const float* qt = q + t * c.q_dim() + h0 * hd;  // [nh, hd]
    const int64_t n = pos - lo + 1;
    float* scores = (*ax.scores)[thread].data();  // [nh, n]
    switch (type) {
      case KvType::kF32:
        for (int32_t p = lo; p <= pos; ++p) {
          const float* k =
              reinterpret_cast<const float*>(cache.KeyData(layer, seq, p)) + kvh * hd;
          for (int64_t g = 0; g < nh; ++g) {
            scores[g * n + p - lo] = kt.dot_f32(qt + g * hd, k, hd) * c.attn_scale;
          }
        }
        break;
      case KvType::kF16:
        for (int32_t p = lo; p <= pos; ++p) {
          const uint16_t* k =
              reinterpret_cast<const uint16_t*>(cache.KeyData(layer, seq, p)) + kvh * hd;
          for (int64_t g = 0; g < nh; ++g) {
            scores[g * n + p - lo] = kt.dot_f16(qt + g * hd, k, hd) * c.attn_scale;
          }
        }
        break;
      case KvType::kQ8_0: {
        float* buf = DecodeBuffer(std::max(hd, hdv));
        for (int32_t p = lo; p <= pos; ++p) {
          LoadKvRow(type, cache.KeyData(layer, seq, p), kvh * hd, hd, buf);
          for (int64_t g = 0; g < nh; ++g) {
            scores[g * n + p - lo] = kt.dot_f32(qt + g * hd, buf, hd) * c.attn_scale;
          }
        }
        break;
      }
    }
    for (int64_t g = 0; g < nh; ++g) {
      float* sg = scores + g * n;
      if (c.attn_softcap > 0) {
        for (int64_t j = 0; j < n; ++j) {
          sg[j] = c.attn_softcap * std::tanh(sg[j] / c.attn_softcap);
        }
      }
      kt.softmax(sg, n);
    }
    float* o = out + t * c.n_head * hdv + h0 * hdv;  // [nh, hdv]
    std::fill_n(o, nh * hdv, 0.0f);
    switch (type) {
      case KvType::kF32:
        for (int32_t p = lo; p <= pos; ++p) {
          const float* v =
              reinterpret_cast<const float*>(cache.ValueData(layer, seq, p)) + kvh * hdv;
          for (int64_t g = 0; g < nh; ++g) kt.axpy_f32(scores[g * n + p - lo], v, o + g * hdv, hdv);
        }
        break;
      case KvType::kF16:
        for (int32_t p = lo; p <= pos; ++p) {
          const uint16_t* v =
              reinterpret_cast<const uint16_t*>(cache.ValueData(layer, seq, p)) + kvh * hdv;
          for (int64_t g = 0; g < nh; ++g) kt.axpy_f16(scores[g * n + p - lo], v, o + g * hdv, hdv);
        }
        break;
      case KvType::kQ8_0: {
        float* buf = DecodeBuffer(std::max(hd, hdv));
        for (int32_t p = lo; p <= pos; ++p) {
          LoadKvRow(type, cache.ValueData(layer, seq, p), kvh * hdv, hdv, buf);
          for (int64_t g = 0; g < nh; ++g) {
            kt.axpy_f32(scores[g * n + p - lo], buf, o + g * hdv, hdv);
          }
        }
        break;
      }
    }
  };
  const int64_t n_tasks = kv_tasks * n_slices;
  if (ax.pool != nullptr && n_tasks > 1) {
    ax.pool->ParallelFor(n_tasks, task);
  } else {
    for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
  }
}

}  // namespace weft::model
