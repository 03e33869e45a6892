// Stop 59 probe (bench/results/attn-zen3.md): one sequence's decode
// attention at ctx 2,016 with nothing but the AVX2 table's kernels, called
// as model/attention.cc calls them: LAYERS layers of F16 key and value
// tiles (16 slots, 3 kv heads of 64, head-major), 3 query rows per kv head,
// 256-position slices, each thread a fixed half of every layer's slices
// and a spin barrier per layer.
//   argv: mode threads cold   (cold 1: a 512 MiB read before each run)
//   mode 0: the K and V bytes read, no arithmetic; 1: the key tiles'
//   scores_f16t; 2: + wsum_f16 over the value tiles; 3: + exp_sum per row
//   (the whole of attention's arithmetic); 4, 5: as 2, 3 with WsumTile3, a
//   value kernel for contiguous [16][64] tiles (2 column halves, the 3
//   alphas broadcast first, 12 accumulators).
//   POOL=1: the slices through kernels::ThreadPool::ParallelForRanges (as
//   attention does) instead of the spin barrier; with it, STATIC=1: one
//   ParallelFor task per thread of fixed halves instead; SPIN=N: the idle
//   workers' spin count (default 20,000, ~0.6 ms here); WAKE=1: two ~100 us
//   tasks before each timed run, so the worker is up (as in a step).
//   build (one command, from the repository root, after a release build):
//   g++ -DLAYERS=30 -O2 -mavx2 -mfma -mf16c -std=c++20 -I src s59_bare.cc
//     build/release/src/kernels/libweft_kernels.a
//     build/release/src/tensor/libweft_tensor.a
//     build/release/src/util/libweft_util.a -pthread -o /tmp/bare
//   /tmp/bare 3 2 1; POOL=1 /tmp/bare 3 2 1    (-DLAYERS=2: from L3)
#include <immintrin.h>
#include <sys/mman.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
using namespace weft;
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
constexpr int L = LAYERS, T = 126, H = 3, W = 16, HD = 64, S = 256, TPS = S / W;
constexpr size_t TILE = 192 * 16;  // halves per tile (all heads)
uint16_t *K, *V;
int mode;
std::atomic<int> bar{0};
std::atomic<long> gen{0};
void Barrier(int n, long& my) {
  ++my;
  if (bar.fetch_add(1) + 1 == n * my) {}
  while (bar.load(std::memory_order_acquire) < n * my) _mm_pause();
}

[[gnu::noinline]] void WsumTile3(const uint16_t* t, const uint16_t* ahead, int np, const float* alpha, long as, float* y, long ys) {
  for (int half = 0; half < 2; ++half) {
    const int c0 = half * 32;
    float* y0 = y + c0; float* y1 = y + ys + c0; float* y2 = y + 2 * ys + c0;
#define LD(r, v) __m256 R##r##v = _mm256_loadu_ps(y##r + 8 * v)
    LD(0,0); LD(0,1); LD(0,2); LD(0,3); LD(1,0); LD(1,1); LD(1,2); LD(1,3); LD(2,0); LD(2,1); LD(2,2); LD(2,3);
    const uint16_t* x = t + c0;
    const uint16_t* ah = ahead ? ahead + c0 : nullptr;
    for (int p = 0; p < np; ++p, x += 64) {
      if (ah) { _mm_prefetch((const char*)ah, _MM_HINT_T1); ah += 64; }
      const __m256 a0 = _mm256_broadcast_ss(alpha + p), a1 = _mm256_broadcast_ss(alpha + as + p), a2 = _mm256_broadcast_ss(alpha + 2 * as + p);
#define ST(v) { const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(x + 8 * v))); \
      R0##v = _mm256_fmadd_ps(a0, xv, R0##v); R1##v = _mm256_fmadd_ps(a1, xv, R1##v); R2##v = _mm256_fmadd_ps(a2, xv, R2##v); }
      ST(0) ST(1) ST(2) ST(3)
    }
#define SV(r, v) _mm256_storeu_ps(y##r + 8 * v, R##r##v)
    SV(0,0); SV(0,1); SV(0,2); SV(0,3); SV(1,0); SV(1,1); SV(1,2); SV(1,3); SV(2,0); SV(2,1); SV(2,2); SV(2,3);
  }
}
float sinkf;
void Slice(int l, int s, float* sc, float* y) {
  const auto& kt = kernels::Kernels();
  alignas(64) static thread_local float q[3 * 64];
  for (float& x : q) x = 0.01f;
  const uint16_t* kb = K + size_t(l) * T * TILE;
  const uint16_t* vb = V + size_t(l) * T * TILE;
  int t0 = s * TPS, t1 = std::min(T, t0 + TPS);
  if (mode == 0) {
    __m256 acc = _mm256_setzero_ps();
    const float* a = (const float*)(kb + t0 * TILE); const float* e = (const float*)(kb + t1 * TILE);
    for (; a < e; a += 8) acc = _mm256_add_ps(acc, _mm256_load_ps(a));
    a = (const float*)(vb + t0 * TILE); e = (const float*)(vb + t1 * TILE);
    for (; a < e; a += 8) acc = _mm256_add_ps(acc, _mm256_load_ps(a));
    sinkf += acc[0];
    return;
  }
  for (int t = t0; t < t1; ++t) {
    const uint16_t* tile = kb + t * TILE;
    const uint16_t* next = t + 1 < t1 ? tile + TILE : vb + t0 * TILE;
    for (int h = 0; h < H; ++h)
      kt.scores_f16t(q, 64, 3, tile + h * 1024, W, W, HD, 0.125f, sc + h * 3 * S + (t - t0) * W, S, next + h * 1024);
  }
  const int n = (t1 - t0) * W;
  if (mode == 3 || mode == 5) for (int r = 0; r < 9; ++r) { float m; sinkf += kt.exp_sum(sc + r * S, n, &m); }
  if (mode == 4 || mode == 5) {
    for (int t = t0; t < t1; ++t) {
      const uint16_t* tile = vb + t * TILE;
      const uint16_t* next = t + 1 < t1 ? tile + TILE : (t1 < T ? kb + t1 * TILE : nullptr);
      for (int h = 0; h < H; ++h)
        WsumTile3(tile + h * 1024, next ? next + h * 1024 : nullptr, 16, sc + h * 3 * S + (t - t0) * W, S, y + h * 3 * 64, 64);
    }
  } else if (mode >= 2) {
    const void* rows[16]; const void* ahead[16];
    for (int t = t0; t < t1; ++t) {
      const uint16_t* tile = vb + t * TILE;
      const uint16_t* next = t + 1 < t1 ? tile + TILE : (t1 < T ? kb + t1 * TILE : nullptr);
      for (int h = 0; h < H; ++h) {
        for (int j = 0; j < 16; ++j) rows[j] = tile + h * 1024 + j * 64;
        if (next) for (int j = 0; j < 16; ++j) ahead[j] = next + h * 1024 + j * 64;
        kt.wsum_f16(rows, next ? ahead : nullptr, 16, sc + h * 3 * S + (t - t0) * W, S, 3, HD, y + h * 3 * 64, 64);
      }
    }
  }
}
int main(int argc, char** argv) {
  mode = atoi(argv[1]); const int nt = atoi(argv[2]); const bool cold = atoi(argv[3]);
  const size_t n = size_t(L) * T * TILE;
  auto alloc = [&]() { size_t b = (n * 2 + (2 << 20)) & ~size_t((2 << 20) - 1); auto* p = (uint16_t*)aligned_alloc(2 << 20, b); madvise(p, b, MADV_HUGEPAGE); for (size_t i = 0; i < n; ++i) p[i] = 0x3c00 ^ (i & 0x3ff); return p; };
  K = alloc(); V = alloc();
  std::vector<char> ev(cold ? 512 << 20 : 0, 1);
  const int nsl = (T + TPS - 1) / TPS;  // 8
  std::atomic<int> go{0}; std::atomic<int> done{0};
  const int runs = 31;
  std::vector<double> ts;
  auto work = [&](int tid) {
    alignas(64) static thread_local float sc[9 * S]; alignas(64) static thread_local float y[9 * 64];
    long my = 0;
    for (int it = 0; it < runs; ++it) {
      while (go.load(std::memory_order_acquire) <= it) _mm_pause();
      for (int l = 0; l < L; ++l) {
        for (int s = tid * nsl / nt; s < (tid + 1) * nsl / nt; ++s) Slice(l, s, sc, y);
        Barrier(nt, my);
      }
      done.fetch_add(1);
    }
  };
  if (getenv("POOL")) {
    kernels::ThreadPool pool(kernels::ThreadPoolOptions{.num_threads = nt, .spin_iterations = getenv("SPIN") ? atoi(getenv("SPIN")) : 20000});
    struct alignas(64) Buf { float sc[9 * S]; float y[9 * 64]; };
    std::vector<Buf> bufs(nt);
    long sink2 = 0;
    for (int it = 0; it < runs; ++it) {
      for (size_t i = 0; i < ev.size(); i += 64) sink2 += ev[i];
      // Wake the worker: two tasks of ~100 us each, so that it claims one
      // (a task-less ParallelFor returns before a sleeping worker is up).
      if (getenv("WAKE")) {
        pool.ParallelFor(2, [&](int64_t, int) {
          const double e = now() + 100e-6;
          while (now() < e) sink2 += 1;
        });
      }
      double t0 = now();
      for (int l = 0; l < L; ++l)
        if (getenv("STATIC")) {
          pool.ParallelFor(nt, [&](int64_t part, int thread) {
            for (int64_t s = part * nsl / nt; s < (part + 1) * nsl / nt; ++s) Slice(l, int(s), bufs[thread].sc, bufs[thread].y);
          });
        } else {
          pool.ParallelForRanges(nsl, [&](int64_t s, int thread) { Slice(l, int(s), bufs[thread].sc, bufs[thread].y); });
        }
      ts.push_back(now() - t0);
    }
    std::sort(ts.begin(), ts.end());
    printf("POOL mode %d threads %d cold %d: median %.3f ms min %.3f\n", mode, nt, (int)cold, ts[runs / 2] * 1e3, ts[0] * 1e3);
    return sink2 == 42;
  }
  std::vector<std::thread> th;
  for (int t = 1; t < nt; ++t) th.emplace_back(work, t);
  long sink = 0;
  // main thread = tid 0
  alignas(64) static float sc[9 * S]; alignas(64) static float y[9 * 64];
  long my = 0;
  for (int it = 0; it < runs; ++it) {
    for (size_t i = 0; i < ev.size(); i += 64) sink += ev[i];
    double t0 = now();
    go.store(it + 1, std::memory_order_release);
    for (int l = 0; l < L; ++l) {
      for (int s = 0; s < nsl / nt; ++s) Slice(l, s, sc, y);
      Barrier(nt, my);
    }
    ts.push_back(now() - t0);
  }
  for (auto& t : th) t.join();
  std::sort(ts.begin(), ts.end());
  printf("mode %d threads %d cold %d: median %.3f ms (%.1f GB/s) min %.3f\n", mode, nt, (int)cold, ts[runs / 2] * 1e3, n * 4 / ts[runs / 2] / 1e9, ts[0] * 1e3);
  return (sink + (long)sinkf) == 42;
}
