// One core streaming 768 MiB of f16 rows, each 16 elements converted to
// float and fed to WORK independent FMAs (8 accumulators; WORK is read at
// run time, so the loads and conversions stay even at 0), with software
// prefetch NEAR bytes ahead into L1 and FAR bytes ahead into L2 (0: none):
// how much of a core's read rate survives arithmetic like attention's
// (stop 47, attn-spr.md). Decode attention on the 134M shape does about 4
// FMAs' worth of port time per 16 elements.
//
//   gcc -O2 -march=sapphirerapids -o stream_probe stream_probe.c
//   ./stream_probe NEAR FAR WORK     (e.g. 1024 0 4; 0 0 0 is a plain read)
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s NEAR FAR WORK\n", argv[0]);
    return 2;
  }
  const size_t n = (size_t)768 << 20;
  char* p = aligned_alloc(2 << 20, n + 65536);
  memset(p, 1, n + 65536);
  const int near = atoi(argv[1]), far = atoi(argv[2]), work = atoi(argv[3]);
  for (int rep = 0; rep < 2; ++rep) {
    const double t0 = Now();
    __m512 a[8];
    for (int k = 0; k < 8; ++k) a[k] = _mm512_setzero_ps();
    const __m512 c = _mm512_set1_ps(0.5f);
    for (size_t i = 0; i < n; i += 256) {
      for (int l = 0; l < 4; ++l) {
        if (near) _mm_prefetch(p + i + near + 64 * l, _MM_HINT_T0);
        if (far) _mm_prefetch(p + i + far + 64 * l, _MM_HINT_T2);
      }
      int q = 0;
      for (int l = 0; l < 8; ++l) {
        const __m512 v = _mm512_cvtph_ps(_mm256_load_si256((const __m256i*)(p + i + 32 * l)));
        for (int w = 0; w < work; ++w, ++q) a[q & 7] = _mm512_fmadd_ps(v, c, a[q & 7]);
      }
    }
    const double t = Now() - t0;
    __m512 s = a[0];
    for (int k = 1; k < 8; ++k) s = _mm512_add_ps(s, a[k]);
    float o[16];
    _mm512_storeu_ps(o, s);
    printf("near %d far %d work %d: %.1f GB/s (%g)\n", near, far, work, n / t / 1e9, o[0]);
  }
  return 0;
}
