// Stop 58 probe (bench/results/attn-zen3.md): the AVX2 tile score kernel
// (A, TileRowsPair<3> as in avx2_attention.cc) against half-to-float by
// integer ops with q scaled by 2^112 (B: unpack with zero, C: even / odd
// lanes, one mask), in L1, 3 rows x 64 elements x 16 keys. Same bits;
// B and C slower (spills; shifts share the FMA pipes).
//   g++ -O2 -std=c++20 -mavx2 -mfma -mf16c s58_intcvt.cc -o /tmp/intcvt
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <cmath>
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
static inline __m256 Load8(const uint16_t* p){return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));}
// current: TileRowsPair<R> without ahead
template<int R> __attribute__((noinline))
void A(const float* q, int64_t qs, const uint16_t* kt, int64_t n, float scale, float* out, int64_t os){
  constexpr int64_t w=16; __m256 first[R][2];
  for(int pass=0;pass<2;++pass){ __m256 acc[2][R][2];
    _Pragma("GCC unroll 2") for(int c=0;c<2;++c) _Pragma("GCC unroll 4") for(int r=0;r<R;++r) acc[c][r][0]=acc[c][r][1]=_mm256_setzero_ps();
    auto step=[&](int64_t e, __m256 (*a)[2]){ const uint16_t* row=kt+e*w; const __m256 k0=Load8(row),k1=Load8(row+8);
      _Pragma("GCC unroll 4") for(int r=0;r<R;++r){const __m256 qv=_mm256_set1_ps(q[r*qs+e]); a[r][0]=_mm256_fmadd_ps(qv,k0,a[r][0]); a[r][1]=_mm256_fmadd_ps(qv,k1,a[r][1]);}};
    int64_t e=2*pass; for(;e+1<n;e+=4){step(e,acc[0]);step(e+1,acc[1]);} if(e<n) step(e,acc[0]);
    _Pragma("GCC unroll 4") for(int r=0;r<R;++r) for(int h=0;h<2;++h){ __m256 s=_mm256_add_ps(acc[0][r][h],acc[1][r][h]);
      if(pass==0) first[r][h]=s; else _mm256_storeu_ps(out+r*os+8*h,_mm256_mul_ps(_mm256_add_ps(first[r][h],s),_mm256_set1_ps(scale)));}}
}
// integer conversion: lanes lo=[p0-3,p8-11], hi=[p4-7,p12-15]; q pre-scaled by 2^112
template<int R> __attribute__((noinline))
void B(const float* q, int64_t qs, const uint16_t* kt, int64_t n, float scale, float* out, int64_t os){
  constexpr int64_t w=16; __m256 first[R][2];
  const __m256i zero=_mm256_setzero_si256(); const __m256i mask=_mm256_set1_epi32((int)0x8fffffffu);
  for(int pass=0;pass<2;++pass){ __m256 acc[2][R][2];
    _Pragma("GCC unroll 2") for(int c=0;c<2;++c) _Pragma("GCC unroll 4") for(int r=0;r<R;++r) acc[c][r][0]=acc[c][r][1]=_mm256_setzero_ps();
    auto step=[&](int64_t e, __m256 (*a)[2]){ const __m256i v=_mm256_loadu_si256((const __m256i*)(kt+e*w));
      const __m256 k0=_mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(_mm256_unpacklo_epi16(zero,v),3),mask));
      const __m256 k1=_mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(_mm256_unpackhi_epi16(zero,v),3),mask));
      _Pragma("GCC unroll 4") for(int r=0;r<R;++r){const __m256 qv=_mm256_set1_ps(q[r*qs+e]); a[r][0]=_mm256_fmadd_ps(qv,k0,a[r][0]); a[r][1]=_mm256_fmadd_ps(qv,k1,a[r][1]);}};
    int64_t e=2*pass; for(;e+1<n;e+=4){step(e,acc[0]);step(e+1,acc[1]);} if(e<n) step(e,acc[0]);
    _Pragma("GCC unroll 4") for(int r=0;r<R;++r){ __m256 s0=_mm256_add_ps(acc[0][r][0],acc[1][r][0]), s1=_mm256_add_ps(acc[0][r][1],acc[1][r][1]);
      if(pass==0){first[r][0]=s0;first[r][1]=s1;} else {
        const __m256 vs=_mm256_set1_ps(scale);
        __m256 lo=_mm256_mul_ps(_mm256_add_ps(first[r][0],s0),vs), hi=_mm256_mul_ps(_mm256_add_ps(first[r][1],s1),vs);
        _mm256_storeu_ps(out+r*os,_mm256_permute2f128_ps(lo,hi,0x20)); _mm256_storeu_ps(out+r*os+8,_mm256_permute2f128_ps(lo,hi,0x31));}}}
}

template<int R> __attribute__((noinline))
void C(const float* q, int64_t qs, const uint16_t* kt, int64_t n, float scale, float* out, int64_t os){
  constexpr int64_t w=16; __m256 first[R][2];
  const __m256i mask=_mm256_set1_epi32((int)0x8fffe000u);
  for(int pass=0;pass<2;++pass){ __m256 acc[2][R][2];
    _Pragma("GCC unroll 2") for(int c=0;c<2;++c) _Pragma("GCC unroll 4") for(int r=0;r<R;++r) acc[c][r][0]=acc[c][r][1]=_mm256_setzero_ps();
    auto step=[&](int64_t e, __m256 (*a)[2]){ const __m256i v=_mm256_loadu_si256((const __m256i*)(kt+e*w));
      const __m256 k0=_mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(_mm256_slli_epi32(v,16),3),mask));
      const __m256 k1=_mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(v,3),mask));
      _Pragma("GCC unroll 4") for(int r=0;r<R;++r){const __m256 qv=_mm256_set1_ps(q[r*qs+e]); a[r][0]=_mm256_fmadd_ps(qv,k0,a[r][0]); a[r][1]=_mm256_fmadd_ps(qv,k1,a[r][1]);}};
    int64_t e=2*pass; for(;e+1<n;e+=4){step(e,acc[0]);step(e+1,acc[1]);} if(e<n) step(e,acc[0]);
    _Pragma("GCC unroll 4") for(int r=0;r<R;++r){ __m256 s0=_mm256_add_ps(acc[0][r][0],acc[1][r][0]), s1=_mm256_add_ps(acc[0][r][1],acc[1][r][1]);
      if(pass==0){first[r][0]=s0;first[r][1]=s1;} else {
        const __m256 vs=_mm256_set1_ps(scale);
        __m256 ev=_mm256_mul_ps(_mm256_add_ps(first[r][0],s0),vs), od=_mm256_mul_ps(_mm256_add_ps(first[r][1],s1),vs);
        __m256 lo=_mm256_unpacklo_ps(ev,od), hi=_mm256_unpackhi_ps(ev,od);
        _mm256_storeu_ps(out+r*os,_mm256_permute2f128_ps(lo,hi,0x20)); _mm256_storeu_ps(out+r*os+8,_mm256_permute2f128_ps(lo,hi,0x31));}}}
}
int main(int argc,char**argv){
  const int R=3, n=64; alignas(64) static uint16_t kt[16*64*8]; alignas(64) float q[3*64], qq[3*64]; alignas(64) float oa[3*16], ob[3*16];
  srand(1); for(auto&x:kt){ float f=(rand()/(float)RAND_MAX-0.5f)*4; if(rand()%50==0) f*=1e-6f; x=_cvtss_sh(f,0);} 
  for(int i=0;i<3*64;++i){ q[i]=(rand()/(float)RAND_MAX-0.5f)*8; qq[i]=q[i]*0x1p112f; }
  int bad=0; for(int t=0;t<8;++t){ A<3>(q,64,kt+t*1024,n,0.125f,oa,16); B<3>(qq,64,kt+t*1024,n,0.125f,ob,16); bad+=memcmp(oa,ob,sizeof oa)!=0; C<3>(qq,64,kt+t*1024,n,0.125f,ob,16); bad+=100*(memcmp(oa,ob,sizeof oa)!=0); }
  printf("mismatch tiles %d\n",bad);
  const long iters=20000000/ (argc>1?1:1);
  for(int round=0;round<3;++round){
  double t0=now(); for(long i=0;i<iters;++i) A<3>(q,64,kt+(i&7)*1024,n,0.125f,oa,16); double t1=now();
  for(long i=0;i<iters;++i) B<3>(qq,64,kt+(i&7)*1024,n,0.125f,ob,16); double t2=now();
  for(long i=0;i<iters;++i) C<3>(qq,64,kt+(i&7)*1024,n,0.125f,ob,16); double t3=now();
  printf("A %.1f ns  B %.1f ns  C %.1f ns\n",(t1-t0)/iters*1e9,(t2-t1)/iters*1e9,(t3-t2)/iters*1e9);}
}
