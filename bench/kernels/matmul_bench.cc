// MatMul throughput per weight type at a Gemma-3-270M-like shape (K=640,
// N=2048) and a 1B-like shape (K=2048, N=5632), for M = 1 (decode: GB/s of
// weight bytes read) and M = 8, 64, 512 (GFLOP/s; the M=8 time is also
// reported as a ratio to M=1 by comparing the two rows). Also the memory
// read-bandwidth probe, the roofline the M=1 numbers are compared with.
// The "gemma_out" shape (Q8_0 only, M = 1, 8, 16) is Gemma 3's tied output
// matrix: GFLOP/s / 2 is the GMAC/s issue #5's B=8 target depends on.
// The last argument is 1 for the weights in the x8 layout (packed_x8.h).
// BM_TileX8InL1: one x8 tile kernel with everything in L1, as GMAC/s and %
// of its compute ceiling (one thread). BM_PipeMix (pipe_bench.cc): which
// AVX2 instructions share execution pipes.
//
//   kernels_bench [--isa=scalar|avx2|avx512|amx|neon] [--threads=N] [--hot] [--no-panel]
//                 [benchmark flags]
//
// The weights are replicated until they span >= 256 MiB and each iteration
// reads the next copy, so M=1 measures DRAM, not the last-level cache;
// --hot keeps one copy, read from the caches (the compute side alone).
// --no-panel runs BM_MatMul without the tables' panel path
// (MatMulKernel::pack_panel), for side-by-side runs. BM_MatMulPairs: the
// pair tiles on and off, in one process.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/bandwidth.h"
#include "kernels/compute_peak.h"
#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/packed_x8.h"
#include "kernels/thread_pool.h"
#include "tensor/blocks.h"
#include "tensor/quant.h"
#include "tensor/types.h"

namespace weft::kernels {
namespace {

int g_threads = 0;
bool g_hot = false;  // --hot: one weight copy, read from cache after the first call
bool g_no_panel = false;  // --no-panel: the table without its panel path (A/B)

// The table BM_MatMul runs on: Kernels(), less its panel path with --no-panel.
const KernelTable& BenchTable() {
  static const KernelTable table = [] {
    KernelTable t = Kernels();
    if (g_no_panel) {
      for (MatMulKernel& k : t.matmul_x8) k.pack_panel = nullptr;
    }
    return t;
  }();
  return table;
}

ThreadPool& Pool() {
  static ThreadPool* pool = new ThreadPool(ThreadPoolOptions{.num_threads = g_threads});
  return *pool;
}

constexpr GgmlType kTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16,
                               GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0,
                               GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                               GgmlType::kQ3_K, GgmlType::kIQ4_XS, GgmlType::kQ4_1,
                               GgmlType::kIQ4_NL};
struct Shape {
  const char* name;
  int64_t k, n;
};
// gemma_out: Gemma 3's tied Q8_0 output matrix (262144 x 640, 170 MiB in
// Q8_0), the largest product of a decode step (filter on /5/2/ for Q8_0).
// m138_up: the FFN up projection of bench/results/formats-spr.md's 138M
// model (every K a multiple of 256, so the K-quants run on it).
constexpr Shape kShapes[] = {{"gemma270m", 640, 2048},
                             {"llama1b", 2048, 5632},
                             {"gemma_out", 640, 262144},
                             {"m138_up", 768, 2560}};

// Weight copies for one (type, shape), built once.
struct Weights {
  size_t bytes = 0;  // one copy
  int copies = 0;
  std::unique_ptr<uint8_t[]> data;
};

// x8: each copy in the x8 layout (packed_x8.h).
const Weights& GetWeights(GgmlType type, const Shape& s, bool x8) {
  static std::map<std::pair<int, int64_t>, std::unique_ptr<Weights>>* cache =
      new std::map<std::pair<int, int64_t>, std::unique_ptr<Weights>>();
  auto& slot = (*cache)[{static_cast<int>(type) * 2 + x8, s.k * 100000 + s.n}];
  if (slot == nullptr) {
    slot = std::make_unique<Weights>();
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> wf(s.k * s.n);
    for (float& v : wf) v = normal(rng);
    const size_t row_major = RowBytes(type, s.k).value() * s.n;
    slot->bytes = x8 ? PackedX8Bytes(type, s.n, s.k) : row_major;
    slot->copies =
        g_hot ? 1 : static_cast<int>(((size_t{256} << 20) + slot->bytes - 1) / slot->bytes);
    slot->data.reset(new uint8_t[slot->bytes * slot->copies]);
    std::vector<uint8_t> rows(row_major);
    if (!QuantizeRows(type, wf.data(), rows.data(), s.n, s.k, 0).ok()) std::abort();
    if (x8) {
      PackX8(type, rows.data(), 0, s.n, s.k, slot->data.get());
    } else {
      std::memcpy(slot->data.get(), rows.data(), row_major);
    }
    for (int c = 1; c < slot->copies; ++c) {
      std::memcpy(slot->data.get() + c * slot->bytes, slot->data.get(), slot->bytes);
    }
  }
  return *slot;
}

// Times MatMul on `table` over M rows against the weight copies of (type,
// s) in turn; `what` ends the label.
void TimeMatMul(benchmark::State& state, const KernelTable& table, GgmlType type, const Shape& s,
                int64_t m, bool x8, const std::string& what) {
  const Weights& w = GetWeights(type, s, x8);
  std::vector<float> x(m * s.k), y(m * s.n);
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (float& v : x) v = normal(rng);
  MatMulArgs a;
  a.w_type = type;
  a.x = x.data();
  a.y = y.data();
  a.m = m;
  a.n = s.n;
  a.k = s.k;
  a.pool = &Pool();
  a.w_x8 = x8;
  int copy = 0;
  for (auto _ : state) {
    a.w = w.data.get() + static_cast<size_t>(copy) * w.bytes;
    copy = copy + 1 == w.copies ? 0 : copy + 1;
    MatMul(table, a);
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(w.bytes) * it / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * s.n * s.k * it / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(std::string(TypeName(type)) + " " + s.name + " M=" + std::to_string(m) + what +
                 " " + Kernels().name);
}

void BM_MatMul(benchmark::State& state) {
  const bool x8 = state.range(3) != 0;
  TimeMatMul(state, BenchTable(), kTypes[state.range(0)], kShapes[state.range(1)],
             state.range(2), x8, x8 ? " x8" : "");
}

void MatMulBenchArgs(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < static_cast<int>(std::size(kTypes)); ++t) {
    for (int s = 0; s < static_cast<int>(std::size(kShapes)); ++s) {
      if (kShapes[s].k % TypeTraits(kTypes[t]).block_size != 0) continue;
      if (std::strcmp(kShapes[s].name, "gemma_out") == 0) {
        // Only the decode batches (M = 64+ would take seconds per call).
        if (kTypes[t] == GgmlType::kQ8_0) {
          for (int x8 : {0, 1}) {
            for (int m : {1, 8, 16}) b->Args({t, s, m, x8});
          }
        }
        continue;
      }
      for (int x8 = 0; x8 <= (CanPackX8(kTypes[t]) ? 1 : 0); ++x8) {
        for (int m : {1, 4, 5, 8, 9, 16, 64, 128, 256, 512}) b->Args({t, s, m, x8});
      }
    }
  }
}
BENCHMARK(BM_MatMul)->Apply(MatMulBenchArgs)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The x8 pair tiles (MatMulKernel::pair_tile: two groups a call, the
// AVX-512 table's Q4_0, Q5_0, Q8_0 and K-quants) on and off, side by side
// in one process: Q4_0 / Q5_0 / Q8_0 at M = 1 to the tile's columns, the
// K-quants and IQ4_XS (which take pairs from M = 16) on the shapes their
// blocks divide at M = 1 .. 64; with
// --benchmark_enable_random_interleaving=true --benchmark_repetitions=N the
// two alternate, which a machine whose bandwidth drifts needs.
// Args: type (kTypes index), shape, M, pair (1: at every M, 0: never).
void BM_MatMulPairs(benchmark::State& state) {
  const GgmlType type = kTypes[state.range(0)];
  const bool pair = state.range(3) != 0;
  static const KernelTable* tables = [] {
    auto* t = new KernelTable[2]{BenchTable(), BenchTable()};
    for (MatMulKernel& k : t[0].matmul_x8) k.pair_tile = nullptr;
    for (MatMulKernel& k : t[1].matmul_x8) k.pair_min_m = 1;
    return t;
  }();
  const KernelTable& table = tables[pair ? 1 : 0];
  if (table.matmul_x8[static_cast<int>(ToWeightFormat(type))].pair_tile == nullptr && pair) {
    state.SkipWithError("no pair tile on this table");
    return;
  }
  TimeMatMul(state, table, type, kShapes[state.range(1)], state.range(2), true,
             pair ? " x8 pairs" : " x8 tiles");
}
void MatMulPairsArgs(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < static_cast<int>(std::size(kTypes)); ++t) {
    const bool kquant = TypeTraits(kTypes[t]).block_size == kQK_K;
    if (!kquant && t != 3 && t != 4 && t != 5) continue;  // Q4_0, Q5_0, Q8_0
    for (int s = 0; s < static_cast<int>(std::size(kShapes)); ++s) {
      if (kShapes[s].k % TypeTraits(kTypes[t]).block_size != 0) continue;
      if (!kquant && s == 3) continue;  // their shapes as before
      for (int m : {1, 2, 3, 4, 8, 16, 64}) {
        if (!kquant && m > 4) continue;
        for (int pair : {0, 1}) b->Args({t, s, m, pair});
      }
    }
  }
}
BENCHMARK(BM_MatMulPairs)
    ->Apply(MatMulPairsArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// One x8 tile kernel on one thread with its 8 weight rows and the
// activations in L1 (one group, K = 640, or 768 for the K-quants; the
// tile called over nc activation rows in its own column steps): the
// kernel's instruction throughput without memory, and its share of the
// matching compute ceiling (compute_peak.h, one thread, measured once).
// Args: index into kX8Types, nc.
constexpr GgmlType kX8Types[] = {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0,
                                 GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ4_1,
                                 GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K,
                                 GgmlType::kQ5_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS};

// One x8 group of `type` (kX8Rows weight rows of k) and nc activation rows
// quantized for `kern`, from normal random values drawn with `seed`.
struct X8InL1 {
  std::vector<uint8_t> w;   // the group, packed (PackX8)
  std::vector<uint8_t> xq;  // nc rows of xq_stride bytes
  size_t xq_stride = 0;
};
X8InL1 MakeX8InL1(GgmlType type, const MatMulKernel& kern, int64_t k, int nc, uint32_t seed) {
  const int64_t n = kX8Rows;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> wf(n * k), x(nc * k);
  for (float& v : wf) v = normal(rng);
  for (float& v : x) v = normal(rng);
  const size_t row_bytes = RowBytes(type, k).value();
  std::vector<uint8_t> rows(row_bytes * n);
  X8InL1 d;
  d.w.resize(PackedX8Bytes(type, n, k));
  if (!QuantizeRows(type, wf.data(), rows.data(), n, k, 0).ok()) std::abort();
  PackX8(type, rows.data(), 0, n, k, d.w.data());
  d.xq_stride = ActRowBytes(kern.act, k);
  d.xq.resize(d.xq_stride * nc);
  for (int c = 0; c < nc; ++c) kern.quantize(&x[c * k], &d.xq[c * d.xq_stride], k);
  return d;
}

void BM_TileX8InL1(benchmark::State& state) {
  const GgmlType type = kX8Types[state.range(0)];
  const int nc = static_cast<int>(state.range(1));
  const int64_t k = TypeTraits(type).block_size == 256 ? 768 : 640, n = kX8Rows;
  const MatMulKernel& kern = Kernels().matmul_x8[static_cast<int>(ToWeightFormat(type))];
  if (kern.tile == nullptr || kern.quantize == nullptr) {
    state.SkipWithError("no x8 tile on this table");
    return;
  }
  static const ComputePeaks peaks = MeasureComputePeaks(nullptr);
  const X8InL1 d = MakeX8InL1(type, kern, k, nc, 11);
  const std::vector<uint8_t>& w = d.w;
  const std::vector<uint8_t>& xq = d.xq;
  const size_t xs = d.xq_stride;
  std::vector<float> y(nc * n);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (int c0 = 0; c0 < nc; c0 += kern.tile_cols) {
      kern.tile(k, w.data(), 0, kX8Rows, &xq[c0 * xs], xs, std::min(kern.tile_cols, nc - c0),
                &y[c0 * n], n);
    }
    benchmark::DoNotOptimize(y.data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double gmacs =
      static_cast<double>(n * k * nc) * static_cast<double>(state.iterations()) / seconds / 1e9;
  state.counters["GMAC/s"] = gmacs;
  const double peak = peaks.gmacs[static_cast<int>(PeakKindOf(type))];
  if (peak > 0) state.counters["pct_of_ceiling"] = 100 * gmacs / peak;
  state.SetLabel(std::string(TypeName(type)) + " nc=" + std::to_string(nc) + " " + Kernels().name);
}
BENCHMARK(BM_TileX8InL1)
    ->ArgsProduct({benchmark::CreateDenseRange(0, std::size(kX8Types) - 1, 1), {1, 4, 16}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// The panel path (MatMulKernel::panel_tile, the AVX-512 table's Q4_0, Q5_0
// and Q8_0) the same way: one group against one panel of nc activation rows
// (nc <= panel_rows; 8 is a half panel, B = 8's decode step).
// Args: index into kX8Types, nc.
void BM_PanelX8InL1(benchmark::State& state) {
  const GgmlType type = kX8Types[state.range(0)];
  const int64_t k = 640, n = kX8Rows;
  const MatMulKernel& kern = Kernels().matmul_x8[static_cast<int>(ToWeightFormat(type))];
  if (kern.panel_tile == nullptr || state.range(1) > kern.panel_rows) {
    state.SkipWithError("no such panel path on this table");
    return;
  }
  const int nc = static_cast<int>(state.range(1));
  const X8InL1 d = MakeX8InL1(type, kern, k, nc, 12);
  const std::vector<uint8_t>& w = d.w;
  const size_t xs = d.xq_stride;
  std::vector<uint8_t> panel(xs * kern.panel_stride_rows + 64);
  uint8_t* p = panel.data() + (64 - reinterpret_cast<uintptr_t>(panel.data()) % 64) % 64;
  kern.pack_panel(d.xq.data(), xs, nc, k, p);
  std::vector<float> y(nc * n);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    kern.panel_tile(k, w.data(), 0, kX8Rows, p, xs, nc, y.data(), n);
    benchmark::DoNotOptimize(y.data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["GMAC/s"] =
      static_cast<double>(n * k * nc) * static_cast<double>(state.iterations()) / seconds / 1e9;
  state.SetLabel(std::string(TypeName(type)) + " panel of " + std::to_string(nc) + " " +
                 Kernels().name);
}
BENCHMARK(BM_PanelX8InL1)
    ->ArgsProduct({{0, 1, 2}, {8, 16}})
    ->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_ReadBandwidth(benchmark::State& state) {
  double gbs = 0;
  for (auto _ : state) gbs = MeasureReadBandwidth(&Pool(), size_t{1} << 30, 3);
  state.counters["GB/s"] = gbs;
  state.SetLabel(Kernels().name);
}
BENCHMARK(BM_ReadBandwidth)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace weft::kernels

int main(int argc, char** argv) {
  using weft::kernels::Isa;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--isa=", 6) == 0) {
      Isa isa;
      if (!weft::kernels::ParseIsa(argv[i] + 6, &isa) || !weft::kernels::IsaSupported(isa)) {
        std::fprintf(stderr, "unsupported --isa: %s\n", argv[i] + 6);
        return 2;
      }
      weft::kernels::SetIsa(isa);
    } else if (std::strcmp(argv[i], "--no-panel") == 0) {
      weft::kernels::g_no_panel = true;
    } else if (std::strcmp(argv[i], "--hot") == 0) {
      weft::kernels::g_hot = true;
    } else if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      weft::kernels::g_threads = std::atoi(argv[i] + 10);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
