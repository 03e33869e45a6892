// One core streaming 768 MiB of f16 rows, each 16 elements converted to
// float and fed to WORK independent FMAs (12 accumulators; WORK is fixed
// at compile time so the loop holds only the loads, conversions and
// FMAs), with software prefetch NEAR bytes ahead into L1 (T0) and FAR
// bytes ahead into L2 (T2), issued BURST 256-byte steps' worth at a time
// (1: evenly, 4 lines per step; 24: attention's one-head-share bursts).
// How much of a core's read rate survives arithmetic like attention's
// (bench/results/attn-spr.md, stops 47 and 48). Decode attention on the
// 134M shape does about 6 FMAs' worth of port time per 16 elements.
//
//   gcc -O2 -march=sapphirerapids -DWORK=6 -o stream_probe stream_probe.c
//   ./stream_probe NEAR FAR BURST     (e.g. 512 4096 1; 1024 0 1 with
//                                      -DWORK=0 is a plain read)
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef WORK
#define WORK 6
#endif

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s NEAR FAR BURST\n", argv[0]);
    return 2;
  }
  const size_t n = (size_t)768 << 20;
  const int near = atoi(argv[1]), far = atoi(argv[2]), burst = atoi(argv[3]);
  if (burst < 1) return 2;
  char* p = aligned_alloc(2 << 20, n + (2 << 20));
  memset(p, 1, n + (2 << 20));
  double best = 0;
  float sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    __m512 a[12];
    for (int k = 0; k < 12; ++k) a[k] = _mm512_setzero_ps();
    const __m512 c = _mm512_set1_ps(0.5f);
    const double t0 = Now();
    for (size_t i = 0; i < n; i += 256) {
      if ((i / 256) % burst == 0) {
        for (int l = 0; l < 4 * burst; ++l) {
          if (near) _mm_prefetch(p + i + near + 64 * l, _MM_HINT_T0);
          if (far) _mm_prefetch(p + i + far + 64 * l, _MM_HINT_T2);
        }
      }
#pragma GCC unroll 8
      for (int l = 0; l < 8; ++l) {
        const __m512 v = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(p + i + 32 * l)));
#pragma GCC unroll 16
        for (int w = 0; w < WORK; ++w) a[(l * WORK + w) % 12] = _mm512_fmadd_ps(v, c, a[(l * WORK + w) % 12]);
        if (WORK == 0) a[l] = _mm512_add_ps(a[l], v);  // keep the conversion
      }
    }
    const double gbs = n / (Now() - t0) / 1e9;
    if (gbs > best) best = gbs;
    __m512 s = a[0];
    for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, a[k]);
    float o[16];
    _mm512_storeu_ps(o, s);
    sink += o[0];
  }
  printf("work %d near %d far %d burst %d: %.1f GB/s (%g)\n", WORK, near, far, burst, best, sink);
  return 0;
}
