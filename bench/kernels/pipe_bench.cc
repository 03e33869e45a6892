// BM_PipeMix: throughput of AVX2 instruction mixes, for reading which
// instructions share execution pipes (docs/ARCHITECTURE.md, kernels/). Each
// loop iteration issues 8 independent instructions of one kind, or 8 of
// each of two kinds; the counter "ops/ns" counts all of them. Two kinds
// that share pipes run a mix at about the rate of either alone; kinds on
// disjoint pipes add up; the last mix chains each add to a vpmaddubsw's
// result, as the kernels do. Registers only (one load or broadcast from L1 in
// the mix that names it), so the figures do not depend on memory.
//
// x86-64 with AVX2 and FMA only: elsewhere each case reports an error.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

namespace {

#if defined(__x86_64__)

// 8 instructions `op ymm8, ymm9, ymmN` writing N = 0..7 (no dependences).
#define WEFT_OPS_LO(op)                                                \
  op " %%ymm8, %%ymm9, %%ymm0\n\t" op " %%ymm8, %%ymm9, %%ymm1\n\t" op \
     " %%ymm8, %%ymm9, %%ymm2\n\t" op " %%ymm8, %%ymm9, %%ymm3\n\t" op \
     " %%ymm8, %%ymm9, %%ymm4\n\t" op " %%ymm8, %%ymm9, %%ymm5\n\t" op \
     " %%ymm8, %%ymm9, %%ymm6\n\t" op " %%ymm8, %%ymm9, %%ymm7\n\t"
// The same writing ymm10..15 (two of them twice: still no true dependence
// for these write-only destinations).
#define WEFT_OPS_HI(op)                                                  \
  op " %%ymm8, %%ymm9, %%ymm10\n\t" op " %%ymm8, %%ymm9, %%ymm11\n\t" op \
     " %%ymm8, %%ymm9, %%ymm12\n\t" op " %%ymm8, %%ymm9, %%ymm13\n\t" op \
     " %%ymm8, %%ymm9, %%ymm14\n\t" op " %%ymm8, %%ymm9, %%ymm15\n\t" op \
     " %%ymm8, %%ymm9, %%ymm10\n\t" op " %%ymm8, %%ymm9, %%ymm11\n\t"
#define WEFT_BCAST_HI                                                \
  "vpbroadcastd (%0), %%ymm10\n\tvpbroadcastd 4(%0), %%ymm11\n\t"    \
  "vpbroadcastd 8(%0), %%ymm12\n\tvpbroadcastd 12(%0), %%ymm13\n\t"  \
  "vpbroadcastd 16(%0), %%ymm14\n\tvpbroadcastd 20(%0), %%ymm15\n\t" \
  "vpbroadcastd 24(%0), %%ymm10\n\tvpbroadcastd 28(%0), %%ymm11\n\t"
// Plain 32-byte loads from L1 into ymm10..15 (as WEFT_BCAST_HI): a load
// that needs no vector pipe, where vpbroadcastd takes one.
#define WEFT_LOAD_HI                                                 \
  "vmovdqu (%0), %%ymm10\n\tvmovdqu 4(%0), %%ymm11\n\t"              \
  "vmovdqu 8(%0), %%ymm12\n\tvmovdqu 12(%0), %%ymm13\n\t"            \
  "vmovdqu 16(%0), %%ymm14\n\tvmovdqu 20(%0), %%ymm15\n\t"           \
  "vmovdqu 24(%0), %%ymm10\n\tvmovdqu 28(%0), %%ymm11\n\t"
// vpmaddubsw into ymm0..7 (write-only, as WEFT_OPS_LO) each followed by an
// add of its result into one of the accumulators ymm10..15, as the tiles
// use them (each add waits for its vpmaddubsw and for the previous add to
// the same accumulator).
#define WEFT_MADD_ACC(add)                                         \
  "vpmaddubsw %%ymm8, %%ymm9, %%ymm0\n\t" add " %%ymm0, %%ymm10, %%ymm10\n\t" \
  "vpmaddubsw %%ymm8, %%ymm9, %%ymm1\n\t" add " %%ymm1, %%ymm11, %%ymm11\n\t" \
  "vpmaddubsw %%ymm8, %%ymm9, %%ymm2\n\t" add " %%ymm2, %%ymm12, %%ymm12\n\t" \
  "vpmaddubsw %%ymm8, %%ymm9, %%ymm3\n\t" add " %%ymm3, %%ymm13, %%ymm13\n\t" \
  "vpmaddubsw %%ymm8, %%ymm9, %%ymm4\n\t" add " %%ymm4, %%ymm14, %%ymm14\n\t" \
  "vpmaddubsw %%ymm8, %%ymm9, %%ymm5\n\t" add " %%ymm5, %%ymm15, %%ymm15\n\t" \
  "vpmaddubsw %%ymm8, %%ymm9, %%ymm6\n\t" add " %%ymm6, %%ymm10, %%ymm10\n\t" \
  "vpmaddubsw %%ymm8, %%ymm9, %%ymm7\n\t" add " %%ymm7, %%ymm11, %%ymm11\n\t"
#define WEFT_CLOBBERS                                                      \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm10", \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory"

struct Mix {
  const char* name;
  int ops;  // instructions per iteration
  void (*run)(const int32_t* mem, int64_t iters);
};

#define WEFT_MIX(fn, text)                                        \
  __attribute__((target("avx2,fma"))) void fn(const int32_t* mem, \
                                              int64_t iters) {    \
    for (int64_t i = 0; i < iters; ++i) {                         \
      asm volatile(text ::"r"(mem) : WEFT_CLOBBERS);              \
    }                                                             \
  }

// vfmadd231ps accumulates: 8 independent accumulators (ymm0..7).
WEFT_MIX(Maddubs, WEFT_OPS_LO("vpmaddubsw"))
WEFT_MIX(Maddwd, WEFT_OPS_LO("vpmaddwd"))
WEFT_MIX(Fma, WEFT_OPS_LO("vfmadd231ps"))
WEFT_MIX(Paddw, WEFT_OPS_LO("vpaddw"))
WEFT_MIX(MaddubsMaddwd, WEFT_OPS_LO("vpmaddubsw") WEFT_OPS_HI("vpmaddwd"))
WEFT_MIX(FmaMaddubs, WEFT_OPS_LO("vfmadd231ps") WEFT_OPS_HI("vpmaddubsw"))
WEFT_MIX(MaddubsSignb, WEFT_OPS_LO("vpmaddubsw") WEFT_OPS_HI("vpsignb"))
WEFT_MIX(MaddubsMulps, WEFT_OPS_LO("vpmaddubsw") WEFT_OPS_HI("vmulps"))
WEFT_MIX(MaddubsPaddw, WEFT_OPS_LO("vpmaddubsw") WEFT_OPS_HI("vpaddw"))
WEFT_MIX(MaddubsBcast, WEFT_OPS_LO("vpmaddubsw") WEFT_BCAST_HI)
WEFT_MIX(MaddubsLoad, WEFT_OPS_LO("vpmaddubsw") WEFT_LOAD_HI)
WEFT_MIX(MaddubsAcc, WEFT_MADD_ACC("vpaddw"))

constexpr Mix kMixes[] = {
    {"vpmaddubsw", 8, Maddubs},
    {"vpmaddwd", 8, Maddwd},
    {"vfmadd231ps", 8, Fma},
    {"vpaddw", 8, Paddw},
    {"vpmaddubsw+vpmaddwd", 16, MaddubsMaddwd},
    {"vfmadd231ps+vpmaddubsw", 16, FmaMaddubs},
    {"vpmaddubsw+vpsignb", 16, MaddubsSignb},
    {"vpmaddubsw+vmulps", 16, MaddubsMulps},
    {"vpmaddubsw+vpaddw", 16, MaddubsPaddw},
    {"vpmaddubsw+vpbroadcastd(mem)", 16, MaddubsBcast},
    {"vpmaddubsw+vmovdqu(mem)", 16, MaddubsLoad},
    {"vpmaddubsw+vpaddw(accumulating)", 16, MaddubsAcc},
};
constexpr int kNumMixes = sizeof(kMixes) / sizeof(kMixes[0]);

void BM_PipeMix(benchmark::State& state) {
  const Mix& mix = kMixes[state.range(0)];
  state.SetLabel(mix.name);
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("needs AVX2 and FMA");
    return;
  }
  alignas(64) static const int32_t mem[16] = {1, 2, 3, 4, 5, 6, 7, 8};
  constexpr int64_t kIters = 1 << 20;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) mix.run(mem, kIters);
  const double ns = std::chrono::duration<double, std::nano>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  state.counters["ops/ns"] = static_cast<double>(mix.ops) * kIters *
                             static_cast<double>(state.iterations()) / ns;
}
BENCHMARK(BM_PipeMix)
    ->DenseRange(0, kNumMixes - 1)
    ->Unit(benchmark::kMillisecond);

#else

void BM_PipeMix(benchmark::State& state) { state.SkipWithError("x86-64 only"); }
BENCHMARK(BM_PipeMix)->Arg(0);

#endif

}  // namespace
