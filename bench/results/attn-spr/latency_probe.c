// Memory latency of one core: a pointer chase through MIB MiB (huge
// pages asked for) in a random cyclic order of 64-byte lines, so every
// step is a dependent miss the prefetchers cannot predict. With the fill
// buffers a core has (16 on Golden Cove), it bounds what software
// prefetches into L1 can stream: 16 x 64 bytes / latency
// (bench/results/attn-spr.md, stop 50).
//
//   gcc -O2 -o latency_probe latency_probe.c && ./latency_probe 256
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const size_t bytes = (size_t)(argc > 1 ? atol(argv[1]) : 256) << 20;
  const size_t n = bytes / 64;
  char* buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return 1;
  madvise(buf, bytes, MADV_HUGEPAGE);
  size_t* order = malloc(n * sizeof(size_t));
  for (size_t i = 0; i < n; ++i) order[i] = i;
  uint64_t s = 88172645463325252ull;  // xorshift64
  for (size_t i = n - 1; i > 0; --i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const size_t j = s % (i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (size_t i = 0; i < n; ++i) *(void**)(buf + order[i] * 64) = buf + order[(i + 1) % n] * 64;
  void** p = (void**)(buf + order[0] * 64);
  const size_t steps = 20000000;
  const double t0 = Now();
  for (size_t i = 0; i < steps; ++i) p = (void**)*p;
  const double ns = (Now() - t0) / steps * 1e9;
  printf("%zu MiB: %.1f ns per dependent miss (%p)\n", bytes >> 20, ns, (void*)p);
  return 0;
}
