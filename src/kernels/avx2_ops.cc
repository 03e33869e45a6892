// AVX2 elementwise kernels: RMSNorm, RoPE, exp_sum, SiLU, GELU, the f16 KV
// store and the bandwidth probe's reader (the dot / axpy kernels are in
// avx2_attention.cc).
//
// Compiled with -mavx2 -mfma -mf16c: reached only through the dispatch table.
#include <immintrin.h>

#include <math.h>

#include "kernels/avx2_internal.h"
#include "kernels/scalar_internal.h"
#include "kernels/simd_x86.h"
#include "tensor/blocks.h"
#include "tensor/half.h"

namespace weft::kernels::avx2 {
namespace {

using x86::ExpPs;
using x86::Fp16;
using x86::HsumPs;

void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    acc = _mm256_fmadd_ps(v, v, acc);
  }
  float ss = HsumPs(acc);
  for (; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
  const __m256 vs = _mm256_set1_ps(scale);
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
    if (w != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
    _mm256_storeu_ps(out + i, v);
  }
  for (; i < n; ++i) out[i] = x[i] * scale * (w != nullptr ? w[i] : 1.0f);
}

void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot, bool neox,
          const float* cs) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    int64_t i = 0;
    if (neox) {
      for (; i + 8 <= half; i += 8) {
        const __m256 t0 = _mm256_loadu_ps(cs + 2 * i), t1 = _mm256_loadu_ps(cs + 2 * i + 8);
        const __m256 c = _mm256_castpd_ps(_mm256_permute4x64_pd(
            _mm256_castps_pd(_mm256_shuffle_ps(t0, t1, 0x88)), 0xd8));
        const __m256 s = _mm256_castpd_ps(_mm256_permute4x64_pd(
            _mm256_castps_pd(_mm256_shuffle_ps(t0, t1, 0xdd)), 0xd8));
        const __m256 x0 = _mm256_loadu_ps(v + i), x1 = _mm256_loadu_ps(v + i + half);
        _mm256_storeu_ps(v + i, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, s)));
        _mm256_storeu_ps(v + i + half, _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
      }
    } else {
      for (; i + 4 <= half; i += 4) {
        const __m256 t = _mm256_loadu_ps(cs + 2 * i);
        const __m256 c = _mm256_moveldup_ps(t), s = _mm256_movehdup_ps(t);
        const __m256 xv = _mm256_loadu_ps(v + 2 * i);
        const __m256 sw = _mm256_permute_ps(xv, 0xb1);
        _mm256_storeu_ps(v + 2 * i, _mm256_fmaddsub_ps(xv, c, _mm256_mul_ps(sw, s)));
      }
    }
    RopePairs(v, cs, i, half, neox);
  }
}

float ExpSum(float* x, int64_t n, float* max) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  float m = x86::HmaxPs(vmax);
  for (; i < n; ++i) m = fmaxf(m, x[i]);
  *max = m;
  const __m256 vm = _mm256_set1_ps(m);
  __m256 vsum = _mm256_setzero_ps();
  i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = ExpPs(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    _mm256_storeu_ps(x + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = HsumPs(vsum);
  for (; i < n; ++i) {
    x[i] = expf(x[i] - m);
    sum += x[i];
  }
  return sum;
}

// x / (1 + e^(-k x)): SiLU for k = 1.
static inline __m256 Sigmoid(__m256 x, __m256 neg_k) {
  const __m256 e = ExpPs(_mm256_mul_ps(x, neg_k));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

void Silu(const float* x, const float* mul, float* y, int64_t n) {
  const __m256 neg1 = _mm256_set1_ps(-1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = Sigmoid(_mm256_loadu_ps(x + i), neg1);
    if (mul != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(mul + i));
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < n; ++i) {
    const float v = x[i] / (1.0f + expf(-x[i]));
    y[i] = mul != nullptr ? v * mul[i] : v;
  }
}

// gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)),
// u = sqrt(2/pi) (x + 0.044715 x^3).
void Gelu(const float* x, const float* mul, float* y, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const __m256 c0 = _mm256_set1_ps(-2.0f * kSqrt2OverPi);
  const __m256 c1 = _mm256_set1_ps(-2.0f * kSqrt2OverPi * 0.044715f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 arg = _mm256_mul_ps(v, _mm256_fmadd_ps(_mm256_mul_ps(v, v), c1, c0));
    __m256 g = _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), ExpPs(arg)));
    if (mul != nullptr) g = _mm256_mul_ps(g, _mm256_loadu_ps(mul + i));
    _mm256_storeu_ps(y + i, g);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    const float g =
        0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    y[i] = mul != nullptr ? g * mul[i] : g;
  }
}

void Q8_0ToF32(const void* blocks, int64_t n, float* y) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(blocks);
  for (int64_t i = 0; i < n; i += kQK8_0, ++b) {
    const __m256 d = _mm256_set1_ps(Fp16(b->d));
    for (int j = 0; j < kQK8_0; j += 8) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b->qs + j));
      _mm256_storeu_ps(y + i + j, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
    }
  }
}

void F32ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // vcvtps2ph keeps a NaN's payload; the scalar twin's NaN is 0x7e00.
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      for (int64_t j = i; j < i + 8; ++j) y[j] = Fp32ToFp16(x[j]);
    }
  }
  for (; i < n; ++i) y[i] = Fp32ToFp16(x[i]);
}

uint64_t ReadBytes(const void* p, size_t n) {
  const __m256i* v = static_cast<const __m256i*>(p);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 4 <= n / 32; i += 4) {
    a0 = _mm256_xor_si256(a0, _mm256_load_si256(v + i));
    a1 = _mm256_xor_si256(a1, _mm256_load_si256(v + i + 1));
    a2 = _mm256_xor_si256(a2, _mm256_load_si256(v + i + 2));
    a3 = _mm256_xor_si256(a3, _mm256_load_si256(v + i + 3));
  }
  for (; i < n / 32; ++i) a0 = _mm256_xor_si256(a0, _mm256_load_si256(v + i));
  const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
  return static_cast<uint64_t>(_mm256_extract_epi64(x, 0) ^ _mm256_extract_epi64(x, 1) ^
                               _mm256_extract_epi64(x, 2) ^ _mm256_extract_epi64(x, 3));
}

}  // namespace

void FillOps(KernelTable* t) {
  t->rms_norm = RmsNorm;
  t->rope = Rope;
  t->exp_sum = ExpSum;
  t->silu = Silu;
  t->gelu = Gelu;
  t->f32_to_f16 = F32ToF16;
  t->q8_0_to_f32 = Q8_0ToF32;
  t->read_bytes = ReadBytes;
}

}  // namespace weft::kernels::avx2
