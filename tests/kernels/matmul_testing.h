// Shared helpers of the matmul tests: random problems with dequantized
// reference weights, a MatMul runner and a tolerance comparison.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/packed_x8.h"
#include "tensor/quant.h"
#include "tensor/types.h"
#include "tests/kernels/tables_under_test.h"

namespace weft::kernels::testing {

struct Problem {
  GgmlType type;
  int64_t m, n, k;
  std::vector<float> x;      // [m, k]
  std::vector<uint8_t> w;    // [n, row_bytes]
  std::vector<float> w_deq;  // [n, k] dequantized weights
  size_t row_bytes = 0;
};

inline Problem MakeProblem(GgmlType type, int64_t m, int64_t n, int64_t k,
                           uint32_t seed) {
  Problem p{type, m, n, k, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  p.x.resize(m * k);
  for (int64_t r = 0; r < m; ++r) {
    const float scale =
        0.1f + static_cast<float>(r % 7);  // rows of varied size
    for (int64_t i = 0; i < k; ++i) p.x[r * k + i] = scale * normal(rng);
  }
  std::vector<float> wf(n * k);
  for (int64_t r = 0; r < n; ++r) {
    const float scale = 0.02f * static_cast<float>(1 + r % 5);
    for (int64_t i = 0; i < k; ++i)
      wf[r * k + i] = scale * normal(rng) + (i % 17 == 0 ? 0.05f : 0.0f);
  }
  p.row_bytes = RowBytes(type, k).value();
  p.w.resize(p.row_bytes * n);
  p.w_deq.resize(n * k);
  for (int64_t r = 0; r < n; ++r) {
    EXPECT_TRUE(
        QuantizeRow(type, wf.data() + r * k, p.w.data() + r * p.row_bytes, k)
            .ok());
    EXPECT_TRUE(DequantizeRow(type, p.w.data() + r * p.row_bytes,
                              p.w_deq.data() + r * k, k)
                    .ok());
  }
  return p;
}

// y = X W^T on table t; x8: with the weights repacked (PackX8) and the
// table's x8 kernel.
inline std::vector<float> RunMatMul(const KernelTable& t, const Problem& p,
                                    ThreadPool* pool, bool x8 = false) {
  std::vector<float> y(p.m * p.n, -12345.0f);
  std::vector<uint8_t> packed;
  MatMulArgs a;
  a.w_type = p.type;
  a.w = p.w.data();
  if (x8) {
    packed.resize(PackedX8Bytes(p.type, p.n, p.k));
    PackX8(p.type, p.w.data(), p.row_bytes, p.n, p.k, packed.data());
    a.w = packed.data();
    a.w_x8 = true;
  }
  a.x = p.x.data();
  a.y = y.data();
  a.m = p.m;
  a.n = p.n;
  a.k = p.k;
  a.pool = pool;
  MatMul(t, a);
  return y;
}

inline int64_t ActBlock(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0:
    case GgmlType::kIQ4_NL:
    case GgmlType::kMXFP4:
      return 32;
    case GgmlType::kIQ4_XS:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return 256;
    default:
      return 0;  // float activations
  }
}

// Tolerance of a float-summation-order difference between two kernels on
// the same quantized activations: 2e-5 of sum |x| * max |w| over each
// block of p's type, per output.
inline std::vector<double> BlockTolerance(const Problem& p) {
  std::vector<double> tol(p.m * p.n);
  const int64_t blk = TypeTraits(p.type).block_size;
  for (int64_t r = 0; r < p.m; ++r) {
    for (int64_t c = 0; c < p.n; ++c) {
      double bound = 0;
      for (int64_t b0 = 0; b0 < p.k; b0 += blk) {
        double wmax = 0, xs = 0;
        for (int64_t i = b0; i < b0 + blk; ++i) {
          wmax = std::max(wmax, std::fabs(double{p.w_deq[c * p.k + i]}));
          xs += std::fabs(double{p.x[r * p.k + i]});
        }
        bound += wmax * xs;
      }
      tol[r * p.n + c] = 2e-5 * bound + 1e-6;
    }
  }
  return tol;
}

// Compares `got` with `want` element by element under tol[i]; on failure
// prints the worst element (largest error / tolerance).
inline void ExpectClose(const std::vector<float>& got,
                        const std::vector<double>& want,
                        const std::vector<double>& tol, int64_t n,
                        const std::string& what) {
  double worst = 0;
  int64_t worst_i = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double ratio = err / tol[i];
    if (!(ratio <= worst) || std::isnan(got[i])) {
      worst = std::isnan(got[i]) ? INFINITY : ratio;
      worst_i = static_cast<int64_t>(i);
    }
  }
  EXPECT_LE(worst, 1.0) << what << ": worst element y[" << worst_i / n << ", "
                        << worst_i % n << "] = " << got[worst_i] << ", want "
                        << want[worst_i] << ", tolerance " << tol[worst_i];
}

}  // namespace weft::kernels::testing
