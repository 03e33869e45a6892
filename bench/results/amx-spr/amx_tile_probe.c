// AMX tile-path probe (stop 49): the per-block steps of the Q8_0 panel kernel
// (amx_panels.cc PairTile) in isolation, all data in L1: codes (load, xor, store
// into a ring), dots (tilezero, A and B tileloadd, TDPBSUD, tilestored), float
// steps (16 rows of cvt, mul, fma). Variant v = bit set of the three.
// Build: gcc -O3 -march=sapphirerapids -mamx-tile -mamx-int8 amx_tile_probe.c
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct { uint8_t palette, start; uint8_t r[14]; uint16_t colsb[16]; uint8_t rows[16]; } __attribute__((packed)) Cfg;
static int8_t A[64][512] __attribute__((aligned(64)));
static uint8_t W[64][2][272] __attribute__((aligned(64)));   // weights: 2 groups per block
static uint8_t U[8][512] __attribute__((aligned(64)));
static int32_t S[8][256] __attribute__((aligned(64)));
static float DX[64][16] __attribute__((aligned(64)));
__attribute__((noinline)) void run(long N, __m512* out, int v){
  __m512 acc[16];
  _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_setzero_ps();
  const __m256i flip=_mm256_set1_epi8((char)0x80);
  for(long b=0;b<N;b++){
    int j=b&63;
    // codes for b+4
    if (v & 1) { int jc=(b+4)&63; uint8_t* u=U[(b+4)&7];
      _Pragma("GCC unroll 8") for(int r=0;r<8;r++){
        _mm256_store_si256((__m256i*)(u+64*r), _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(W[jc][0]+16+32*r)),flip));
        _mm256_store_si256((__m256i*)(u+64*r+32), _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(W[jc][1]+16+32*r)),flip)); } }
    // dots for b+2
    if (v & 2) { long bd=b+2; int jd=bd&63;
      if (bd&1) { _tile_zero(5); _tile_loadd(1,A[jd],32); _tile_loadd(3,U[bd&7],64); _tile_dpbsud(5,1,3); _tile_stored(5,S[bd&7],64); }
      else { _tile_zero(4); _tile_loadd(0,A[jd],32); _tile_loadd(2,U[bd&7],64); _tile_dpbsud(4,0,2); _tile_stored(4,S[bd&7],64); } }
    if (v & 4) {
      const __m512 dw=_mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)W[j][0])), _mm_loadu_si128((const __m128i*)W[j][1]),1));
      const int32_t* sb=S[b&7];
      _Pragma("GCC unroll 16") for(int m=0;m<16;m++){
        const __m512 s=_mm512_cvtepi32_ps(_mm512_load_si512(sb+16*m));
        acc[m]=_mm512_fmadd_ps(s,_mm512_mul_ps(dw,_mm512_set1_ps(DX[j][m])),acc[m]);
      } }
  }
  _Pragma("GCC unroll 16") for(int m=0;m<16;m++) out[m]=acc[m];
}
int main(){
  syscall(SYS_arch_prctl, 0x1023, 18);
  Cfg c; memset(&c,0,sizeof c); c.palette=1;
  for(int t=0;t<2;t++){ c.colsb[t]=32; c.rows[t]=16; }
  for(int t=2;t<4;t++){ c.colsb[t]=64; c.rows[t]=8; }
  for(int t=4;t<6;t++){ c.colsb[t]=64; c.rows[t]=16; }
  _tile_loadconfig(&c);
  memset(A,1,sizeof A); memset(W,1,sizeof W);
  long N=20000000; __m512 out[16];
  for(int v=1;v<8;v++){
  double t0=now(); run(N,out,v); double t=now()-t0;
  float o[16]; _mm512_storeu_ps(o,out[3]);
  printf("v%d (%s%s%s) %.2f ns/block (%.1f cycles @3.4GHz) %g\n", v, v&1?"codes ":"", v&2?"dots ":"", v&4?"float":"", t/N*1e9, t/N*3.4e9, o[0]);}
}
