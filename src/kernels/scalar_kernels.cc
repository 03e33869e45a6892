// The scalar kernel table: portable reference twins of every kernel. The
// SIMD tables are tested against these; they compute the same integer dot
// products (same activation quantization, bit for bit) and differ only in
// the order of float additions.
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/scalar_internal.h"
#include "kernels/x8_internal.h"
#include "tensor/blocks.h"
#include "tensor/half.h"
#include "tensor/quant.h"
#include "util/check.h"

namespace weft::kernels {
namespace {

// ---- Activation quantization ----

// x ~= d * q with q = round-half-even(x / d), d = max|x| / 127. SIMD
// versions compute exactly these bytes.
void QuantizeBlock8(const float* x, int n, int8_t* q, float* d_out,
                    int* sum_out) {
  float amax = 0;
  for (int j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int sum = 0;
  for (int j = 0; j < n; ++j) {
    long v = std::lrintf(x[j] * id);
    v = v > 127 ? 127 : (v < -127 ? -127 : v);
    q[j] = static_cast<int8_t>(v);
    sum += static_cast<int>(v);
  }
  *d_out = d;
  *sum_out = sum;
}

void QuantizeQ8x32(const float* x, void* xq, int64_t k) {
  const auto [qs, d, ds] = MutableQ8x32RowAt(xq, k);
  for (int64_t b = 0; b < k / 32; ++b) {
    int sum;
    QuantizeBlock8(x + b * 32, 32, qs + b * 32, &d[b], &sum);
    ds[b] = d[b] * static_cast<float>(sum);
  }
}

void QuantizeQ8K(const float* x, void* xq, int64_t k) {
  BlockQ8_K* out = static_cast<BlockQ8_K*>(xq);
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    int sum;
    QuantizeBlock8(x + b * kQK_K, kQK_K, out[b].qs, &out[b].d, &sum);
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += out[b].qs[g * 16 + l];
      out[b].bsums[g] = static_cast<int16_t>(s);
    }
  }
}

// ---- Dot products of one weight row with one activation row ----

float DotF32(int64_t k, const void* w, const void* x) {
  const float* a = static_cast<const float*>(w);
  const float* b = static_cast<const float*>(x);
  float s = 0;
  for (int64_t i = 0; i < k; ++i) s += a[i] * b[i];
  return s;
}

// F16 and BF16 weights: each element through its conversion.
template <float (*kToF32)(uint16_t)>
float DotHalf(int64_t k, const void* w, const void* x) {
  const uint16_t* a = static_cast<const uint16_t*>(w);
  const float* b = static_cast<const float*>(x);
  float s = 0;
  for (int64_t i = 0; i < k; ++i) s += kToF32(a[i]) * b[i];
  return s;
}

// The weight codes of the 32-element formats: element e < 32 of a block
// is nibble e % 16 of qs (low for e < 16, high above), plus bit e of qh as
// bit 4 in the formats with one (Q5_0, Q5_1).
template <typename Block>
int Code(const Block& b, int e) {
  int c = e < 16 ? b.qs[e] & 0x0f : b.qs[e - 16] >> 4;
  if constexpr (requires { b.qh; }) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    c |= static_cast<int>((qh >> e) & 1) << 4;
  }
  return c;
}

// Element e's integer weight v, w = d * v (+ m for Q4_1 / Q5_1).
template <typename Block>
int WeightValue(const Block& b, int e) {
  if constexpr (std::is_same_v<Block, BlockQ8_0>) {
    return b.qs[e];
  } else if constexpr (std::is_same_v<Block, BlockIQ4_NL>) {
    return kIQ4NLValues[Code(b, e)];
  } else if constexpr (std::is_same_v<Block, BlockMXFP4>) {
    return kMXFP4Values[Code(b, e)];
  } else if constexpr (std::is_same_v<Block, BlockQ4_0>) {
    return Code(b, e) - 8;
  } else if constexpr (std::is_same_v<Block, BlockQ5_0>) {
    return Code(b, e) - 16;
  } else {
    return Code(b, e);
  }
}

// A 32-element block's scale d: fp16, or MXFP4's E8M0 exponent.
template <typename Block>
float BlockScale(const Block& b) {
  if constexpr (std::is_same_v<Block, BlockMXFP4>) {
    return E8M0ToFp32Half(b.e);
  } else {
    return Fp16ToFp32(b.d);
  }
}

// A 32-element format against Q8x32 activations, per block: d * da *
// sum(v * q), plus m * ds for the formats with a min (Q4_1 / Q5_1: w = d *
// u + m, the activations' block sums ds = da * sum(q)).
template <typename Block>
float DotQ8x32(int64_t k, const void* w, const void* x) {
  const Block* wb = static_cast<const Block*>(w);
  const Q8x32Row a = Q8x32RowAt(x, 0, 0, k);
  float s = 0;
  for (int64_t b = 0; b < k / 32; ++b) {
    int isum = 0;
    for (int e = 0; e < 32; ++e) isum += WeightValue(wb[b], e) * a.qs[b * 32 + e];
    const float dot = BlockScale(wb[b]) * a.d[b] * static_cast<float>(isum);
    if constexpr (requires { wb[b].m; }) {
      s += dot + Fp16ToFp32(wb[b].m) * a.ds[b];
    } else {
      s += dot;
    }
  }
  return s;
}

// IQ4_XS against Q8_K activations: each 32-element sub-block is an IQ4_NL
// block with the integer scale ls - 32, so a super-block's sum is exact in
// integers and takes one float step, d * da * isum.
float DotIQ4_XS(const BlockIQ4_XS& w, const BlockQ8_K& a) {
  int isum = 0;
  for (int ib = 0; ib < kQK_K / 32; ++ib) {
    const uint8_t* qs = w.qs + 16 * ib;
    const int8_t* q = a.qs + 32 * ib;
    int sub = 0;
    for (int j = 0; j < 16; ++j) {
      sub += kIQ4NLValues[qs[j] & 0x0f] * q[j];
      sub += kIQ4NLValues[qs[j] >> 4] * q[j + 16];
    }
    isum += IQ4XSScale(w, ib) * sub;
  }
  return Fp16ToFp32(w.d) * a.d * static_cast<float>(isum);
}

// ---- Elementwise and attention helpers ----

void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  float ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = x[i] * scale * (w != nullptr ? w[i] : 1.0f);
  }
}

void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
          bool neox, const float* cs) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_heads; ++h) RopePairs(x + h * head_dim, cs, 0, half, neox);
}

float ExpSum(float* x, int64_t n, float* max) {
  float m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::fmax(m, x[i]);
  *max = m;
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  return sum;
}

void Silu(const float* x, const float* mul, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] / (1.0f + std::exp(-x[i]));
    y[i] = mul != nullptr ? v * mul[i] : v;
  }
}

void Gelu(const float* x, const float* mul, float* y, int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float g =
        0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
    y[i] = mul != nullptr ? g * mul[i] : g;
  }
}

float VecDotF32(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

float VecDotF16(const float* a, const uint16_t* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * Fp16ToFp32(b[i]);
  return s;
}

void AxpyF32(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void AxpyF16(float alpha, const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * Fp16ToFp32(x[i]);
}

uint64_t ReadBytes(const void* p, size_t n) {
  const uint64_t* v = static_cast<const uint64_t*>(p);
  uint64_t acc = 0;
  for (size_t i = 0; i < n / 8; ++i) acc ^= v[i];
  return acc;
}

// The reference dequantizer (tensor/quant.h), which cannot fail on whole
// Q8_0 blocks.
void Q8_0ToF32(const void* blocks, int64_t n, float* y) {
  const Status s = DequantizeRow(GgmlType::kQ8_0, blocks, y, n);
  CHECK(s.ok()) << s.ToString();
}

void F32ToF16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = Fp32ToFp16(x[i]);
}

// The multi-row attention kernels, by their definition in kernel_table.h
// (no prefetch: `ahead` is only a hint).
template <typename K, float (*kDot)(const float*, const K*, int64_t)>
void Scores(const float* q, int64_t q_stride, int nr, const void* const* rows,
            const void* const* /*ahead*/, int64_t np, int64_t n, float scale, float* out,
            int64_t out_stride) {
  for (int r = 0; r < nr; ++r) {
    for (int64_t p = 0; p < np; ++p) {
      out[r * out_stride + p] = kDot(q + r * q_stride, static_cast<const K*>(rows[p]), n) * scale;
    }
  }
}

// Scores over a key tile (kernel_table.h scores_f16t): four fma chains per
// score, elements e = j (mod 4) in chain j, summed as (a0 + a1) + (a2 + a3).
void ScoresTile(const float* q, int64_t q_stride, int nr, const uint16_t* kt, int64_t w,
                int64_t np, int64_t n, float scale, float* out, int64_t out_stride,
                const uint16_t* /*ahead*/) {
  for (int r = 0; r < nr; ++r) {
    const float* qr = q + r * q_stride;
    for (int64_t p = 0; p < np; ++p) {
      float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (int64_t e = 0; e < n; ++e) {
        a[e % 4] = std::fma(qr[e], Fp16ToFp32(kt[e * w + p]), a[e % 4]);
      }
      out[r * out_stride + p] = ((a[0] + a[1]) + (a[2] + a[3])) * scale;
    }
  }
}

template <typename K, void (*kAxpy)(float, const K*, float*, int64_t)>
void Wsum(const void* const* rows, const void* const* /*ahead*/, int64_t np,
          const float* alpha, int64_t alpha_stride, int nr, int64_t n, float* y,
          int64_t y_stride) {
  for (int r = 0; r < nr; ++r) {
    for (int64_t p = 0; p < np; ++p) {
      kAxpy(alpha[r * alpha_stride + p], static_cast<const K*>(rows[p]), y + r * y_stride, n);
    }
  }
}

// The Q8_0 entries (kernel_table.h scores_q8_0, wsum_q8_0): each row
// dequantized by Q8_0ToF32, then Scores<float> / Wsum<float>'s arithmetic
// (positions outer, so a row is dequantized once; each score and each
// row's sequence of axpys is unchanged).
void ScoresQ8(const float* q, int64_t q_stride, int nr, const void* const* rows, int64_t np,
              int64_t n, float scale, float* out, int64_t out_stride) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t p = 0; p < np; ++p) {
    Q8_0ToF32(rows[p], n, x.data());
    for (int r = 0; r < nr; ++r) {
      out[r * out_stride + p] = VecDotF32(q + r * q_stride, x.data(), n) * scale;
    }
  }
}

void WsumQ8(const void* const* rows, int64_t np, const float* alpha, int64_t alpha_stride,
            int nr, int64_t n, float* y, int64_t y_stride) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t p = 0; p < np; ++p) {
    Q8_0ToF32(rows[p], n, x.data());
    for (int r = 0; r < nr; ++r) {
      AxpyF32(alpha[r * alpha_stride + p], x.data(), y + r * y_stride, n);
    }
  }
}

KernelTable MakeScalarTable() {
  KernelTable t;
  t.name = "scalar";
  SetMatMul(&t, WeightFormat::kF32, ActFormat::kF32, nullptr, DotCols<DotF32>);
  SetMatMul(&t, WeightFormat::kF16, ActFormat::kF32, nullptr, DotCols<DotHalf<Fp16ToFp32>>);
  SetMatMul(&t, WeightFormat::kBF16, ActFormat::kF32, nullptr, DotCols<DotHalf<Bf16ToFp32>>);
  SetMatMul(&t, WeightFormat::kQ4_0, ActFormat::kQ8x32, QuantizeQ8x32,
            DotCols<DotQ8x32<BlockQ4_0>>);
  SetMatMul(&t, WeightFormat::kQ5_0, ActFormat::kQ8x32, QuantizeQ8x32,
            DotCols<DotQ8x32<BlockQ5_0>>);
  SetMatMul(&t, WeightFormat::kQ4_1, ActFormat::kQ8x32, QuantizeQ8x32,
            DotCols<DotQ8x32<BlockQ4_1>>);
  SetMatMul(&t, WeightFormat::kQ5_1, ActFormat::kQ8x32, QuantizeQ8x32,
            DotCols<DotQ8x32<BlockQ5_1>>);
  SetMatMul(&t, WeightFormat::kIQ4_NL, ActFormat::kQ8x32, QuantizeQ8x32,
            DotCols<DotQ8x32<BlockIQ4_NL>>);
  SetMatMul(&t, WeightFormat::kMXFP4, ActFormat::kQ8x32, QuantizeQ8x32,
            DotCols<DotQ8x32<BlockMXFP4>>);
  SetMatMul(&t, WeightFormat::kIQ4_XS, ActFormat::kQ8K, QuantizeQ8K,
            DotCols<DotSuperBlocks<BlockIQ4_XS, DotIQ4_XS>>);
  SetMatMul(&t, WeightFormat::kQ8_0, ActFormat::kQ8x32, QuantizeQ8x32,
            DotCols<DotQ8x32<BlockQ8_0>>);
  FillScalarKQuants(&t, QuantizeQ8K);
  FillScalarX8(&t, QuantizeQ8x32);  // after the Q4_K entry (its Q8_K conversion)
  t.rms_norm = RmsNorm;
  t.rope = Rope;
  t.silu = Silu;
  t.gelu = Gelu;
  t.dot_f32 = VecDotF32;
  t.dot_f16 = VecDotF16;
  t.axpy_f32 = AxpyF32;
  t.axpy_f16 = AxpyF16;
  t.f32_to_f16 = F32ToF16;
  t.q8_0_to_f32 = Q8_0ToF32;
  t.scores_f32 = Scores<float, VecDotF32>;
  t.scores_f16 = Scores<uint16_t, VecDotF16>;
  t.scores_f16t = ScoresTile;
  t.exp_sum = ExpSum;
  t.wsum_f32 = Wsum<float, AxpyF32>;
  t.wsum_f16 = Wsum<uint16_t, AxpyF16>;
  t.scores_q8_0 = ScoresQ8;
  t.wsum_q8_0 = WsumQ8;
  t.read_bytes = ReadBytes;
  return t;
}

}  // namespace

const KernelTable* ScalarKernelTable() {
  static const KernelTable table = MakeScalarTable();
  return &table;
}

}  // namespace weft::kernels
