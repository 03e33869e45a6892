// Stop 56 probe (bench/results/attn-zen3.md): the AVX2 table's wsum_f16
// alone over one sequence's F16 values at ctx 2,016 x 30 layers (23 MB),
// 3 query rows per kv head, one thread, as model/attention.cc calls it
// (16 rows a call, `ahead` = the next block's rows), with the rows laid out
// as now (mode 0: [position][kv head][64]), without `ahead` (1), or
// head-major within each block of 16 (2: [kv head][16 positions][64]).
// Second argument 1: a 512 MiB read before each run (KV from memory).
//   g++ -O2 -mavx2 -mfma -mf16c -std=c++20 -I src s56_vpass.cc \
//     build/release/src/kernels/libweft_kernels.a \
//     build/release/src/tensor/libweft_tensor.a \
//     build/release/src/util/libweft_util.a -pthread -o /tmp/vpass
//   for c in 0 1; do for m in 0 1 2; do /tmp/vpass $m $c; done; done
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
  const int mode = atoi(argv[1]);  // 0 ahead = next block (attention); 1 none; 2 head-major block layout + ahead
  const bool cold = atoi(argv[2]);
  const int layers = 30, rows = 2016, heads = 3;
  const size_t row_halves = 192;
  const size_t n = size_t(layers) * rows * row_halves;
  uint16_t* v = (uint16_t*)aligned_alloc(2 << 20, (n * 2 + (2 << 20)) & ~size_t((2 << 20) - 1));
  madvise(v, n * 2, MADV_HUGEPAGE);
  for (size_t i = 0; i < n; ++i) v[i] = 0x3c00 ^ (i & 0x3ff);
  std::vector<char> ev(cold ? 512 << 20 : 0, 1);
  alignas(64) static float alpha[3 * 256]; for (float& x : alpha) x = 0.001f;
  alignas(64) static float y[3 * 3 * 66];
  std::vector<double> ts; long sink = 0;
  for (int it = 0; it < 21; ++it) {
    for (size_t i = 0; i < ev.size(); i += 64) sink += ev[i];
    double t0 = now();
    for (int l = 0; l < layers; ++l) {
      const uint16_t* base = v + size_t(l) * rows * row_halves;
      for (int b = 0; b < rows; b += 16) {
        const void* rp[16]; const void* ap[16];
        for (int h = 0; h < heads; ++h) {
          for (int p = 0; p < 16; ++p) {
            const int bn = b + 16 < rows ? b + 16 : b;
            if (mode == 2) {
              rp[p] = base + size_t(b) * row_halves + h * 16 * 64 + p * 64;
              ap[p] = base + size_t(bn) * row_halves + h * 16 * 64 + p * 64;
            } else {
              rp[p] = base + size_t(b + p) * row_halves + h * 64;
              ap[p] = base + size_t(bn + p) * row_halves + h * 64;
            }
          }
          kt.wsum_f16(rp, mode == 1 ? nullptr : ap, 16, alpha + (b % 256), 256, 3, 64, y + h * 3 * 66, 66);
        }
      }
    }
    ts.push_back(now() - t0);
  }
  std::sort(ts.begin(), ts.end());
  printf("mode %d cold %d: median %.3f ms = %.1f ns per block-head (%.1f GB/s)\n", mode, (int)cold, ts[10] * 1e3, ts[10] * 1e9 / (layers * rows / 16 * heads), n * 2 / ts[10] / 1e9);
  return sink == 42;
}
