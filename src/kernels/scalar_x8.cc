// Scalar reference kernels for the x8 weight layout (packed_x8.h): the
// twins of avx2_x8.cc, against Q8x32 activations. Per (row, activation row):
//   acc += float(sum_e code[e] * a[e]) * (dw * da)   per block, in order
//   y = acc - offset * sum_b dw * ds                  (Q4_0 / Q5_0)
// where code is the unsigned code (w = dw * (code - offset)) or Q8_0's
// signed value (offset 0). MXFP4 has its own tile (TileX8MXFP4), the
// bitwise reference of its SIMD twins.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kernel_table.h"
#include "kernels/packed_x8.h"
#include "kernels/x8_internal.h"
#include "tensor/blocks.h"
#include "tensor/half.h"

namespace weft::kernels {
namespace {

using Fmt = X8Fmt;

template <Fmt F>
struct X8Traits {
  // isum[i] += the integer dot of row i's block with a (32 int8), for the
  // 8 rows of a group block.
  static void Dots(const uint8_t* gb, const int8_t* a, int32_t* isum) {
    if constexpr (F == Fmt::kQ8_0) {
      for (int j = 0; j < 8; ++j) {
        const int8_t* q = reinterpret_cast<const int8_t*>(gb + 16 + 32 * j);
        for (int i = 0; i < kX8Rows; ++i) {
          for (int t = 0; t < 4; ++t) isum[i] += q[4 * i + t] * a[4 * j + t];
        }
      }
    } else if constexpr (F == Fmt::kIQ4_NL || F == Fmt::kMXFP4) {
      const int8_t* values = F == Fmt::kIQ4_NL ? kIQ4NLValues : kMXFP4Values;
      const uint8_t* q = gb + kX8Codes<F>;
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < kX8Rows; ++i) {
          for (int t = 0; t < 4; ++t) {
            const uint8_t byte = q[32 * j + 4 * i + t];
            isum[i] += values[byte & 15] * a[4 * j + t] + values[byte >> 4] * a[16 + 4 * j + t];
          }
        }
      }
    } else {
      const uint8_t* q = gb + kX8Codes<F>;
      const uint8_t* h = gb + kX8High<F>;
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < kX8Rows; ++i) {
          for (int t = 0; t < 4; ++t) {
            const uint8_t byte = q[32 * j + 4 * i + t];
            int lo = byte & 15, hi = byte >> 4;
            if constexpr (kX8Has5th<F>) {
              lo |= ((h[4 * i + t] >> j) & 1) << 4;
              hi |= ((h[4 * i + t] >> (4 + j)) & 1) << 4;
            }
            isum[i] += lo * a[4 * j + t] + hi * a[16 + 4 * j + t];
          }
        }
      }
    }
  }
};

template <Fmt F>
void TileX8(int64_t k, const void* w, size_t /*w_stride*/, int nr,
            const void* xq, size_t xq_stride, int nc, float* y,
            size_t y_stride) {
  using T = X8Traits<F>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  for (int c = 0; c < nc; ++c) {
    const Q8x32Row x = Q8x32RowAt(xq, xq_stride, c, k);
    float acc[kX8Rows] = {}, corr[kX8Rows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* gb = g + b * kX8GroupBlockBytes<F>;
      int32_t isum[kX8Rows] = {};
      T::Dots(gb, x.qs + 32 * b, isum);
      for (int i = 0; i < kX8Rows; ++i) {
        uint16_t dbits;
        std::memcpy(&dbits, gb + 2 * i, 2);
        const float dw = Fp16ToFp32(dbits);
        acc[i] += static_cast<float>(isum[i]) * (dw * x.d[b]);
        if constexpr (kX8HasMin<F>) {
          uint16_t mbits;
          std::memcpy(&mbits, gb + 16 + 2 * i, 2);
          corr[i] += Fp16ToFp32(mbits) * x.ds[b];
        } else {
          corr[i] += dw * x.ds[b];
        }
      }
    }
    for (int i = 0; i < nr; ++i) {
      y[c * y_stride + i] = kX8HasMin<F>
                                ? acc[i] + corr[i]
                                : acc[i] - static_cast<float>(kX8Offset<F>) * corr[i];
    }
  }
}

// MXFP4, the reference every ISA's MXFP4 x8 tile gives bit for bit: per
// (row, activation row) the exact integer dot of each block's values
// (kMXFP4Values) with the int8 activations, then, in block order,
//   acc = fma(float(isum), dw * da, acc)     (dw = 2^(e - 128): E8M0ToFp32Half)
// and y = acc (signed values: no offset). One fused multiply-add, as the
// SIMD tiles' vfmadd, so the float steps are theirs exactly.
void TileX8MXFP4(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                 size_t xq_stride, int nc, float* y, size_t y_stride) {
  constexpr int kGB = kX8GroupBlockBytes<Fmt::kMXFP4>;
  const int64_t nb = k / 32;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  for (int c = 0; c < nc; ++c) {
    const Q8x32Row x = Q8x32RowAt(xq, xq_stride, c, k);
    float acc[kX8Rows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* gb = g + b * kGB;
      int32_t isum[kX8Rows] = {};
      X8Traits<Fmt::kMXFP4>::Dots(gb, x.qs + 32 * b, isum);
      for (int i = 0; i < kX8Rows; ++i) {
        acc[i] = std::fma(static_cast<float>(isum[i]), E8M0ToFp32Half(gb[i]) * x.d[b], acc[i]);
      }
    }
    for (int i = 0; i < nr; ++i) y[c * y_stride + i] = acc[i];
  }
}

// The K-quant tiles' frame: for each column, super-block and row,
// row_sums(gb, i, a) gives the row's integer sums (isum, msum), then
//   acc += float(isum) * (d * da);  accm += float(msum) * (dmin * da)
// and y = acc - accm (kMins; without, y = acc and msum is ignored).
template <size_t kRowBlockBytes, bool kMins, typename RowSums>
void TileX8K(int64_t k, const void* w, int nr, const void* xq, size_t xq_stride, int nc,
             float* y, size_t y_stride, RowSums row_sums) {
  const int64_t nb = k / kQK_K;
  const uint8_t* g = static_cast<const uint8_t*>(w);
  for (int c = 0; c < nc; ++c) {
    const BlockQ8_K* a = reinterpret_cast<const BlockQ8_K*>(
        static_cast<const char*>(xq) + c * xq_stride);
    float acc[kX8Rows] = {}, accm[kX8Rows] = {};
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* gb = g + b * kX8Rows * kRowBlockBytes;
      for (int i = 0; i < kX8Rows; ++i) {
        int32_t isum = 0, msum = 0;
        row_sums(gb, i, a[b], &isum, &msum);
        uint16_t dbits;
        std::memcpy(&dbits, gb + 2 * i, 2);
        acc[i] += static_cast<float>(isum) * (Fp16ToFp32(dbits) * a[b].d);
        if constexpr (kMins) {
          uint16_t mbits;
          std::memcpy(&mbits, gb + 16 + 2 * i, 2);
          accm[i] += static_cast<float>(msum) * (Fp16ToFp32(mbits) * a[b].d);
        }
      }
    }
    for (int i = 0; i < nr; ++i) y[c * y_stride + i] = kMins ? acc[i] - accm[i] : acc[i];
  }
}

// Q4_K (kQ5: Q5_K) in the x8 layout against Q8_K activations, per row and
// super-block: isum = sum_s sc_s * dot_s, msum = sum_s m_s * asum_s.
template <bool kQ5>
void TileX8Q45K(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                size_t xq_stride, int nc, float* y, size_t y_stride) {
  TileX8K<kQ5 ? kX8Q5KBlockBytes : kX8Q4KBlockBytes, true>(
      k, w, nr, xq, xq_stride, nc, y, y_stride,
      [](const uint8_t* gb, int i, const BlockQ8_K& a, int32_t* isum, int32_t* msum) {
        for (int s = 0; s < 8; ++s) {
          const int chunk = s / 2, hi = s % 2;
          const uint8_t* h = gb + kX8Rows * kX8Q4KBlockBytes + 64 * chunk + 32 * hi;
          int32_t sub = 0;
          for (int j = 0; j < 8; ++j) {
            for (int t = 0; t < 4; ++t) {
              const uint8_t byte = gb[160 + 256 * chunk + 32 * j + 4 * i + t];
              int q = hi ? byte >> 4 : byte & 15;
              if (kQ5) q |= ((h[4 * i + t] >> j) & 1) << 4;
              sub += q * a.qs[64 * chunk + 32 * hi + 4 * j + t];
            }
          }
          *isum += gb[32 + 8 * s + i] * sub;
          *msum += gb[96 + 16 * chunk + 2 * i + hi] * (a.bsums[2 * s] + a.bsums[2 * s + 1]);
        }
      });
}

// Q2_K in the x8 layout against Q8_K activations, per row and super-block:
// isum = sum_s sc_s * dot_s, msum = sum_s m_s * asum_s.
void TileX8Q2K(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
               size_t xq_stride, int nc, float* y, size_t y_stride) {
  TileX8K<sizeof(BlockQ2_K), true>(
      k, w, nr, xq, xq_stride, nc, y, y_stride,
      [](const uint8_t* gb, int i, const BlockQ8_K& a, int32_t* isum, int32_t* msum) {
        for (int s = 0; s < 16; ++s) {
          int32_t dot = 0;
          for (int u = 0; u < 4; ++u) {
            for (int t = 0; t < 4; ++t) {
              const int q = (gb[kX8Q2KCodes + 32 * s + 4 * i + t] >> (2 * u)) & 3;
              dot += q * a.qs[16 * s + 4 * u + t];
            }
          }
          const uint8_t scm = gb[32 + 16 * (s / 2) + 2 * i + s % 2];
          *isum += (scm & 15) * dot;
          *msum += (scm >> 4) * a.bsums[s];
        }
      });
}

// Q3_K in the x8 layout against Q8_K activations, per row and super-block,
// in integers: isum = sum_s sc_s * (sum_e u_e * a_e - 4 * asum_s).
void TileX8Q3K(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
               size_t xq_stride, int nc, float* y, size_t y_stride) {
  TileX8K<kX8Q3KBlockBytes, false>(
      k, w, nr, xq, xq_stride, nc, y, y_stride,
      [](const uint8_t* gb, int i, const BlockQ8_K& a, int32_t* isum, int32_t* /*msum*/) {
        for (int s = 0; s < 16; ++s) {
          int32_t dot = 0;
          for (int u = 0; u < 4; ++u) {
            for (int t = 0; t < 4; ++t) {
              const int lo = (gb[kX8Q3KCodes + 32 * s + 4 * i + t] >> (2 * u)) & 3;
              const int hi = (gb[kX8Q3KHigh + 32 * (s / 2) + 4 * i + t] >> (4 * (s % 2) + u)) & 1;
              dot += (lo | hi << 2) * a.qs[16 * s + 4 * u + t];
            }
          }
          const int sc = static_cast<int8_t>(gb[16 + 16 * (s / 2) + 2 * i + s % 2]);
          *isum += sc * (dot - 4 * a.bsums[s]);
        }
      });
}

// IQ4_XS in the x8 layout against Q8_K activations, per row and
// super-block: isum = sum_s (ls_s - 32) * dot_s over the table values.
void TileX8IQ4XS(int64_t k, const void* w, size_t /*w_stride*/, int nr, const void* xq,
                 size_t xq_stride, int nc, float* y, size_t y_stride) {
  TileX8K<kX8IQ4XSBlockBytes, false>(
      k, w, nr, xq, xq_stride, nc, y, y_stride,
      [](const uint8_t* gb, int i, const BlockQ8_K& a, int32_t* isum, int32_t* /*msum*/) {
        for (int s = 0; s < 8; ++s) {
          int32_t dot = 0;
          for (int j = 0; j < 4; ++j) {
            for (int t = 0; t < 4; ++t) {
              const uint8_t byte = gb[kX8IQ4XSCodes + 128 * s + 32 * j + 4 * i + t];
              dot += kIQ4NLValues[byte & 15] * a.qs[32 * s + 4 * j + t] +
                     kIQ4NLValues[byte >> 4] * a.qs[32 * s + 16 + 4 * j + t];
            }
          }
          *isum += static_cast<int8_t>(gb[16 + 16 * (s / 2) + 2 * i + s % 2]) * dot;
        }
      });
}

// Q6_K in the x8 layout against Q8_K activations, per row and super-block,
// in integers: isum = sum_s sc_s * (sum_e q_e * a_e - 32 * asum_s).
void TileX8Q6K(int64_t k, const void* w, size_t /*w_stride*/, int nr,
               const void* xq, size_t xq_stride, int nc, float* y,
               size_t y_stride) {
  TileX8K<sizeof(BlockQ6_K), false>(
      k, w, nr, xq, xq_stride, nc, y, y_stride,
      [](const uint8_t* gb, int i, const BlockQ8_K& a, int32_t* isum, int32_t* /*msum*/) {
        for (int s = 0; s < 16; ++s) {
          const uint8_t* sub = gb + kX8Q6KCodes + 96 * s;
          int32_t dot = 0;
          for (int j = 0; j < 4; ++j) {
            for (int t = 0; t < 4; ++t) {
              const uint8_t lo = sub[32 * (j % 2) + 4 * i + t];
              const int q = (j < 2 ? lo & 15 : lo >> 4) |
                            ((sub[64 + 4 * i + t] >> (2 * j)) & 3) << 4;
              dot += q * a.qs[16 * s + 4 * j + t];
            }
          }
          const int sc = static_cast<int8_t>(gb[16 + 16 * (s / 2) + 2 * i + s % 2]);
          *isum += sc * (dot - 32 * a.bsums[s]);
        }
      });
}

}  // namespace

void FillScalarX8(KernelTable* t, QuantizeActFn quantize_q8x32) {
  auto set = [&](WeightFormat f, TileFn tile) {
    MatMulKernel& k = t->matmul_x8[static_cast<int>(f)];
    k = MatMulKernel{
        ActFormat::kQ8x32, quantize_q8x32, nullptr, tile, kX8Rows, 1};
  };
  set(WeightFormat::kQ4_0, TileX8<Fmt::kQ4_0>);
  set(WeightFormat::kQ5_0, TileX8<Fmt::kQ5_0>);
  set(WeightFormat::kQ8_0, TileX8<Fmt::kQ8_0>);
  set(WeightFormat::kIQ4_NL, TileX8<Fmt::kIQ4_NL>);
  set(WeightFormat::kQ4_1, TileX8<Fmt::kQ4_1>);
  set(WeightFormat::kQ5_1, TileX8<Fmt::kQ5_1>);
  set(WeightFormat::kMXFP4, TileX8MXFP4);
  const MatMulKernel& k4 = t->matmul[static_cast<int>(WeightFormat::kQ4_K)];
  t->matmul_x8[static_cast<int>(WeightFormat::kQ4_K)] = MatMulKernel{
      ActFormat::kQ8K, k4.quantize, nullptr, TileX8Q45K<false>, kX8Rows, 1};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ5_K)] = MatMulKernel{
      ActFormat::kQ8K, k4.quantize, nullptr, TileX8Q45K<true>, kX8Rows, 1};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ6_K)] = MatMulKernel{
      ActFormat::kQ8K, k4.quantize, nullptr, TileX8Q6K, kX8Rows, 1};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ2_K)] = MatMulKernel{
      ActFormat::kQ8K, k4.quantize, nullptr, TileX8Q2K, kX8Rows, 1};
  t->matmul_x8[static_cast<int>(WeightFormat::kQ3_K)] = MatMulKernel{
      ActFormat::kQ8K, k4.quantize, nullptr, TileX8Q3K, kX8Rows, 1};
  t->matmul_x8[static_cast<int>(WeightFormat::kIQ4_XS)] = MatMulKernel{
      ActFormat::kQ8K, k4.quantize, nullptr, TileX8IQ4XS, kX8Rows, 1};
}

}  // namespace weft::kernels
