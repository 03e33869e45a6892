#include "model/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "model/attention_tiles.h"
#include "model/slice_rows.h"
#include "tensor/blocks.h"

namespace weft::model {

void WriteKv(const ModelConfig& c, int32_t layer, const Batch& batch,
             const float* k, const float* v, KvStorage* cache) {
  const int64_t T = static_cast<int64_t>(batch.size());
  for (int64_t t = 0; t < T; ++t) {
    const int32_t seq = batch.seq_ids[t], pos = batch.positions[t];
    cache->StoreKey(layer, seq, pos, k + t * c.k_dim(), c.k_dim());
    cache->StoreValue(layer, seq, pos, v + t * c.v_dim(), c.v_dim());
  }
}

namespace {

using attention_internal::kTileRows;
using attention_internal::KeyTiles;
using attention_internal::TilePass;
using attention_internal::ValueTiles;
using attention_internal::PrefetchShare;
using attention_internal::SliceRows;

// Query rows (tokens x query heads of one kv head) per attention task: the
// key and value rows a task reads serve all of them.
constexpr int64_t kRowsPerTask = 16;
// Most query rows of a task that reads Q8_0 rows through the Q8_0 kernels.
constexpr int64_t kQ8DirectMaxRows = 4;
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

namespace {

// Per calling thread, reused across calls: the plan's groups and tasks
// (group, context slice), the partials, and each group's count of
// unfinished tasks. (Tasks run on pool threads: they reach these through
// SliceAttention's references, never by the thread_local names.)
struct PlanBuffers {
  std::vector<Group> groups;
  std::vector<std::pair<int32_t, int32_t>> tasks;
  std::vector<float> parts;
  std::vector<std::atomic<int32_t>> pending;
};

// One call of Attention: the plan of groups and tasks, and the task body.
// Thread safety: RunTask may run concurrently for distinct tasks once Plan
// has returned; each task writes only its own partials and scratch, and the
// last task of a group (the pending counter's acquire-release order makes
// the others' partials visible to it) writes that group's outputs.
class SliceAttention {
 public:
  SliceAttention(const AttentionContext& ax, const ModelConfig& c, int32_t layer,
                 const KvStorage& cache, const Batch& batch, const float* q, float* out,
                 PlanBuffers* buf)
      : ax_(ax), kt_(*ax.kt), c_(c), layer_(layer), cache_(cache), batch_(batch), q_(q),
        out_(out), b_(*buf), group_(c.n_head / c.n_head_kv), hd_(c.head_dim_k),
        hdv_(c.head_dim_v), stride_(kernels::SlicePartialFloats(c.head_dim_v)),
        local_(c.IsLocalLayer(layer)), type_(cache.kv_type()),
        el_(type_ == KvType::kF32 ? 4 : 2),
        q8_kernels_(type_ == KvType::kQ8_0 && kt_.scores_q8_0 != nullptr &&
                   kt_.wsum_q8_0 != nullptr && hd_ % kQK8_0 == 0 && hdv_ % kQK8_0 == 0) {}

  // Splits the batch into groups and tasks; returns the number of tasks.
  int64_t Plan(int n_threads);
  void RunTask(int64_t job, int thread);

 private:
  // A block of n key rows' scores (s: [nr, kSlice] from the block's first
  // key) or value rows' weighted sums into the partials' o (y, rows ys
  // apart), by the KV type's kernel: Q8_0 rows as they are when q8_direct,
  // else HeadRows' rows; ah as PrefetchNext gives it.
  void ScoreRows(const void* const* rows, const void* const* ah, int64_t n, bool q8_direct,
                 const float* q, int64_t nr, float* s) const {
    if (q8_direct) {
      kt_.scores_q8_0(q, hd_, static_cast<int>(nr), rows, n, hd_, c_.attn_scale, s, kSlice);
    } else {
      (type_ == KvType::kF16 ? kt_.scores_f16 : kt_.scores_f32)(
          q, hd_, static_cast<int>(nr), rows, ah, n, hd_, c_.attn_scale, s, kSlice);
    }
  }
  void SumRows(const void* const* rows, const void* const* ah, int64_t n, bool q8_direct,
               const float* s, int64_t nr, float* y, int64_t ys) const {
    if (q8_direct) {
      kt_.wsum_q8_0(rows, n, s, kSlice, static_cast<int>(nr), hdv_, y, ys);
    } else {
      (type_ == KvType::kF16 ? kt_.wsum_f16 : kt_.wsum_f32)(rows, ah, n, s, kSlice,
                                                            static_cast<int>(nr), hdv_, y, ys);
    }
  }
  // q = group g's query rows, [k1 - k0, nr, hd].
  void GatherQueries(const Group& g, float* q) const {
    const int64_t nt = g.t1 - g.t0, nh = g.gn;
    for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
      for (int64_t ti = 0; ti < nt; ++ti) {
        std::copy_n(q_ + (g.t0 + ti) * c_.q_dim() + (kvh * group_ + g.g0) * hd_, nh * hd_,
                    q + ((kvh - g.k0) * nt + ti) * nh * hd_);
      }
    }
  }
  // Merges group g's partials (parts: [k1 - k0, nr, n_slices, stride])
  // into its rows of the output, slice by slice in order.
  void MergeGroup(const Group& g, const float* parts) const;
  // llama.cpp's standard SWA: key p is visible from pos iff pos - p < window.
  int32_t FirstVisible(int32_t pos) const {
    return local_ && pos >= c_.sliding_window
               ? pos - static_cast<int32_t>(c_.sliding_window) + 1
               : 0;
  }
  // Elements [first, first + n) of a Q8_0 row as floats: the table's kernel
  // when they are whole blocks (bitwise LoadKvRow's values).
  void LoadQ8Head(const uint8_t* row, int64_t first, int64_t n, float* dst) const {
    if (first % kQK8_0 == 0 && n % kQK8_0 == 0) {
      kt_.q8_0_to_f32(row + first / kQK8_0 * static_cast<int64_t>(sizeof(BlockQ8_0)), n, dst);
    } else {
      LoadKvRow(KvType::kQ8_0, row, first, n, dst);
    }
  }
  // The softmax of the query at `pos` over its visible keys among the
  // slice's keys [j0, j1) (scores s, in place; the others get weight 0),
  // starting its partial p (stride_ floats: m, l, o zeroed).
  void SoftmaxRow(int32_t pos, int32_t j0, int32_t j1, float* s, float* p) const {
    const int64_t span = j1 - j0;
    const int64_t a = std::max(FirstVisible(pos), j0) - j0;
    const int64_t e = std::min(pos + 1, j1) - j0;
    std::fill_n(p, stride_, 0.0f);
    if (a >= e) {
      std::fill_n(s, span, 0.0f);
      return;
    }
    std::fill_n(s, a, 0.0f);
    std::fill(s + e, s + span, 0.0f);
    p[1] = kernels::SliceSoftmax(kt_, s + a, e - a, c_.attn_softcap, &p[0]);
  }
  // rows[j] = kv head kvh's part (dim elements) of base[j] for j < n, or of
  // its dequantized copy in `tile` (Q8_0 rows unless q8_direct).
  void HeadRows(const uint8_t* const* base, int64_t n, int64_t kvh, int64_t dim, bool q8_direct,
                float* tile, const void** rows) const {
    if (type_ == KvType::kQ8_0 && !q8_direct) {
      for (int64_t j = 0; j < n; ++j) {
        LoadQ8Head(base[j], kvh * dim, dim, tile + j * dim);
        rows[j] = tile + j * dim;
      }
      return;
    }
    const int64_t off = HeadOffset(kvh, dim);
    for (int64_t j = 0; j < n; ++j) rows[j] = base[j] + off;
  }
  // Bytes into a cached row where kv head kvh's part (dim elements) starts
  // (Q8_0: whole blocks, as q8_kernels_ requires).
  int64_t HeadOffset(int64_t kvh, int64_t dim) const {
    return type_ == KvType::kQ8_0 ? kvh * dim / kQK8_0 * static_cast<int64_t>(sizeof(BlockQ8_0))
                                  : kvh * dim * static_cast<int64_t>(el_);
  }
  // Before kv head kvh's call on a block of n rows (base), the rows of the
  // block after in reading order, next[0 .. nn), are asked for. F16 / F32
  // rows go to the kernels as `ahead`, which prefetch them among their
  // arithmetic (kernels/wsum_blocks.h): ahead[j] = the head's part of
  // next[j] (of base[j] past nn), returned. Q8_0 rows (the kernels read a
  // dequantized tile) and next rows past n are prefetched here instead, the
  // head's share of their lines (line l before head k0 + l % nk, so a block's
  // prefetches spread over its heads' calls); returns null then.
  const void* const* PrefetchNext(const uint8_t* const* base, int64_t n,
                                  const uint8_t* const* next, int64_t nn, int64_t kvh,
                                  int64_t k0, int64_t nk, int64_t row_lines, int64_t dim,
                                  const void** ahead) const {
    const bool q8 = type_ == KvType::kQ8_0;
    PrefetchShare(next + (q8 ? 0 : n), nn - (q8 ? 0 : n), kvh - k0, nk, row_lines);
    if (q8 || nn == 0) return nullptr;
    const int64_t m = std::min(n, nn);
    const int64_t off = HeadOffset(kvh, dim);
    for (int64_t j = 0; j < m; ++j) ahead[j] = next[j] + off;
    for (int64_t j = m; j < n; ++j) ahead[j] = base[j] + off;
    return ahead;
  }

  const AttentionContext& ax_;
  const kernels::KernelTable& kt_;
  const ModelConfig& c_;
  const int32_t layer_;
  const KvStorage& cache_;
  const Batch& batch_;
  const float* q_;
  float* out_;
  PlanBuffers& b_;
  const int64_t group_, hd_, hdv_, stride_;
  const bool local_;
  const KvType type_;
  const size_t el_;  // bytes per element of F32 / F16 rows (HeadOffset)
  // The table has Q8_0 kernels and each kv head's part of a Q8_0 row is
  // whole blocks: tasks with few query rows pass the rows to them as they
  // are (RunTask).
  const bool q8_kernels_;
};

int64_t SliceAttention::Plan(int n_threads) {
  const int64_t T = static_cast<int64_t>(batch_.size());
  // Runs of tokens: [begin, end) of the batch.
  const int64_t per_run = TokensPerTask(c_);
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (int64_t t = 0; t < T; ++t) {
    if (!runs.empty() && runs.back().second == t && t - runs.back().first < per_run &&
        batch_.seq_ids[t] == batch_.seq_ids[t - 1] &&
        batch_.positions[t] == batch_.positions[t - 1] + 1) {
      ++runs.back().second;
    } else {
      runs.emplace_back(t, t + 1);
    }
  }
  // Context slices of the keys a run reads, FirstVisible(its first
  // position) .. its last position.
  auto slices = [&](int64_t t0, int64_t t1) {
    return batch_.positions[t1 - 1] / kSlice - FirstVisible(batch_.positions[t0]) / kSlice + 1;
  };
  int64_t run_slices = 0;  // (run, context slice) pairs
  for (const auto& [t0, t1] : runs) run_slices += slices(t0, t1);
  // Kv heads per group, then query heads per kv head: all of them unless
  // that leaves threads idle.
  const int64_t kv_parts =
      std::clamp<int64_t>((n_threads + run_slices - 1) / run_slices, 1, c_.n_head_kv);
  const int64_t per_kv_part = (c_.n_head_kv + kv_parts - 1) / kv_parts;
  const int64_t n_kv_parts = (c_.n_head_kv + per_kv_part - 1) / per_kv_part;
  const int64_t kv_tasks = run_slices * n_kv_parts;
  const int64_t hslices =
      per_kv_part > 1 ? 1 : std::clamp<int64_t>((n_threads + kv_tasks - 1) / kv_tasks, 1, group_);
  const int64_t per_hslice = (group_ + hslices - 1) / hslices;
  const int64_t n_hslices = (group_ + per_hslice - 1) / per_hslice;
  b_.groups.clear();
  b_.tasks.clear();
  int64_t n_parts = 0;
  for (const auto& [t0, t1] : runs) {
    for (int64_t kp = 0; kp < n_kv_parts; ++kp) {
      for (int64_t hs = 0; hs < n_hslices; ++hs) {
        Group g;
        g.t0 = t0;
        g.t1 = t1;
        g.k0 = kp * per_kv_part;
        g.k1 = std::min(c_.n_head_kv, g.k0 + per_kv_part);
        g.g0 = hs * per_hslice;
        g.gn = std::min(per_hslice, group_ - g.g0);
        g.lo = FirstVisible(batch_.positions[t0]);
        g.hi = batch_.positions[t1 - 1];
        g.first_slice = g.lo / kSlice;
        g.n_slices = slices(t0, t1);
        g.part = n_parts;
        n_parts += (g.k1 - g.k0) * (t1 - t0) * g.gn * g.n_slices * stride_;
        for (int64_t sl = 0; sl < g.n_slices; ++sl) {
          b_.tasks.emplace_back(static_cast<int32_t>(b_.groups.size()), static_cast<int32_t>(sl));
        }
        b_.groups.push_back(g);
      }
    }
  }
  if (static_cast<int64_t>(b_.parts.size()) < n_parts) b_.parts.resize(static_cast<size_t>(n_parts));
  if (b_.pending.size() < b_.groups.size()) {
    b_.pending = std::vector<std::atomic<int32_t>>(b_.groups.size());
  }
  for (size_t i = 0; i < b_.groups.size(); ++i) {
    b_.pending[i].store(static_cast<int32_t>(b_.groups[i].n_slices), std::memory_order_relaxed);
  }
  return static_cast<int64_t>(b_.tasks.size());
}

void SliceAttention::RunTask(int64_t job, int thread) {
  const size_t gi = static_cast<size_t>(b_.tasks[static_cast<size_t>(job)].first);
  const Group& g = b_.groups[gi];
  const int64_t sl = b_.tasks[static_cast<size_t>(job)].second;
  const int64_t nt = g.t1 - g.t0, nh = g.gn, nr = nt * nh, nk = g.k1 - g.k0;
  const int32_t seq = batch_.seq_ids[g.t0];
  const int32_t pos0 = batch_.positions[g.t0];
  // Keys [j0, j1) of this slice; query row r = ti * nh + gi.
  const int32_t j0 = std::max<int32_t>(g.lo, static_cast<int32_t>((g.first_slice + sl) * kSlice));
  const int32_t j1 =
      std::min<int32_t>(g.hi + 1, static_cast<int32_t>((g.first_slice + sl + 1) * kSlice));
  const int64_t span = j1 - j0;
  const TaskScratch sc = CarveScratch((*ax_.scores)[thread].data(), nk, nr, hd_);
  GatherQueries(g, sc.q);
  // Partials of kv head kvh's rows: [nr, n_slices, stride].
  const int64_t row_stride = g.n_slices * stride_;
  auto part = [&](int64_t kvh) { return b_.parts.data() + g.part + (kvh - g.k0) * nr * row_stride; };
  // Blocks of kTileRows positions, every kv head of a block before the
  // next block (SliceRows: the reads and the prefetch order), for keys and
  // values stored as rows (in tiles: KeyTiles, ValueTiles).
  // call(kvh, b, n, rows, ahead): rows = kv head kvh's part of positions
  // b .. b+n of the slice, as HeadRows gives them; ahead as PrefetchNext.
  const SliceRows sr{cache_.RowMap(layer_, seq), j0, j1, g.hi};
  // Q8_0 kernels dequantize once per 3-4 query rows: a prompt chunk's rows
  // share a dequantized tile (pp512 @ d2000: 340 -> 287 tok/s all through
  // them). Both give the same bits: the choice never changes a result.
  const bool q8_direct = q8_kernels_ && nr <= kQ8DirectMaxRows;
  const TilePass tiles{kt_, hd_, hdv_, g.k0, g.k1, nr, sc.scores};
  auto each_block = [&](bool key, auto&& call) {
    const int64_t row_lines = ((key ? sr.map.k_row : sr.map.v_row) + 63) / 64;
    const int64_t dim = key ? hd_ : hdv_;
    const void* rows[kTileRows];
    const void* ahead[kTileRows];
    // This block's rows and the block's after, in reading order: each
    // block's rows are worked out once, as the block after the one before.
    const uint8_t* rings[2][kTileRows];
    const uint8_t** base = rings[0];
    const uint8_t** next = rings[1];
    sr.map.Rows(key, j0, std::min(kTileRows, span), base);
    for (int64_t b = 0; b < span; b += kTileRows) {
      const int64_t n = std::min(kTileRows, span - b);
      const int64_t n_next = sr.AheadRows(key, b + kTileRows, kTileRows, next);
      for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
        const void* const* ah = PrefetchNext(base, n, next, n_next, kvh, g.k0, nk,
                                             row_lines, dim, ahead);
        HeadRows(base, n, kvh, dim, q8_direct, sc.tile, rows);
        call(kvh, b, n, rows, ah);
      }
      std::swap(base, next);
    }
  };
  if (sr.map.k_tile > 0) {
    KeyTiles(tiles, sr, sc.q, c_.attn_scale, sc.tile, kTileRows * std::max(hd_, hdv_));
  } else {
    each_block(true, [&](int64_t kvh, int64_t b, int64_t n, const void* const* rows,
                         const void* const* ah) {
      ScoreRows(rows, ah, n, q8_direct, sc.q + (kvh - g.k0) * nr * hd_, nr,
                sc.scores + (kvh - g.k0) * nr * kSlice + b);
    });
  }
  for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
    for (int64_t r = 0; r < nr; ++r) {
      SoftmaxRow(pos0 + static_cast<int32_t>(r / nh), j0, j1,
                 sc.scores + ((kvh - g.k0) * nr + r) * kSlice,
                 part(kvh) + r * row_stride + sl * stride_);
    }
  }
  if (sr.map.v_tile > 0) {
    ValueTiles(tiles, sr, part(g.k0) + sl * stride_ + 2, row_stride);
  } else {
    each_block(false, [&](int64_t kvh, int64_t b, int64_t n, const void* const* rows,
                          const void* const* ah) {
      SumRows(rows, ah, n, q8_direct, sc.scores + (kvh - g.k0) * nr * kSlice + b, nr,
              part(kvh) + sl * stride_ + 2, row_stride);
    });
  }
  // The group's last task merges its rows' partials.
  if (b_.pending[gi].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  MergeGroup(g, b_.parts.data() + g.part);
}

void SliceAttention::MergeGroup(const Group& g, const float* parts) const {
  const int64_t nh = g.gn, nr = (g.t1 - g.t0) * nh, row_stride = g.n_slices * stride_;
  for (int64_t kvh = g.k0; kvh < g.k1; ++kvh) {
    for (int64_t r = 0; r < nr; ++r) {
      const int64_t ti = r / nh, h = kvh * group_ + g.g0 + r % nh;
      kernels::MergeSlices(parts + ((kvh - g.k0) * nr + r) * row_stride, stride_, g.n_slices,
                           hdv_, out_ + (g.t0 + ti) * c_.n_head * hdv_ + h * hdv_,
                           ax_.sinks != nullptr ? ax_.sinks[h] : -INFINITY);
    }
  }
}

}  // namespace

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
               const KvStorage& cache, const Batch& batch, const float* q,
               float* out) {
  thread_local PlanBuffers buffers;
  SliceAttention attention(ax, c, layer, cache, batch, q, out, &buffers);
  const int n_threads = ax.pool != nullptr ? ax.pool->num_threads() : 1;
  const int64_t n_tasks = attention.Plan(n_threads);
  auto task = [&attention](int64_t job, int thread) { attention.RunTask(job, thread); };
  if (ax.pool != nullptr && n_tasks > 1) {
    // Contiguous runs of tasks per thread: a thread takes consecutive
    // slices of a group, so it streams long runs of cached rows that the
    // hardware prefetchers follow (ctx 2,000, 2 threads: 2.78 -> 2.30 ms
    // in attention_bench). Which thread runs a task never changes a result.
    ax.pool->ParallelForRanges(n_tasks, task);
  } else {
    for (int64_t i = 0; i < n_tasks; ++i) task(i, 0);
  }
}

}  // namespace weft::model
