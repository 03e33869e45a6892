// AMX tile-op cost probe (stop 49): v0 products only, v1 + tilestored, v2 + reading
// the stored sums back, v3 loads + store without the product, v4 product only.
// Build: gcc -O3 -march=sapphirerapids -mamx-tile -mamx-int8 amx_store_probe.c
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
typedef struct { uint8_t palette, start; uint8_t r[14]; uint16_t colsb[16]; uint8_t rows[16]; } __attribute__((packed)) Cfg;
int main(){
  syscall(SYS_arch_prctl, 0x1023, 18);
  Cfg c; memset(&c,0,sizeof c); c.palette=1;
  for(int t=0;t<2;t++){ c.colsb[t]=32; c.rows[t]=16; }
  for(int t=2;t<4;t++){ c.colsb[t]=64; c.rows[t]=8; }
  for(int t=4;t<6;t++){ c.colsb[t]=64; c.rows[t]=16; }
  _tile_loadconfig(&c);
  static int8_t A[8][512] __attribute__((aligned(64)));
  static uint8_t B[8][512] __attribute__((aligned(64)));
  static int32_t S[8][256] __attribute__((aligned(64)));
  static int32_t T[8][256] __attribute__((aligned(64)));
  memset(A,1,sizeof A); memset(B,1,sizeof B);
  long N=20000000;
  for(int v=0; v<8; v++){
    __m512 acc[16]; for(int i=0;i<16;i++) acc[i]=_mm512_setzero_ps();
    double t0=now();
    for(long b=0;b<N;b+=2){
      int i=b&7;
      if(v==0){
        _tile_zero(4); _tile_loadd(0,A[i],32); _tile_loadd(2,B[i],64); _tile_dpbsud(4,0,2);
        _tile_zero(5); _tile_loadd(1,A[i+1],32); _tile_loadd(3,B[i+1],64); _tile_dpbsud(5,1,3);
      } else if(v==1){
        _tile_zero(4); _tile_loadd(0,A[i],32); _tile_loadd(2,B[i],64); _tile_dpbsud(4,0,2); _tile_stored(4,S[i],64);
        _tile_zero(5); _tile_loadd(1,A[i+1],32); _tile_loadd(3,B[i+1],64); _tile_dpbsud(5,1,3); _tile_stored(5,S[i+1],64);
      } else if(v==2){
        _tile_zero(4); _tile_loadd(0,A[i],32); _tile_loadd(2,B[i],64); _tile_dpbsud(4,0,2); _tile_stored(4,S[i],64);
        _tile_zero(5); _tile_loadd(1,A[i+1],32); _tile_loadd(3,B[i+1],64); _tile_dpbsud(5,1,3); _tile_stored(5,S[i+1],64);
        int j=(i+4)&7;
        _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_add_ps(acc[m],_mm512_cvtepi32_ps(_mm512_load_si512(S[j]+16*m)));
        _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_add_ps(acc[m],_mm512_cvtepi32_ps(_mm512_load_si512(S[j+1]+16*m)));
      } else if(v==3){
        _tile_loadd(0,A[i],32); _tile_loadd(2,B[i],64); _tile_stored(4,S[i],64);
        _tile_loadd(1,A[i+1],32); _tile_loadd(3,B[i+1],64); _tile_stored(5,S[i+1],64);
      } else if(v==4){
        _tile_dpbsud(4,0,2); _tile_dpbsud(5,1,3);
      } else if(v==5){ // read back only
        int j=(i+4)&7;
        _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_add_ps(acc[m],_mm512_cvtepi32_ps(_mm512_load_si512(S[j]+16*m)));
        _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_add_ps(acc[m],_mm512_cvtepi32_ps(_mm512_load_si512(S[j+1]+16*m)));
      } else if(v==6){ // store to T, read S
        _tile_zero(4); _tile_loadd(0,A[i],32); _tile_loadd(2,B[i],64); _tile_dpbsud(4,0,2); _tile_stored(4,T[i],64);
        _tile_zero(5); _tile_loadd(1,A[i+1],32); _tile_loadd(3,B[i+1],64); _tile_dpbsud(5,1,3); _tile_stored(5,T[i+1],64);
        int j=(i+4)&7;
        _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_add_ps(acc[m],_mm512_cvtepi32_ps(_mm512_load_si512(S[j]+16*m)));
        _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_add_ps(acc[m],_mm512_cvtepi32_ps(_mm512_load_si512(S[j+1]+16*m)));
      } else { // products, no store; read S
        _tile_zero(4); _tile_loadd(0,A[i],32); _tile_loadd(2,B[i],64); _tile_dpbsud(4,0,2);
        _tile_zero(5); _tile_loadd(1,A[i+1],32); _tile_loadd(3,B[i+1],64); _tile_dpbsud(5,1,3);
        int j=(i+4)&7;
        _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_add_ps(acc[m],_mm512_cvtepi32_ps(_mm512_load_si512(S[j]+16*m)));
        _Pragma("GCC unroll 16") for(int m=0;m<16;m++) acc[m]=_mm512_add_ps(acc[m],_mm512_cvtepi32_ps(_mm512_load_si512(S[j+1]+16*m)));
      }
    }
    double t=now()-t0;
    float o[16]; _mm512_storeu_ps(o,acc[3]);
    printf("v%d: %.2f ns/block (%.1f cycles @3.4GHz) %g\n", v, t/N*1e9, t/N*3.4e9, o[0]);
  }
}
