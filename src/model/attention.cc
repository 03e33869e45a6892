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

// A per-thread array of at least n row pointers.
std::vector<const void*>& RowPointers(int64_t n) {
  thread_local std::vector<const void*> rows;
  if (static_cast<int64_t>(rows.size()) < n) rows.resize(static_cast<size_t>(n));
  return rows;
}

}  // namespace

void WriteKv(const ModelConfig& c, int32_t layer, const Batch& batch,
             const float* k, const float* v, KvCache* cache) {
  const int64_t T = static_cast<int64_t>(batch.size());
  const KvType type = cache->kv_type();
  for (int64_t t = 0; t < T; ++t) {
    const int32_t seq = batch.seq_ids[t], pos = batch.positions[t];
    StoreKvRow(type, k + t * c.k_dim(), c.k_dim(), cache->KeyData(layer, seq, pos));
    StoreKvRow(type, v + t * c.v_dim(), c.v_dim(), cache->ValueData(layer, seq, pos));
  }
}

namespace {

// Query rows (tokens x query heads of one kv head) per attention task: the
// key and value rows a task reads serve all of them.
constexpr int64_t kRowsPerTask = 16;

// Consecutive tokens of one sequence at consecutive positions that share a
// task (1 for Q8_0 rows, which are decoded one position at a time).
int64_t TokensPerTask(const ModelConfig& c, KvType type) {
  if (type == KvType::kQ8_0) return 1;
  return std::max<int64_t>(1, kRowsPerTask / (c.n_head / c.n_head_kv));
}

// The per-thread scratch of one task: query rows [nr, hd], outputs
// [nr, hdv] and scores [nr, n_span].
struct TaskScratch {
  float* q;
  float* o;
  float* scores;
};

TaskScratch CarveScratch(float* base, int64_t nr, int64_t hd, int64_t hdv) {
  return TaskScratch{base, base + nr * hd, base + nr * (hd + hdv)};
}

}  // namespace

int64_t AttentionScratchFloats(const ModelConfig& c, KvType type, int32_t max_pos) {
  const int64_t rows = TokensPerTask(c, type) * (c.n_head / c.n_head_kv);
  return rows * (c.head_dim_k + c.head_dim_v + static_cast<int64_t>(max_pos) + 1);
}

// Tasks: (run of up to TokensPerTask consecutive tokens of one sequence,
// kv head, slice of the kv head's query heads). A task reads each cached K
// and V row once for all of its query rows (GQA sharing, and the tokens of
// a prompt chunk sharing their prefix). Slices exist only to give every
// thread work when there are few runs. Every query row gets exactly the
// arithmetic of a lone query: the dots / wsum kernels promise per-row
// results independent of the row count (kernel_table.h), each row's
// softmax covers only its own positions, and the positions a row cannot
// see enter its weighted sum with weight 0 (which adds exactly 0), so a
// token's output does not depend on the batch, the chunking or the threads.
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
  // Runs of tokens: [begin, end) of the batch.
  const int64_t per_run = TokensPerTask(c, type);
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (int64_t t = 0; t < T; ++t) {
    if (!runs.empty() && runs.back().second == t && t - runs.back().first < per_run &&
        batch.seq_ids[t] == batch.seq_ids[t - 1] &&
        batch.positions[t] == batch.positions[t - 1] + 1) {
      ++runs.back().second;
    } else {
      runs.emplace_back(t, t + 1);
    }
  }
  // Query heads per task: the whole group unless that leaves threads idle.
  const int64_t kv_tasks = static_cast<int64_t>(runs.size()) * c.n_head_kv;
  const int64_t slices =
      std::clamp<int64_t>((n_threads + kv_tasks - 1) / kv_tasks, 1, group);
  const int64_t per_slice = (group + slices - 1) / slices;
  const int64_t n_slices = (group + per_slice - 1) / per_slice;
  // llama.cpp's standard SWA: key p is visible from pos iff pos - p < window.
  auto first_visible = [&](int32_t pos) -> int32_t {
    return local && pos >= c.sliding_window ? pos - static_cast<int32_t>(c.sliding_window) + 1
                                            : 0;
  };
  const size_t el = type == KvType::kF32 ? 4 : 2;  // bytes per element (F32 / F16 rows)
  auto task = [&](int64_t job, int thread) {
    const int64_t slice = job % n_slices;
    const int64_t kvh = (job / n_slices) % c.n_head_kv;
    const auto [t0, t1] = runs[job / (n_slices * c.n_head_kv)];
    const int64_t h0 = kvh * group + slice * per_slice;
    const int64_t nh = std::min(per_slice, (kvh + 1) * group - h0);
    const int64_t nt = t1 - t0, nr = nt * nh;
    const int32_t seq = batch.seq_ids[t0];
    const int32_t pos0 = batch.positions[t0];
    const int32_t lo0 = first_visible(pos0);
    // Keys lo0 .. pos0 + nt - 1; query row r = ti * nh + g.
    const int64_t span = pos0 + nt - lo0;
    const TaskScratch sc = CarveScratch((*ax.scores)[thread].data(), nr, hd, hdv);
    for (int64_t ti = 0; ti < nt; ++ti) {
      std::copy_n(q + (t0 + ti) * c.q_dim() + h0 * hd, nh * hd, sc.q + ti * nh * hd);
    }
    std::fill_n(sc.o, nr * hdv, 0.0f);
    if (type == KvType::kQ8_0) {
      // One token (TokensPerTask): decode each position's rows once.
      float* buf = DecodeBuffer(std::max(hd, hdv));
      for (int64_t j = 0; j < span; ++j) {
        LoadKvRow(type, cache.KeyData(layer, seq, lo0 + j), kvh * hd, hd, buf);
        kt.dots_f32(sc.q, hd, nh, buf, hd, c.attn_scale, sc.scores + j, span);
      }
    } else {
      // Rows visible from key p: tokens ti_lo .. ti_hi (positions >= p
      // whose window reaches back to p).
      int64_t ti_hi = -1;
      for (int64_t j = 0; j < span; ++j) {
        const int32_t p = lo0 + static_cast<int32_t>(j);
        const int64_t ti_lo = std::max<int64_t>(0, p - pos0);
        while (ti_hi + 1 < nt && first_visible(pos0 + static_cast<int32_t>(ti_hi) + 1) <= p) {
          ++ti_hi;
        }
        const int64_t rows = (ti_hi - ti_lo + 1) * nh;
        const uint8_t* k = cache.KeyData(layer, seq, p) + kvh * hd * el;
        float* dst = sc.scores + ti_lo * nh * span + j;
        if (type == KvType::kF32) {
          kt.dots_f32(sc.q + ti_lo * nh * hd, hd, static_cast<int>(rows),
                      reinterpret_cast<const float*>(k), hd, c.attn_scale, dst, span);
        } else {
          kt.dots_f16(sc.q + ti_lo * nh * hd, hd, static_cast<int>(rows),
                      reinterpret_cast<const uint16_t*>(k), hd, c.attn_scale, dst, span);
        }
      }
    }
    for (int64_t r = 0; r < nr; ++r) {
      const int32_t pos = pos0 + static_cast<int32_t>(r / nh);
      const int64_t a = first_visible(pos) - lo0, n = pos - lo0 - a + 1;
      float* sg = sc.scores + r * span;
      std::fill_n(sg, a, 0.0f);
      std::fill(sg + a + n, sg + span, 0.0f);
      sg += a;
      if (c.attn_softcap > 0) {
        for (int64_t j = 0; j < n; ++j) sg[j] = c.attn_softcap * std::tanh(sg[j] / c.attn_softcap);
      }
      kt.softmax(sg, n);
    }
    switch (type) {
      case KvType::kF32:
      case KvType::kF16: {
        std::vector<const void*>& rows = RowPointers(span);
        for (int64_t j = 0; j < span; ++j) {
          rows[j] = cache.ValueData(layer, seq, lo0 + static_cast<int32_t>(j)) + kvh * hdv * el;
        }
        (type == KvType::kF32 ? kt.wsum_f32 : kt.wsum_f16)(rows.data(), span, sc.scores, span,
                                                          static_cast<int>(nr), hdv, sc.o, hdv);
        break;
      }
      case KvType::kQ8_0: {
        float* buf = DecodeBuffer(std::max(hd, hdv));
        for (int64_t j = 0; j < span; ++j) {
          LoadKvRow(type, cache.ValueData(layer, seq, lo0 + static_cast<int32_t>(j)), kvh * hdv,
                    hdv, buf);
          const void* row = buf;
          kt.wsum_f32(&row, 1, sc.scores + j, span, static_cast<int>(nr), hdv, sc.o, hdv);
        }
        break;
      }
    }
    for (int64_t ti = 0; ti < nt; ++ti) {
      std::copy_n(sc.o + ti * nh * hdv, nh * hdv,
                  out + (t0 + ti) * c.n_head * hdv + h0 * hdv);
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
