#include "model/attention.h"

#include <algorithm>
#include <cmath>

namespace weft::model {

void WriteKv(const ModelConfig& c, int32_t layer, const Batch& batch,
             const float* k, const float* v, KvCache* cache) {
  const int64_t T = static_cast<int64_t>(batch.size());
  for (int64_t t = 0; t < T; ++t) {
    const int32_t seq = batch.seq_ids[t], pos = batch.positions[t];
    std::copy_n(k + t * c.k_dim(), c.k_dim(), cache->KeyRow(layer, seq, pos));
    std::copy_n(v + t * c.v_dim(), c.v_dim(), cache->ValueRow(layer, seq, pos));
  }
}

// One task per (token, head).
void Attention(const AttentionContext& ax, const ModelConfig& c, int32_t layer,
               const KvCache& cache, const Batch& batch, const float* q,
               float* out) {
  const kernels::KernelTable& kt = *ax.kt;
  const int64_t group = c.n_head / c.n_head_kv;
  const int64_t hd = c.head_dim_k, hdv = c.head_dim_v;
  const bool local = c.IsLocalLayer(layer);
  const int64_t T = static_cast<int64_t>(batch.size());
  auto task = [&](int64_t job, int thread) {
    const int64_t t = job / c.n_head, h = job % c.n_head;
    const int64_t kvh = h / group;
    const int32_t seq = batch.seq_ids[t];
    const int32_t pos = batch.positions[t];
    // llama.cpp's standard SWA: key p is visible iff pos - p < window.
    int32_t lo = 0;
    if (local && pos >= c.sliding_window) {
      lo = pos - static_cast<int32_t>(c.sliding_window) + 1;
    }
    const float* qh = q + t * c.q_dim() + h * hd;
    float* scores = (*ax.scores)[thread].data();  // [pos - lo + 1]
    const int64_t n = pos - lo + 1;
    for (int32_t p = lo; p <= pos; ++p) {
      scores[p - lo] = kt.dot_f32(qh, cache.KeyRow(layer, seq, p) + kvh * hd, hd) *
                       c.attn_scale;
    }
    if (c.attn_softcap > 0) {
      for (int64_t j = 0; j < n; ++j) {
        scores[j] = c.attn_softcap * std::tanh(scores[j] / c.attn_softcap);
      }
    }
    kt.softmax(scores, n);
    float* o = out + t * c.n_head * hdv + h * hdv;  // [hdv]
    std::fill_n(o, hdv, 0.0f);
    for (int32_t p = lo; p <= pos; ++p) {
      kt.axpy_f32(scores[p - lo], cache.ValueRow(layer, seq, p) + kvh * hdv, o, hdv);
    }
  };
  const int64_t n = T * c.n_head;
  if (ax.pool != nullptr && n > 1) {
    ax.pool->ParallelFor(n, task);
  } else {
    for (int64_t i = 0; i < n; ++i) task(i, 0);
  }
}

}  // namespace weft::model
