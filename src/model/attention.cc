#include "model/attention.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/ops.h"

namespace weft::model {

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
// Positions per dequantized tile of Q8_0 rows.
constexpr int64_t kTileRows = 16;
constexpr int64_t kSlice = kernels::kAttentionSlice;

// Consecutive tokens of one sequence at consecutive positions that share a
// task.
int64_t TokensPerTask(const ModelConfig& c) {
  return std::max<int64_t>(1, kRowsPerTask / (c.n_head / c.n_head_kv));
}

// The per-thread scratch of one task: query rows [nr, hd], scores
// [nr, kSlice] and a tile of dequantized rows [kTileRows, max(hd, hdv)].
struct TaskScratch {
  float* q;
  float* scores;
  float* tile;
};

TaskScratch CarveScratch(float* base, int64_t nr, int64_t hd) {
  return TaskScratch{base, base + nr * hd, base + nr * (hd + kSlice)};
}

// (run of tokens, kv head, slice of its query heads): the rows whose
// partials are merged together. Its tasks are its context slices.
struct Group {
  int64_t t0, t1;       // batch tokens [t0, t1)
  int64_t kvh, h0, nh;  // kv head, first query head, query heads
  int32_t lo, hi;       // keys lo .. hi (inclusive) are read
  int64_t first_slice;  // slice of key lo
  int64_t n_slices;     // slices of keys lo .. hi
  int64_t part;         // offset of its partials: [nr, n_slices, stride]
};

}  // namespace

int64_t AttentionScratchFloats(const ModelConfig& c) {
  const int64_t rows = TokensPerTask(c) * (c.n_head / c.n_head_kv);
  return rows * (c.head_dim_k + kSlice) +
         kTileRows * std::max(c.head_dim_k, c.head_dim_v);
}

// Tasks: (group, context slice). A task reads each K and V row of its
// slice once for all of its query rows (GQA sharing, and the tokens of a
// prompt chunk sharing their prefix), computes each row's slice partial
// (kernels/ops.h), and the last task of a group to finish merges the
// group's partials in slice order. Query-head slices exist only to give
// every thread work when there are few (run, kv head, context slice)
// tasks. Every query row gets exactly the arithmetic of a lone query
// (kernels::Attention): the score and weighted-sum kernels promise per-row
// and per-position results independent of the call's shape
// (kernel_table.h), each row's softmax covers only its own positions of
// the slice, the positions a row cannot see enter its weighted sum with
// weight 0 (which adds exactly 0), a row without positions in a slice is
// skipped by the merge, and slices are fixed by position; so a token's
// output does not depend on the batch, the chunking or the threads.
void Attention(const AttentionContext& ax, const ModelConfig& c, int32_t layer,
               const KvCache& cache, const Batch& batch, const float* q,
               float* out) {
  const kernels::KernelTable& kt = *ax.kt;
  const int64_t group = c.n_head / c.n_head_kv;
  const int64_t hd = c.head_dim_k, hdv = c.head_dim_v;
  const int64_t stride = kernels::SlicePartialFloats(hdv);
  const bool local = c.IsLocalLayer(layer);
  const KvType type = cache.kv_type();
  const int64_t T = static_cast<int64_t>(batch.size());
  const int n_threads = ax.pool != nullptr ? ax.pool->num_threads() : 1;
  // llama.cpp's standard SWA: key p is visible from pos iff pos - p < window.
  auto first_visible = [&](int32_t pos) -> int32_t {
    return local && pos >= c.sliding_window
               ? pos - static_cast<int32_t>(c.sliding_window) + 1
               : 0;
  };
  // Runs of tokens: [begin, end) of the batch.
  const int64_t per_run = TokensPerTask(c);
  std::vector<std::pair<int64_t, int64_t>> runs;
  int64_t run_slices = 0;  // sum over runs of their context slices
  auto slices_of = [&](int64_t t0, int64_t t1) {
    const int32_t lo = first_visible(batch.positions[t0]);
    const int32_t hi = batch.positions[t1 - 1];
    return hi / kSlice - lo / kSlice + 1;
  };
  for (int64_t t = 0; t < T; ++t) {
    if (!runs.empty() && runs.back().second == t &&
        t - runs.back().first < per_run &&
        batch.seq_ids[t] == batch.seq_ids[t - 1] &&
        batch.positions[t] == batch.positions[t - 1] + 1) {
      ++runs.back().second;
    } else {
      if (!runs.empty())
        run_slices += slices_of(runs.back().first, runs.back().second);
      runs.emplace_back(t, t + 1);
    }
  }
  if (!runs.empty())
    run_slices += slices_of(runs.back().first, runs.back().second);
  // Query heads per group: the whole kv head's unless that leaves threads
  // idle.
  const int64_t kv_tasks = run_slices * c.n_head_kv;
  const int64_t hslices =
      std::clamp<int64_t>((n_threads + kv_tasks - 1) / kv_tasks, 1, group);
  const int64_t per_hslice = (group + hslices - 1) / hslices;
  const int64_t n_hslices = (group + per_hslice - 1) / per_hslice;

  // Per calling thread, reused across calls: groups, tasks, partials and
  // each group's count of unfinished tasks.
  // (The tasks run on pool threads: they reach these through the local
  // references, never by the thread_local names.)
  thread_local std::vector<Group> groups_tl;
  thread_local std::vector<std::pair<int32_t, int32_t>>
      tasks_tl;  // (group, slice)
  thread_local std::vector<float> parts_tl;
  thread_local std::vector<std::atomic<int32_t>> pending_tl;
  std::vector<Group>& groups = groups_tl;
  std::vector<std::pair<int32_t, int32_t>>& tasks = tasks_tl;
  std::vector<float>& parts = parts_tl;
  std::vector<std::atomic<int32_t>>& pending = pending_tl;
  groups.clear();
  tasks.clear();
  int64_t n_parts = 0;
  for (const auto& [t0, t1] : runs) {
    for (int64_t kvh = 0; kvh < c.n_head_kv; ++kvh) {
      for (int64_t hs = 0; hs < n_hslices; ++hs) {
        Group g;
        g.t0 = t0;
        g.t1 = t1;
        g.kvh = kvh;
        g.h0 = kvh * group + hs * per_hslice;
        g.nh = std::min(per_hslice, (kvh + 1) * group - g.h0);
        g.lo = first_visible(batch.positions[t0]);
        g.hi = batch.positions[t1 - 1];
        g.first_slice = g.lo / kSlice;
        g.n_slices = g.hi / kSlice - g.first_slice + 1;
        g.part = n_parts;
        n_parts += (t1 - t0) * g.nh * g.n_slices * stride;
        for (int64_t sl = 0; sl < g.n_slices; ++sl) {
          tasks.emplace_back(static_cast<int32_t>(groups.size()),
                             static_cast<int32_t>(sl));
        }
        groups.push_back(g);
      }
    }
  }
  if (static_cast<int64_t>(parts.size()) < n_parts)
    parts.resize(static_cast<size_t>(n_parts));
  if (pending.size() < groups.size()) {
    pending = std::vector<std::atomic<int32_t>>(groups.size());
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    pending[i].store(static_cast<int32_t>(groups[i].n_slices),
                     std::memory_order_relaxed);
  }

  const size_t el =
      type == KvType::kF32 ? 4 : 2;  // bytes per element (F32 / F16 rows)
  auto task = [&](int64_t job, int thread) {
    const Group& g =
        groups[static_cast<size_t>(tasks[static_cast<size_t>(job)].first)];
    const int64_t sl = tasks[static_cast<size_t>(job)].second;
    const int64_t nt = g.t1 - g.t0, nh = g.nh, nr = nt * nh;
    const int32_t seq = batch.seq_ids[g.t0];
    const int32_t pos0 = batch.positions[g.t0];
    // Keys [j0, j1) of this slice; query row r = ti * nh + gi.
    const int32_t j0 = std::max<int32_t>(
        g.lo, static_cast<int32_t>((g.first_slice + sl) * kSlice));
    const int32_t j1 = std::min<int32_t>(
        g.hi + 1, static_cast<int32_t>((g.first_slice + sl + 1) * kSlice));
    const int64_t span = j1 - j0;
    const TaskScratch sc = CarveScratch((*ax.scores)[thread].data(), nr, hd);
    for (int64_t ti = 0; ti < nt; ++ti) {
      std::copy_n(q + (g.t0 + ti) * c.q_dim() + g.h0 * hd, nh * hd,
                  sc.q + ti * nh * hd);
    }
    // Row pointers of the slice's keys, then of its values (F32 / F16), or
    // of a dequantized tile of up to kTileRows of them (Q8_0).
    thread_local std::vector<const void*> rows;
    rows.resize(static_cast<size_t>(kSlice));
    auto key_rows = [&](int32_t p, int64_t n) {
      for (int64_t j = 0; j < n; ++j) {
        rows[j] = cache.KeyData(layer, seq, p + static_cast<int32_t>(j)) +
                  g.kvh * hd * el;
      }
    };
    if (type == KvType::kQ8_0) {
      for (int64_t b = 0; b < span; b += kTileRows) {
        const int64_t n = std::min(kTileRows, span - b);
        for (int64_t j = 0; j < n; ++j) {
          LoadKvRow(type,
                    cache.KeyData(layer, seq, j0 + static_cast<int32_t>(b + j)),
                    g.kvh * hd, hd, sc.tile + j * hd);
          rows[j] = sc.tile + j * hd;
        }
        kt.scores_f32(sc.q, hd, static_cast<int>(nr), rows.data(), n, hd,
                      c.attn_scale, sc.scores + b, kSlice);
      }
    } else {
      key_rows(j0, span);
      (type == KvType::kF32 ? kt.scores_f32 : kt.scores_f16)(
          sc.q, hd, static_cast<int>(nr), rows.data(), span, hd, c.attn_scale,
          sc.scores, kSlice);
    }
    // Each row's softmax over its visible keys of the slice; the others
    // get weight 0.
    float* part = parts.data() + g.part;
    const int64_t row_stride = g.n_slices * stride;  // between rows' partials
    for (int64_t r = 0; r < nr; ++r) {
      const int32_t pos = pos0 + static_cast<int32_t>(r / nh);
      const int64_t a = std::max(first_visible(pos), j0) - j0;
      const int64_t b = std::min(pos + 1, j1) - j0;
      float* sg = sc.scores + r * kSlice;
      float* p = part + r * row_stride + sl * stride;
      std::fill_n(p, stride, 0.0f);
      if (a >= b) {
        std::fill_n(sg, span, 0.0f);
        continue;
      }
      std::fill_n(sg, a, 0.0f);
      std::fill(sg + b, sg + span, 0.0f);
      p[1] = kernels::SliceSoftmax(kt, sg + a, b - a, c.attn_softcap, &p[0]);
    }
    float* o = part + sl * stride + 2;
    if (type == KvType::kQ8_0) {
      for (int64_t b = 0; b < span; b += kTileRows) {
        const int64_t n = std::min(kTileRows, span - b);
        for (int64_t j = 0; j < n; ++j) {
          LoadKvRow(
              type,
              cache.ValueData(layer, seq, j0 + static_cast<int32_t>(b + j)),
              g.kvh * hdv, hdv, sc.tile + j * hdv);
          rows[j] = sc.tile + j * hdv;
        }
        kt.wsum_f32(rows.data(), n, sc.scores + b, kSlice, static_cast<int>(nr),
                    hdv, o, row_stride);
      }
    } else {
      for (int64_t j = 0; j < span; ++j) {
        rows[j] = cache.ValueData(layer, seq, j0 + static_cast<int32_t>(j)) +
                  g.kvh * hdv * el;
      }
      (type == KvType::kF32 ? kt.wsum_f32 : kt.wsum_f16)(
          rows.data(), span, sc.scores, kSlice, static_cast<int>(nr), hdv, o,
          row_stride);
    }
    // The group's last task merges its rows' partials.
    const size_t gi =
        static_cast<size_t>(tasks[static_cast<size_t>(job)].first);
    if (pending[gi].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    for (int64_t r = 0; r < nr; ++r) {
      const int64_t ti = r / nh, h = g.h0 + r % nh;
      kernels::MergeSlices(part + r * row_stride, stride, g.n_slices, hdv,
                           out + (g.t0 + ti) * c.n_head * hdv + h * hdv);
    }
  };
  const int64_t n_tasks = static_cast<int64_t>(tasks.size());
  if (ax.pool != nullptr && n_tasks > 1) {
    ax.pool->ParallelFor(n_tasks, task);
  } else {
    for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
  }
}

}  // namespace weft::model
