// Stop 56 probe (bench/results/attn-zen3.md): the AVX2 table's scores_f16t
// alone over one sequence's F16 key tiles at ctx 2,016 x 30 layers (23 MB),
// 3 query rows per kv head, one thread, as model/attention.cc calls it
// (mode 0: `ahead` = the next tile; 1: none; 2 and 3: software prefetches
// into L2 1 or 2 KiB ahead, 3 on top of `ahead`). Second argument 1: a
// 512 MiB read before each run. Built as s56_vpass.cc.
#include <immintrin.h>
#include <sys/mman.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "kernels/isa.h"
#include "kernels/kernel_table.h"
using namespace weft;
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
int main(int argc, char** argv) {
  const auto& kt = kernels::Kernels();
  const int mode = atoi(argv[1]);  // 0 ahead=next tile (attention), 1 none, 2 none + sw T1 1KB ahead, 3 ahead + sw T1 2KB
  const bool cold = atoi(argv[2]);
  const int layers = 30, tiles = 126, heads = 3;
  const size_t tile_halves = 192 * 16;
  const size_t n = size_t(layers) * tiles * tile_halves;
  uint16_t* k = (uint16_t*)aligned_alloc(2 << 20, (n * 2 + (2 << 20)) & ~size_t((2 << 20) - 1));
  madvise(k, n * 2, MADV_HUGEPAGE);
  for (size_t i = 0; i < n; ++i) k[i] = 0x3c00 ^ (i & 0x3ff);
  std::vector<char> ev(cold ? 512 << 20 : 0, 1);
  alignas(64) static float q[3 * 64]; for (float& x : q) x = 0.01f;
  alignas(64) static float out[3 * 3 * 256];
  std::vector<double> ts; long sink = 0;
  for (int it = 0; it < 21; ++it) {
    for (size_t i = 0; i < ev.size(); i += 64) sink += ev[i];
    double t0 = now();
    for (int l = 0; l < layers; ++l) {
      for (int t = 0; t < tiles; ++t) {
        const uint16_t* tile = k + (size_t(l) * tiles + t) * tile_halves;
        const uint16_t* next = t + 1 < tiles ? tile + tile_halves : nullptr;
        for (int h = 0; h < heads; ++h) {
          const uint16_t* a = mode == 0 || mode == 3 ? (next ? next + h * 1024 : nullptr) : nullptr;
          if (mode == 2 || mode == 3) {
            const char* p = (const char*)(tile + h * 1024) + (mode == 2 ? 1024 : 2048);
            for (int o = 0; o < 2048; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
          }
          kt.scores_f16t(q, 64, 3, tile + h * 1024, 16, 16, 64, 0.125f, out + h * 3 * 256 + (t % 16) * 16, 256, a);
        }
      }
    }
    ts.push_back(now() - t0);
  }
  std::sort(ts.begin(), ts.end());
  printf("mode %d cold %d: median %.3f ms = %.1f ns per tile-head (%.1f GB/s)\n", mode, (int)cold, ts[10] * 1e3, ts[10] * 1e9 / (layers * tiles * heads), n * 2 / ts[10] / 1e9);
  return sink == 42;
}
