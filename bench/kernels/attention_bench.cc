// Decode attention over a filled KV cache (model::Attention), SmolLM2-135M
// shaped: 30 layers, 9 query / 3 kv heads of 64, f16 KV (BM_DecodeAttentionQ8:
// Q8_0 KV, --kv-type q8_0). One iteration is
// one decode step's attention: B sequences at context `ctx`, every layer,
// so the KV read (30 * ctx * 768 bytes per sequence) streams from L3 or
// memory as in a real step.
//
//   attention_bench [--isa=scalar|avx2|avx512|neon] --benchmark_filter=...
//   (args: ctx, B, threads; BM_DecodeAttentionCold: the KV read from memory)
//
// With 1 thread the CPU time is the figure to compare between builds on a
// busy machine; with 2 the real time.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/isa.h"
#include "kernels/thread_pool.h"
#include "model/attention.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/kv_storage.h"

namespace weft::model {
namespace {

ModelConfig SmolShape() {
  ModelConfig c;
  c.n_layer = 30;
  c.n_embd = 576;
  c.n_head = 9;
  c.n_head_kv = 3;
  c.head_dim_k = c.head_dim_v = 64;
  c.attn_scale = 0.125f;
  return c;
}

// Gets the pool's workers out of their sleep (they sleep after ~0.6 ms
// idle, as through the eviction read below) before a timed step, as in a
// model's step, where the matmuls before attention keep them awake. A task
// per thread, each waiting (up to 2 ms) until every task has started: a
// worker must wake and claim one (an empty ParallelFor returns before a
// sleeping worker is up: the caller runs the tasks itself).
void WakeWorkers(kernels::ThreadPool& pool) {
  const int n = pool.num_threads();
  std::atomic<int> started{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  pool.ParallelFor(n, [&](int64_t, int) {
    started.fetch_add(1, std::memory_order_relaxed);
    while (started.load(std::memory_order_relaxed) < n &&
           std::chrono::steady_clock::now() < deadline) {
    }
  });
}

// cold: each iteration starts after a 512 MiB read (timing paused), so the
// KV rows come from memory as in a model's step, where the weights' read
// evicts them; otherwise a small KV stays in the L3 between iterations.
void DecodeAttention(benchmark::State& state, bool cold, KvType type = KvType::kF16) {
  const int32_t ctx = static_cast<int32_t>(state.range(0));
  const int32_t seqs = static_cast<int32_t>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const ModelConfig c = SmolShape();
  auto kv = ContiguousKvStorage::Create(c, ctx + 1, seqs, type);
  if (!kv.ok()) {
    state.SkipWithError(kv.status().ToString().c_str());
    return;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> row(c.k_dim());
  Batch batch;
  for (int32_t s = 0; s < seqs; ++s) {
    (void)(*kv)->Reserve(s, ctx + 1);
    for (int32_t layer = 0; layer < c.n_layer; ++layer) {
      for (int32_t p = 0; p <= ctx; ++p) {
        for (float& x : row) x = nd(rng);
        (*kv)->StoreKey(layer, s, p, row.data(), c.k_dim());
        (*kv)->StoreValue(layer, s, p, row.data(), c.v_dim());
      }
    }
    (*kv)->Commit(s, ctx + 1);
    batch.Add(1, ctx, s, true);
  }
  std::vector<float> q(static_cast<size_t>(seqs * c.q_dim()));
  for (float& x : q) x = nd(rng);
  std::vector<float> out(static_cast<size_t>(seqs * c.n_head * c.head_dim_v));
  std::unique_ptr<kernels::ThreadPool> pool;
  if (threads > 1) {
    pool = std::make_unique<kernels::ThreadPool>(
        kernels::ThreadPoolOptions{.num_threads = threads});
  }
  std::vector<std::vector<float>> scratch(threads,
                                          std::vector<float>(AttentionScratchFloats(c)));
  const AttentionContext ax{&kernels::Kernels(), pool.get(), &scratch};
  std::vector<uint64_t> evict(cold ? (size_t{512} << 20) / 8 : 0, 1);
  uint64_t sink = 0;
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      for (size_t i = 0; i < evict.size(); i += 8) sink += evict[i];
      if (pool != nullptr) WakeWorkers(*pool);
      state.ResumeTiming();
    }
    for (int32_t layer = 0; layer < c.n_layer; ++layer) {
      Attention(ax, c, layer, **kv, batch, q.data(), out.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  benchmark::DoNotOptimize(sink);
  const double kv_bytes =
      2.0 * c.n_layer * seqs * (ctx + 1) * static_cast<double>(KvRowBytes(type, c.k_dim()));
  state.counters["KV_MB"] = kv_bytes / 1e6;
  state.counters["KV_GBps"] =
      benchmark::Counter(kv_bytes * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}
void BM_DecodeAttention(benchmark::State& state) { DecodeAttention(state, false); }
void BM_DecodeAttentionCold(benchmark::State& state) { DecodeAttention(state, true); }
void BM_DecodeAttentionQ8(benchmark::State& state) {
  DecodeAttention(state, false, KvType::kQ8_0);
}
BENCHMARK(BM_DecodeAttention)
    ->ArgNames({"ctx", "B", "threads"})
    ->ArgsProduct({{1000, 2000, 4000}, {1, 16}, {1, 2}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeAttentionCold)
    ->ArgNames({"ctx", "B", "threads"})
    ->ArgsProduct({{1000, 2000, 4000}, {1}, {1, 2}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeAttentionQ8)
    ->ArgNames({"ctx", "B", "threads"})
    ->ArgsProduct({{1000, 2000, 4000}, {1, 16}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace weft::model

int main(int argc, char** argv) {
  // --isa=X forces a kernel table (the others go to Google Benchmark).
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--isa=", 6) == 0) {
      weft::kernels::Isa isa;
      if (!weft::kernels::ParseIsa(argv[i] + 6, &isa) || !weft::kernels::IsaSupported(isa)) {
        std::fprintf(stderr, "unsupported --isa: %s\n", argv[i] + 6);
        return 2;
      }
      weft::kernels::SetIsa(isa);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
