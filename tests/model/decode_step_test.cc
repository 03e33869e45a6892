// The decode step outside the matmuls: attention over the KV storage with GQA
// sharing (one task reads a K/V row once for several query heads) and the
// thread pool's join, which does not wait for workers that never woke up.
//
// Attention must give every query head bitwise what the single-query
// kernels::Attention gives (same kernel calls in the same order), whatever
// the grouping, the thread count, the batch, the chunking or the KV storage
// type.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/isa.h"
#include "kernels/ops.h"
#include "kernels/thread_pool.h"
#include "model/attention.h"
#include "model/model.h"
#include "tests/kernels/reference_attention.h"
#include "tests/kernels/tables_under_test.h"
#include "tests/model/synthetic.h"

namespace weft::model {
namespace {

ModelConfig AttentionConfig(int64_t n_head, int64_t n_head_kv, int64_t head_dim) {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = n_head;
  c.n_head_kv = n_head_kv;
  c.head_dim_k = head_dim;
  c.head_dim_v = head_dim;
  c.n_rot = head_dim;
  c.n_embd = n_head * head_dim;
  c.attn_scale = 0.37f;
  return c;
}

// out [n_head * head_dim_v], the attention of the query q [q_dim] at pos of
// `seq`, vs the same in double over the keys lo .. pos and their values as
// the storage gives them back (LoadKey / LoadValue), within float rounding.
void ExpectNearLoadedRows(const ModelConfig& c, const KvStorage& kv, int32_t layer, int32_t seq,
                          int32_t lo, int32_t pos, const float* q, const float* out) {
  const int64_t n = pos - lo + 1, group = c.n_head / c.n_head_kv;
  std::vector<float> k(static_cast<size_t>(n * c.k_dim())), v(static_cast<size_t>(n * c.v_dim()));
  for (int64_t j = 0; j < n; ++j) {
    kv.LoadKey(layer, seq, lo + static_cast<int32_t>(j), c.k_dim(), k.data() + j * c.k_dim());
    kv.LoadValue(layer, seq, lo + static_cast<int32_t>(j), c.v_dim(), v.data() + j * c.v_dim());
  }
  for (int64_t h = 0; h < c.n_head; ++h) {
    const int64_t kh = h / group;
    const std::vector<double> want = kernels::testing::ReferenceAttention(
        q + h * c.head_dim_k, k.data() + kh * c.head_dim_k, c.k_dim(),
        v.data() + kh * c.head_dim_v, c.v_dim(), n, c.head_dim_k, c.head_dim_v, c.attn_scale,
        c.attn_softcap);
    for (int64_t e = 0; e < c.head_dim_v; ++e) {
      ASSERT_NEAR(out[h * c.head_dim_v + e], want[e], 1e-4 + 1e-4 * std::fabs(want[e]))
          << "layer " << layer << " seq " << seq << " pos " << pos << " head " << h << " e " << e;
    }
  }
}

// Model attention for a batch, with the given thread count, vs each token
// alone in a batch of its own on one thread, and (F32 / F16) vs one
// kernels::Attention call per (token, head); bitwise. Contexts cross the
// attention's slice boundaries (kernels::kAttentionSlice), and a prompt
// chunk straddles one.
void CheckAttention(const ModelConfig& c, KvType type,
                    const kernels::KernelTable& kt, int n_threads) {
  SCOPED_TRACE(::testing::Message()
               << "heads " << c.n_head << "/" << c.n_head_kv << " dim "
               << c.head_dim_k << " kv " << KvTypeName(type) << " " << kt.name
               << " threads " << n_threads);
  constexpr int64_t kSlice = kernels::kAttentionSlice;
  const int32_t kSeqs = 4, kCap = static_cast<int32_t>(2 * kSlice + 37);
  auto kv = ContiguousKvStorage::Create(c, kCap, kSeqs, type);
  ASSERT_TRUE(kv.ok()) << kv.status().ToString();
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  // Sequence s holds lengths[s] positions; the batch's tokens sit at the
  // last position of each (and two more of sequence 0).
  const int32_t lengths[kSeqs] = {kCap, 1, 20,
                                  static_cast<int32_t>(kSlice + 9)};
  Batch batch;
  for (int32_t s = 0; s < kSeqs; ++s) {
    ASSERT_TRUE((*kv)->Reserve(s, lengths[s]).ok());
    std::vector<float> k(c.k_dim()), v(c.v_dim());
    for (int32_t p = 0; p < lengths[s]; ++p) {
      for (int32_t layer = 0; layer < c.n_layer; ++layer) {
        for (float& x : k) x = nd(rng);
        for (float& x : v) x = nd(rng);
        (*kv)->StoreKey(layer, s, p, k.data(), c.k_dim());
        (*kv)->StoreValue(layer, s, p, v.data(), c.v_dim());
      }
    }
    (*kv)->Commit(s, lengths[s]);
    batch.Add(1, lengths[s] - 1, s, true);
  }
  batch.Add(1, 5, 0, true);
  batch.Add(1, 0, 0, true);
  // Prompt chunks: consecutive positions of one sequence share tasks (and
  // their key / value reads), which must not change any token's result.
  for (int32_t p = 9; p < 20; ++p) batch.Add(1, p, 2, true);
  for (int32_t p = kSlice - 12; p < kSlice + 8; ++p) batch.Add(1, p, 3, true);
  const int64_t T = static_cast<int64_t>(batch.size());
  std::vector<float> q(T * c.q_dim());
  for (float& x : q) x = nd(rng);

  std::unique_ptr<kernels::ThreadPool> pool;
  if (n_threads > 1) {
    pool = std::make_unique<kernels::ThreadPool>(kernels::ThreadPoolOptions{
        .num_threads = n_threads, .spin_iterations = 100});
  }
  std::vector<std::vector<float>> scores(
      n_threads, std::vector<float>(AttentionScratchFloats(c)));
  const AttentionContext ax{&kt, pool.get(), &scores};
  const AttentionContext ax1{&kt, nullptr, &scores};
  const int64_t out_row = c.n_head * c.head_dim_v;
  for (int32_t layer = 0; layer < c.n_layer; ++layer) {
    std::vector<float> out(T * out_row, -1.0f);
    Attention(ax, c, layer, **kv, batch, q.data(), out.data());
    const int64_t group = c.n_head / c.n_head_kv;
    const size_t el = type == KvType::kF32 ? 4 : 2;
    std::vector<float> want(c.head_dim_v), sc(kCap), alone(out_row);
    for (int64_t t = 0; t < T; ++t) {
      Batch one;
      one.Add(1, batch.positions[t], batch.seq_ids[t], true);
      Attention(ax1, c, layer, **kv, one, q.data() + t * c.q_dim(),
                alone.data());
      ASSERT_EQ(0, std::memcmp(out.data() + t * out_row, alone.data(),
                               alone.size() * sizeof(float)))
          << "layer " << layer << " token " << t << " alone";
      // Sliding-window layers see keys pos - window + 1 .. pos.
      const int32_t pos = batch.positions[t];
      const int32_t lo = c.IsLocalLayer(layer) && pos >= c.sliding_window
                             ? pos - static_cast<int32_t>(c.sliding_window) + 1
                             : 0;
      // Every type: near attention over the rows read back. F32 / F16:
      // bitwise the reference kernel over the stored rows.
      ExpectNearLoadedRows(c, **kv, layer, batch.seq_ids[t], lo, pos, q.data() + t * c.q_dim(),
                           out.data() + t * out_row);
      if (type == KvType::kQ8_0) continue;
      for (int64_t h = 0; h < c.n_head; ++h) {
        const KvStorage& ckv = **kv;
        kernels::AttentionArgs a;
        a.q = q.data() + t * c.q_dim() + h * c.head_dim_k;
        // This head's part (dim elements) of row lo, or of row lo's tile of
        // width tw > 0 (its lane lo % tw).
        auto head_part = [&](bool key, int32_t tw, int64_t dim) {
          const int32_t at = tw > 0 ? lo - lo % tw : lo;
          const uint8_t* base = key ? ckv.KeyData(layer, batch.seq_ids[t], at)
                                    : ckv.ValueData(layer, batch.seq_ids[t], at);
          return base + (h / group) * dim * std::max(tw, 1) * el;
        };
        a.k_tile = ckv.key_tile();
        a.k_lane = a.k_tile > 0 ? lo % a.k_tile : 0;
        a.k = head_part(true, ckv.key_tile(), c.head_dim_k);
        a.v_tile = ckv.value_tile();
        a.v_lane = a.v_tile > 0 ? lo % a.v_tile : 0;
        a.v = head_part(false, ckv.value_tile(), c.head_dim_v);
        a.k_type = a.v_type = type == KvType::kF32 ? kernels::KvType::kF32
                                                   : kernels::KvType::kF16;
        a.k_row_bytes = static_cast<size_t>(KvRowBytes(type, c.k_dim()));
        a.v_row_bytes = static_cast<size_t>(KvRowBytes(type, c.v_dim()));
        a.n_kv = pos - lo + 1;
        a.first_pos = lo;
        a.head_dim = c.head_dim_k;
        a.scale = c.attn_scale;
        a.softcap = c.attn_softcap;
        a.scores = sc.data();
        a.out = want.data();
        kernels::Attention(kt, a);
        const float* got = out.data() + (t * c.n_head + h) * c.head_dim_v;
        ASSERT_EQ(0, std::memcmp(got, want.data(), want.size() * sizeof(float)))
            << "layer " << layer << " token " << t << " head " << h;
      }
    }
  }
}

// On every table under test, the emulated AVX-512 one included (its Q8_0
// rows must take one path whether a token comes alone or in a chunk).
TEST(DecodeAttentionTest, GroupedHeadsMatchSingleQueryKernel) {
  for (const kernels::KernelTable* table : kernels::testing::TablesUnderTest()) {
    const kernels::KernelTable& kt = *table;
    for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
      for (int threads : {1, 2, 3, 7}) {
        // Odd head sizes exercise the kernels' scalar tails (Q8_0 rows
        // need whole blocks of 32).
        if (type != KvType::kQ8_0) {
          CheckAttention(AttentionConfig(6, 2, 20), type, kt, threads);
          CheckAttention(AttentionConfig(5, 1, 13), type, kt, threads);
          CheckAttention(AttentionConfig(3, 3, 8), type, kt, threads);
        }
        CheckAttention(AttentionConfig(8, 1, 32), type, kt, threads);
        CheckAttention(AttentionConfig(3, 1, 64), type, kt, threads);
        ModelConfig swa = AttentionConfig(4, 2, 32);
        swa.sliding_window = 6;
        swa.swa_pattern = 2;  // layer 0 local, layer 1 global
        CheckAttention(swa, type, kt, threads);
        ModelConfig capped = AttentionConfig(4, 2, 32);
        capped.attn_softcap = 50.0f;
        capped.sliding_window =
            kernels::kAttentionSlice + 3;  // a window across slices
        capped.swa_pattern = 2;
        CheckAttention(capped, type, kt, threads);
      }
    }
  }
}

// Logits of a few decode steps (several sequences per Forward) with
// n_threads threads.
std::vector<float> DecodeLogits(const Model& model, KvType type, int n_threads) {
  auto kv = ContiguousKvStorage::Create(model.config(), 24, 3, type);
  EXPECT_TRUE(kv.ok());
  ForwardOptions opts;
  opts.n_threads = n_threads;
  std::vector<float> all, logits;
  for (int32_t s = 0; s < 3; ++s) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 5 + 3 * s; ++i) ids.push_back((7 * i + s) % 50 + 1);
    EXPECT_TRUE(model.Forward(Batch::ForPrompt(ids, 0, s), kv->get(), &logits, opts).ok());
  }
  for (int step = 0; step < 4; ++step) {
    Batch b;
    for (int32_t s = 0; s < 3; ++s) {
      b.Add((step * 11 + s) % 50 + 1, (*kv)->Length(s), s, true);
    }
    EXPECT_TRUE(model.Forward(b, kv->get(), &logits, opts).ok());
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

TEST(DecodeAttentionTest, LogitsDoNotDependOnThreadCount) {
  testing::SyntheticSpec one_kv;  // group of 8 query heads per kv head
  one_kv.n_head = 8;
  one_kv.n_head_kv = 1;
  one_kv.head_dim = 32;
  testing::SyntheticSpec gemma;
  gemma.arch = "gemma3";
  gemma.head_dim = 16;
  gemma.n_layer = 6;
  gemma.tied = true;
  for (const testing::SyntheticSpec& spec : {testing::SyntheticSpec{}, one_kv, gemma}) {
    auto m = testing::LoadSynthetic(spec);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
      if (!CheckKvType(type, m->model->config()).ok()) continue;
      const std::vector<float> one = DecodeLogits(*m->model, type, 1);
      for (int threads : {2, 3, 5}) {
        const std::vector<float> many = DecodeLogits(*m->model, type, threads);
        ASSERT_EQ(one.size(), many.size());
        EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)))
            << spec.arch << " heads " << spec.n_head << "/" << spec.n_head_kv << " kv "
            << KvTypeName(type) << " threads " << threads;
      }
    }
  }
}

// More threads than cores and workers that sleep at once (no spinning):
// most jobs finish before a worker wakes; a late worker must never run a
// task of a job that has returned, nor a task twice.
TEST(ThreadPoolJoinTest, LateWorkersNeverRunFinishedJobs) {
  for (int threads : {2, 5}) {
    kernels::ThreadPool pool(
        kernels::ThreadPoolOptions{.num_threads = threads, .spin_iterations = 0});
    constexpr int kJobs = 20000;
    std::vector<std::atomic<int>> hits(kJobs * 4);
    std::atomic<int> current{-1};
    std::atomic<int> stale{0};
    for (int job = 0; job < kJobs; ++job) {
      current.store(job);
      const int n = 1 + job % 4;
      pool.ParallelFor(n, [&](int64_t task, int thread) {
        if (current.load() != job) stale.fetch_add(1);
        hits[job * 4 + task].fetch_add(1);
        (void)thread;
      });
      for (int t = 0; t < n; ++t) ASSERT_EQ(hits[job * 4 + t].load(), 1) << job;
    }
    current.store(-2);
    for (int job = 0; job < kJobs; ++job) {
      for (int t = 0; t < 4; ++t) {
        ASSERT_EQ(hits[job * 4 + t].load(), t < 1 + job % 4 ? 1 : 0) << job;
      }
    }
    EXPECT_EQ(stale.load(), 0);
  }
}

// Writes of every task are visible when ParallelFor returns, also when a
// worker ran most of them.
TEST(ThreadPoolJoinTest, TaskWritesAreVisibleAfterReturn) {
  kernels::ThreadPool pool(kernels::ThreadPoolOptions{.num_threads = 3});
  std::vector<int64_t> out(4096);
  for (int round = 1; round <= 200; ++round) {
    pool.ParallelFor(static_cast<int64_t>(out.size()),
                     [&](int64_t i, int) { out[i] = i * round; });
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out[i], static_cast<int64_t>(i) * round) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace weft::model
