#include "model/attention.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/ops.h"
#include "tensor/blocks.h"

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

// The per-thread scratch of one task with nk kv heads: query rows
// [nk, nr, hd], scores [nk, nr, kSlice] and a tile of dequantized rows
// [kTileRows, max(hd, hdv)].
struct TaskScratch {
  float* q;
  float* scores;
  float* tile;
};

TaskScratch CarveScratch(float* base, int64_t nk, int64_t nr, int64_t hd) {
  return TaskScratch{base, base + nk * nr * hd, base + nk * nr * (hd + kSlice)};
}

// (run of tokens, kv heads [k0, k1), a slice [g0, g0 + gn) of each kv
// head's query heads): the rows whose partials are merged together. Its
// tasks are its context slices.
struct Group {
  int64_t t0, t1;       // batch tokens [t0, t1)
  int64_t k0, k1;       // kv heads
  int64_t g0, gn;       // query heads kvh * group + g0 .. + gn - 1 of each
  int32_t lo, hi;       // keys lo .. hi (inclusive) are read
  int64_t first_slice;  // slice of key lo
  int64_t n_slices;     // slices of keys lo .. hi
  int64_t part;         // its partials: [k1 - k0, nr, n_slices, stride]
};

}  // namespace

int64_t AttentionScratchFloats(const ModelConfig& c) {
  const int64_t rows = TokensPerTask(c) * c.n_head;  // all kv heads
  return rows * (c.head_dim_k + kSlice) +
         kTileRows * std::max(c.head_dim_k, c.head_dim_v);
}

// Tasks: (group, context slice). A task reads its slice's K and V rows
// once for all of its query rows (GQA sharing, and the tokens of a prompt
// chunk sharing their prefix), one kv head after another: a task takes
// every kv head when there is enough other work, so it streams whole
// cached rows (all heads of a position are adjacent) and the later heads
// find them in cache. It computes each row's slice partial
// (kernels/ops.h), and the last task of a group to finish merges the
// group's partials in slice order. Kv-head ranges, then query-head
// slices, shrink only to give every thread work when there are few
// (run, context slice) tasks. Every query row gets exactly the arithmetic
// of a lone query (kernels::Attention): the score and weighted-sum kernels
// promise per-row and per-position results independent of the call's
// shape (kernel_table.h), each row's softmax covers only its own positions
// of the slice, the positions a row cannot see enter its weighted sum with
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
  for (int64_t t = 0; t < T; ++t) {
    if (!runs.empty() && runs.back().second == t &&
        t - runs.back().first < per_run &&
        batch.seq_ids[t] == batch.seq_ids[t - 1] &&
        batch.positions[t] == batch.positions[t - 1] + 1) {
      ++runs.back().second;
    } else {
      runs.emplace_back(t, t + 1);
    }
  }
  int64_t run_slices = 0;  // (run, context slice) pairs
  for (const auto& [t0, t1] : runs) {
    run_slices += batch.positions[t1 - 1] / kSlice -
                  first_visible(batch.positions[t0]) / kSlice + 1;
  }
  // Kv heads per group, then query heads per kv head: all of them unless
  // that leaves threads idle.
  const int64_t kv_parts = std::clamp<int64_t>(
      (n_threads + run_slices - 1) / run_slices, 1, c.n_head_kv);
  const int64_t per_kv_part = (c.n_head_kv + kv_parts - 1) / kv_parts;
  const int64_t n_kv_parts = (c.n_head_kv + per_kv_part - 1) / per_kv_part;
  const int64_t kv_tasks = run_slices * n_kv_parts;
  const int64_t hslices = per_kv_part > 1 ? 1
                          : std::clamp<int64_t>((n_threads + kv_tasks - 1) / kv_tasks,
                                                1, group);
  const int64_t per_hslice = (group + hslices - 1) / hslices;
  const int64_t n_hslices = (group + per_hslice - 1) / per_hslice;

  // Per calling thread, reused across calls: groups, tasks, partials and
  // each group's count of unfinished tasks. (The tasks run on pool
  // threads: they reach these through the local references, never by the
  // thread_local names.)
  thread_local std::vector<Group> groups_tl;
  thread_local std::vector<std::pair<int32_t, int32_t>> tasks_tl;  // (group, slice)
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
    for (int64_t kp = 0; kp < n_kv_parts; ++kp) {
      for (int64_t hs = 0; hs < n_hslices; ++hs) {
        Group g;
        g.t0 = t0;
        g.t1 = t1;
        g.k0 = kp * per_kv_part;
        g.k1 = std::min(c.n_head_kv, g.k0 + per_kv_part);
        g.g0 = hs * per_hslice;
        g.gn = std::min(per_hslice, group - g.g0);
        g.lo = first_visible(batch.positions[t0]);
        g.hi = batch.positions[t1 - 1];
        g.first_slice = g.lo / kSlice;
        g.n_slices = g.hi / kSlice - g.first_slice + 1;
        g.part = n_parts;
        n_parts += (g.k1 - g.k0) * (t1 - t0) * g.gn * g.n_slices * stride;
        for (int64_t sl = 0; sl < g.n_slices; ++sl) {
          tasks.emplace_back(static_cast<int32_t>(groups.size()),
                             static_cast<int32_t>(sl));
        }
        groups.push_back(g);
      }
    }
  }
  if (static_cast<int64_t>(parts.size()) < n_parts) {
    parts.resize(static_cast<size_t>(n_parts));
  }
  if (pending.size() < groups.size()) {
    pending = std::vector<std::atomic<int32_t>>(groups.size());
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    pending[i].store(static_cast<int32_t>(groups[i].n_slices),
                     std::memory_order_relaxed);
  }

  // Bytes per element (F32 / F16 rows).
  const size_t el = type == KvType::kF32 ? 4 : 2;
  // Elements [first, first + n) of a Q8_0 row as floats: the table's kernel
  // when they are whole blocks (bitwise LoadKvRow's values).
  auto LoadQ8Head = [&](const uint8_t* row, int64_t first, int64_t n, float* dst) {
    if (first % kQK8_0 == 0 && n % kQK8_0 == 0) {
      kt.q8_0_to_f32(row + first / kQK8_0 * static_cast<int64_t>(sizeof(BlockQ8_0)), n, dst);
    } else {
      LoadKvRow(KvType::kQ8_0, row, first, n, dst);
    }
  };
  auto task = [&](int64_t job, int thread) {
    const size_t gi = static_cast<size_t>(tasks[static_cast<size_t>(job)].first);
    const Group& g = groups[gi];
    const int64_t sl = tasks[static_cast<size_t>(job)].second;
    const int64_t nt = g.t1 - g.t0, nh = g.gn, nr = nt * nh;
    const int32_t seq = batch.seq_ids[g.t0];
    const int32_t pos0 = batch.positions[g.t0];
    // Keys [j0, j1) of this slice; query row r = ti * nh + gi.
    const int32_t j0 = std::max<int32_t>(
        g.lo, static_cast<int32_t>((g.first_slice + sl) * kSlice));
    const int32_t j1 = std::min<int32_t>(
        g.hi + 1, static_cast<int32_t>((g.first_slice + sl + 1) * kSlice));
    const int64_t span = j1 - j0;
    const int64_t nk = g.k1 - g.k0;
    const TaskScratch sc = CarveScratch((*ax.scores)[thread].data(), nk, nr, hd);
    for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
      const int64_t h0 = kvh * group + g.g0;
      for (int64_t ti = 0; ti < nt; ++ti) {
        std::copy_n(q + (g.t0 + ti) * c.q_dim() + h0 * hd, nh * hd,
                    sc.q + ((kvh - g.k0) * nt + ti) * nh * hd);
      }
    }
    // Blocks of kTileRows positions, every kv head of a block before the
    // next block: the cached rows (all heads of a position side by side)
    // are read in order, each once. `base`: the block's rows; `rows`: one
    // head's part of them (F32 / F16), or its dequantized tile (Q8_0).
    const void* rows[kTileRows];
    const uint8_t* base[kTileRows];
    const int64_t k_row = KvRowBytes(type, c.k_dim());
    const int64_t v_row = KvRowBytes(type, c.v_dim());
    auto prefetch = [&](bool key, int32_t p, int64_t bytes) {
      if (p >= j1) return;
      const uint8_t* r = key ? cache.KeyData(layer, seq, p) : cache.ValueData(layer, seq, p);
      for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(r + off, 0, 3);
    };
    constexpr int64_t kAhead = 3 * kTileRows;  // prefetch distance (positions)
    for (int64_t b = 0; b < span; b += kTileRows) {
      const int64_t n = std::min(kTileRows, span - b);
      for (int64_t j = 0; j < n; ++j) {
        const int32_t p = j0 + static_cast<int32_t>(b + j);
        base[j] = cache.KeyData(layer, seq, p);
        prefetch(true, p + static_cast<int32_t>(kAhead), k_row);
      }
      for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
        const float* qh = sc.q + (kvh - g.k0) * nr * hd;
        float* sh = sc.scores + (kvh - g.k0) * nr * kSlice + b;
        if (type == KvType::kQ8_0) {
          for (int64_t j = 0; j < n; ++j) {
            LoadQ8Head(base[j], kvh * hd, hd, sc.tile + j * hd);
            rows[j] = sc.tile + j * hd;
          }
        } else {
          for (int64_t j = 0; j < n; ++j) rows[j] = base[j] + kvh * hd * el;
        }
        (type == KvType::kF16 ? kt.scores_f16 : kt.scores_f32)(
            qh, hd, static_cast<int>(nr), rows, n, hd, c.attn_scale, sh, kSlice);
      }
    }
    // Each row's softmax over its visible keys of the slice; the others
    // get weight 0. Partials of one kv head's rows: [nr, n_slices, stride].
    const int64_t row_stride = g.n_slices * stride;
    for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
      float* part = parts.data() + g.part + (kvh - g.k0) * nr * row_stride;
      for (int64_t r = 0; r < nr; ++r) {
        const int32_t pos = pos0 + static_cast<int32_t>(r / nh);
        const int64_t a = std::max(first_visible(pos), j0) - j0;
        const int64_t e = std::min(pos + 1, j1) - j0;
        float* sg = sc.scores + ((kvh - g.k0) * nr + r) * kSlice;
        float* p = part + r * row_stride + sl * stride;
        std::fill_n(p, stride, 0.0f);
        if (a >= e) {
          std::fill_n(sg, span, 0.0f);
          continue;
        }
        std::fill_n(sg, a, 0.0f);
        std::fill(sg + e, sg + span, 0.0f);
        p[1] = kernels::SliceSoftmax(kt, sg + a, e - a, c.attn_softcap, &p[0]);
      }
    }
    for (int64_t b = 0; b < span; b += kTileRows) {
      const int64_t n = std::min(kTileRows, span - b);
      for (int64_t j = 0; j < n; ++j) {
        const int32_t p = j0 + static_cast<int32_t>(b + j);
        base[j] = cache.ValueData(layer, seq, p);
        prefetch(false, p + static_cast<int32_t>(kAhead), v_row);
      }
      for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
        const float* sh = sc.scores + (kvh - g.k0) * nr * kSlice + b;
        float* o = parts.data() + g.part + (kvh - g.k0) * nr * row_stride + sl * stride + 2;
        if (type == KvType::kQ8_0) {
          for (int64_t j = 0; j < n; ++j) {
            LoadQ8Head(base[j], kvh * hdv, hdv, sc.tile + j * hdv);
            rows[j] = sc.tile + j * hdv;
          }
        } else {
          for (int64_t j = 0; j < n; ++j) rows[j] = base[j] + kvh * hdv * el;
        }
        (type == KvType::kF16 ? kt.wsum_f16 : kt.wsum_f32)(
            rows, n, sh, kSlice, static_cast<int>(nr), hdv, o, row_stride);
      }
    }
    // The group's last task merges its rows' partials.
    if (pending[gi].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
      const float* part = parts.data() + g.part + (kvh - g.k0) * nr * row_stride;
      for (int64_t r = 0; r < nr; ++r) {
        const int64_t ti = r / nh, h = kvh * group + g.g0 + r % nh;
        kernels::MergeSlices(part + r * row_stride, stride, g.n_slices, hdv,
                             out + (g.t0 + ti) * c.n_head * hdv + h * hdv);
      }
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
