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

// One task per (token, head).
void Attention(const AttentionContext& ax, const ModelConfig& c, int32_t layer,
               const KvCache& cache, const Batch& batch, const float* q,
               float* out) {
  const kernels::KernelTable& kt = *ax.kt;
  const int64_t group = c.n_head / c.n_head_kv;
  const int64_t hd = c.head_dim_k, hdv = c.head_dim_v;
  const bool local = c.IsLocalLayer(layer);
  const KvType type = cache.kv_type();
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
    switch (type) {
      case KvType::kF32:
        for (int32_t p = lo; p <= pos; ++p) {
          const float* k =
              reinterpret_cast<const float*>(cache.KeyData(layer, seq, p));
          scores[p - lo] = kt.dot_f32(qh, k + kvh * hd, hd) * c.attn_scale;
        }
        break;
      case KvType::kF16:
        for (int32_t p = lo; p <= pos; ++p) {
          const uint16_t* k =
              reinterpret_cast<const uint16_t*>(cache.KeyData(layer, seq, p));
          scores[p - lo] = kt.dot_f16(qh, k + kvh * hd, hd) * c.attn_scale;
        }
        break;
      case KvType::kQ8_0: {
        float* buf = DecodeBuffer(hd);
        for (int32_t p = lo; p <= pos; ++p) {
          LoadKvRow(type, cache.KeyData(layer, seq, p), kvh * hd, hd, buf);
          scores[p - lo] = kt.dot_f32(qh, buf, hd) * c.attn_scale;
        }
        break;
      }
    }
    if (c.attn_softcap > 0) {
      for (int64_t j = 0; j < n; ++j) {
        scores[j] = c.attn_softcap * std::tanh(scores[j] / c.attn_softcap);
      }
    }
    kt.softmax(scores, n);
    float* o = out + t * c.n_head * hdv + h * hdv;  // [hdv]
    std::fill_n(o, hdv, 0.0f);
    switch (type) {
      case KvType::kF32:
        for (int32_t p = lo; p <= pos; ++p) {
          const float* v =
              reinterpret_cast<const float*>(cache.ValueData(layer, seq, p));
          kt.axpy_f32(scores[p - lo], v + kvh * hdv, o, hdv);
        }
        break;
      case KvType::kF16:
        for (int32_t p = lo; p <= pos; ++p) {
          const uint16_t* v =
              reinterpret_cast<const uint16_t*>(cache.ValueData(layer, seq, p));
          kt.axpy_f16(scores[p - lo], v + kvh * hdv, o, hdv);
        }
        break;
      case KvType::kQ8_0: {
        float* buf = DecodeBuffer(hdv);
        for (int32_t p = lo; p <= pos; ++p) {
          LoadKvRow(type, cache.ValueData(layer, seq, p), kvh * hdv, hdv, buf);
          kt.axpy_f32(scores[p - lo], buf, o, hdv);
        }
        break;
      }
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
