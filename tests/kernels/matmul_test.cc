// MatMul on every ISA this CPU supports against the scalar twin, and the
// scalar twin against a float reference (weights dequantized with
// tensor/quant.h, activations exact, dot products in double), with
// tolerances derived from each format's quantization step.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "matmul_testing.h"
#include "tensor/quant.h"
#include "tensor/types.h"
#include "util/strings.h"

namespace weft::kernels {
namespace {

using testing::ActBlock;
using testing::ExpectClose;
using testing::MakeProblem;
using testing::Problem;
using testing::RunMatMul;
using testing::TablesUnderTest;

struct Shape {
  GgmlType type;
  int64_t k;
};

std::vector<Shape> Shapes() {
  std::vector<Shape> s;
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (int64_t k : {1, 7, 37, 100, 613}) s.push_back({t, k});
  }
  // 2144 = 67 blocks: more than one 64-block chunk of the tile kernels and
  // an odd block count (the pair kernels' padded last block).
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                     GgmlType::kQ5_1, GgmlType::kQ8_0, GgmlType::kIQ4_NL,
                     GgmlType::kMXFP4}) {
    for (int64_t k : {32, 96, 608, 2144}) s.push_back({t, k});
  }
  for (GgmlType t : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                     GgmlType::kQ6_K, GgmlType::kIQ4_XS}) {
    for (int64_t k : {256, 768}) s.push_back({t, k});
  }
  return s;
}

std::string Name(const Shape& s, int64_t m, int64_t n) {
  return StrFormat("%s M=%lld N=%lld K=%lld", std::string(TypeName(s.type)).c_str(),
                   static_cast<long long>(m), static_cast<long long>(n),
                   static_cast<long long>(s.k));
}

// The scalar twin against a float reference: error bounded by the
// activation quantization (sum |w| * step/2 over the elements) plus float
// rounding.
TEST(MatMulTest, ScalarTwinMatchesFloatReference) {
  const KernelTable& scalar = GetKernels(Isa::kScalar);
  uint32_t seed = 1;
  for (const Shape& s : Shapes()) {
    for (int64_t m : {1, 3, 17}) {
      const int64_t n = 19;
      Problem p = MakeProblem(s.type, m, n, s.k, seed++);
      std::vector<float> y = RunMatMul(scalar, p, nullptr);
      std::vector<double> want(m * n), tol(m * n);
      const int64_t ab = ActBlock(s.type);
      for (int64_t r = 0; r < m; ++r) {
        const float* x = p.x.data() + r * s.k;
        std::vector<double> step(s.k, 0.0);
        if (ab > 0) {
          for (int64_t b = 0; b < s.k; b += ab) {
            double amax = 0;
            for (int64_t i = b; i < b + ab; ++i) amax = std::max(amax, std::fabs(double{x[i]}));
            for (int64_t i = b; i < b + ab; ++i) step[i] = amax / 127.0;
          }
        }
        for (int64_t c = 0; c < n; ++c) {
          const float* w = p.w_deq.data() + c * s.k;
          double dot = 0, abs_sum = 0, q_err = 0;
          for (int64_t i = 0; i < s.k; ++i) {
            dot += double{w[i]} * x[i];
            abs_sum += std::fabs(double{w[i]} * x[i]);
            q_err += std::fabs(double{w[i]}) * step[i] / 2;
          }
          want[r * n + c] = dot;
          tol[r * n + c] = q_err * 1.01 + 2e-6 * abs_sum + 1e-6;
        }
      }
      ExpectClose(y, want, tol, n, "scalar vs reference, " + Name(s, m, n));
    }
  }
}

// Every SIMD table against the scalar twin. They see the same int8
// activations (bit for bit), so only float summation order differs (and
// bf16 rounding of the activations where the table uses it).
TEST(MatMulTest, EveryIsaMatchesScalarTwin) {
  const KernelTable& scalar = GetKernels(Isa::kScalar);
  ThreadPool pool(ThreadPoolOptions{.num_threads = 3});
  for (const KernelTable* table : TablesUnderTest()) {
    if (table == &scalar) continue;
    const KernelTable& t = *table;
    SCOPED_TRACE(t.name);
    uint32_t seed = 100;
    for (const Shape& s : Shapes()) {
      for (int64_t m : {1, 3, 17, 255}) {
        for (int64_t n : {1, 5, 67}) {
          if (m == 255 && n != 67) continue;
          Problem p = MakeProblem(s.type, m, n, s.k, seed++);
          std::vector<float> want_f = RunMatMul(scalar, p, nullptr);
          std::vector<float> got = RunMatMul(t, p, nullptr);
          const bool bf16_act =
              t.matmul[static_cast<int>(ToWeightFormat(s.type))].act == ActFormat::kBF16;
          std::vector<double> want(want_f.begin(), want_f.end()), tol(m * n);
          const int64_t blk = std::max<int64_t>(TypeTraits(s.type).block_size, 16);
          for (int64_t r = 0; r < m; ++r) {
            for (int64_t c = 0; c < n; ++c) {
              // sum |x| * (max |w| of the block), the size of the terms.
              double bound = 0;
              for (int64_t b0 = 0; b0 < s.k; b0 += blk) {
                double wmax = 0, xs = 0;
                for (int64_t i = b0; i < std::min(s.k, b0 + blk); ++i) {
                  wmax = std::max(wmax, std::fabs(double{p.w_deq[c * s.k + i]}));
                  xs += std::fabs(double{p.x[r * s.k + i]});
                }
                bound += wmax * xs;
              }
              tol[r * n + c] = (bf16_act ? 1.0 / 256 : 2e-5) * bound + 1e-6;
            }
          }
          ExpectClose(got, want, tol, n, "ISA vs scalar, " + Name(s, m, n));
          // The thread count changes nothing, bit for bit.
          std::vector<float> threaded = RunMatMul(t, p, &pool);
          EXPECT_EQ(threaded, got) << "threaded, " << Name(s, m, n);
        }
      }
    }
  }
}

// A row's output never depends on the other rows of the call (M, its place
// in a register tile) nor on N: every row of an M-row product equals, bit for
// bit, the 1-row product of that row alone, on every ISA and type.
TEST(MatMulTest, RowsAreIndependentOfTheBatch) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    SCOPED_TRACE(t.name);
    uint32_t seed = 500;
    for (const Shape& s : Shapes()) {
      for (int64_t m : {2, 5, 17}) {
        const int64_t n = 23;
        Problem p = MakeProblem(s.type, m, n, s.k, seed++);
        const std::vector<float> all = RunMatMul(t, p, &pool);
        for (int64_t r = 0; r < m; ++r) {
          Problem one = p;
          one.m = 1;
          one.x.assign(p.x.begin() + r * s.k, p.x.begin() + (r + 1) * s.k);
          const std::vector<float> y = RunMatMul(t, one, r % 2 == 0 ? &pool : nullptr);
          const std::vector<float> want(all.begin() + r * n, all.begin() + (r + 1) * n);
          ASSERT_EQ(y, want) << "row " << r << " of " << Name(s, m, n);
          // N as well: the first 7 weight rows alone.
          Problem head = one;
          head.n = 7;
          head.w.resize(7 * p.row_bytes);
          const std::vector<float> y7 = RunMatMul(t, head, nullptr);
          ASSERT_EQ(y7, std::vector<float>(want.begin(), want.begin() + 7))
              << "first 7 outputs of row " << r << ", " << Name(s, m, n);
        }
      }
    }
  }
}

// MatMulMany (one parallel region, X quantized once per format) gives
// exactly the separate products, for a mix of shared and distinct formats.
TEST(MatMulTest, ManyEqualsSeparateCalls) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  const GgmlType types[] = {GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ4_0};
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    SCOPED_TRACE(t.name);
    for (int64_t m : {1, 7}) {
      std::vector<Problem> ps;
      for (int i = 0; i < 4; ++i) ps.push_back(MakeProblem(types[i], m, 9 + 4 * i, 512, 900 + i));
      for (int i = 1; i < 4; ++i) ps[i].x = ps[0].x;  // one shared X
      std::vector<std::vector<float>> ys(4);
      MatMulArgs args[4];
      for (int i = 0; i < 4; ++i) {
        ys[i].assign(m * ps[i].n, -1.0f);
        args[i].w_type = ps[i].type;
        args[i].w = ps[i].w.data();
        args[i].x = ps[0].x.data();
        args[i].y = ys[i].data();
        args[i].m = m;
        args[i].n = ps[i].n;
        args[i].k = 512;
        args[i].pool = &pool;
      }
      MatMulMany(t, args, 4);
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(ys[i], RunMatMul(t, ps[i], nullptr)) << "product " << i << ", M=" << m;
      }
    }
  }
}

// Every register-tile kernel, called directly with each (nr, nc) its table
// entry allows: each output equals, bit for bit, the 1 x 1 call on that
// (weight row, activation row) pair, for K with a 64-block chunk boundary
// and an odd block count. MatMul relies on this for its tails (N not a
// multiple of tile_rows, M not a multiple of tile_cols).
TEST(MatMulTest, TileKernelsAreIndependentOfTheTileShape) {
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    SCOPED_TRACE(t.name);
    for (int f = 0; f < kNumWeightFormats; ++f) {
      const MatMulKernel& kern = t.matmul[f];
      if (kern.tile == nullptr) continue;
      ASSERT_GE(kern.tile_rows, 1);
      ASSERT_LE(kern.tile_rows, kMaxTileRows);
      ASSERT_GE(kern.tile_cols, 1);
      ASSERT_LE(kern.tile_cols, kMaxTileCols);
      GgmlType type = GgmlType::kF32;
      for (GgmlType g : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ4_0,
                         GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_K,
                         GgmlType::kQ6_K, GgmlType::kQ4_1, GgmlType::kQ5_1,
                         GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kQ2_K,
                         GgmlType::kQ3_K, GgmlType::kMXFP4}) {
        if (static_cast<int>(ToWeightFormat(g)) == f) type = g;
      }
      for (int64_t k : {int64_t{32}, int64_t{2144}}) {
        const int rows = kern.tile_rows, cols = kern.tile_cols;
        Problem p = MakeProblem(type, cols, rows, k, 1300 + f);
        const size_t xq_stride = kern.act == ActFormat::kF32
                                     ? static_cast<size_t>(k) * sizeof(float)
                                     : ActRowBytes(kern.act, k);
        std::vector<uint8_t> xq_buf(xq_stride * cols + 64);
        const void* xq = p.x.data();
        if (kern.act != ActFormat::kF32) {
          for (int c = 0; c < cols; ++c) {
            kern.quantize(p.x.data() + c * k, xq_buf.data() + c * xq_stride, k);
          }
          xq = xq_buf.data();
        }
        // one[c * rows + r]: the 1 x 1 tile of weight row r, activation row c.
        std::vector<float> one(rows * cols);
        for (int c = 0; c < cols; ++c) {
          for (int r = 0; r < rows; ++r) {
            kern.tile(k, p.w.data() + r * p.row_bytes, p.row_bytes, 1,
                      static_cast<const char*>(xq) + c * xq_stride, xq_stride, 1,
                      &one[c * rows + r], 1);
          }
        }
        for (int nr = 1; nr <= rows; ++nr) {
          for (int nc = 1; nc <= cols; ++nc) {
            std::vector<float> y(rows * cols, -7.0f);
            kern.tile(k, p.w.data(), p.row_bytes, nr, xq, xq_stride, nc, y.data(), rows);
            for (int c = 0; c < cols; ++c) {
              for (int r = 0; r < rows; ++r) {
                const float want = r < nr && c < nc ? one[c * rows + r] : -7.0f;
                ASSERT_EQ(y[c * rows + r], want)
                    << TypeName(type) << " K=" << k << " tile " << nr << "x" << nc
                    << ", weight row " << r << ", activation row " << c;
              }
            }
          }
        }
      }
    }
  }
}

TEST(MatMulTest, StridesAndActiveIsa) {
  Problem p = MakeProblem(GgmlType::kQ4_K, 5, 9, 512, 7);
  const int64_t xs = 512 + 40, ys = 9 + 3;
  const size_t ws = p.row_bytes + 32;
  std::vector<float> x(5 * xs, NAN), y(5 * ys, -1.0f);
  std::vector<uint8_t> w(9 * ws, 0xee);
  for (int r = 0; r < 5; ++r) std::copy_n(p.x.data() + r * 512, 512, x.data() + r * xs);
  for (int r = 0; r < 9; ++r) std::copy_n(p.w.data() + r * p.row_bytes, p.row_bytes, w.data() + r * ws);
  MatMulArgs a;
  a.w_type = GgmlType::kQ4_K;
  a.w = w.data();
  a.w_row_bytes = ws;
  a.x = x.data();
  a.x_row_stride = xs;
  a.y = y.data();
  a.y_row_stride = ys;
  a.m = 5;
  a.n = 9;
  a.k = 512;
  MatMul(a);  // the active (best) ISA
  std::vector<float> packed = RunMatMul(Kernels(), p, nullptr);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 9; ++c) EXPECT_EQ(y[r * ys + c], packed[r * 9 + c]);
    for (int c = 9; c < ys; ++c) EXPECT_EQ(y[r * ys + c], -1.0f) << "wrote past N";
  }
}

TEST(MatMulTest, SupportedTypesAndEmptyShapes) {
  EXPECT_TRUE(MatMulSupports(GgmlType::kQ5_0));
  EXPECT_TRUE(MatMulSupports(GgmlType::kQ4_1));
  EXPECT_TRUE(MatMulSupports(GgmlType::kQ5_1));
  EXPECT_TRUE(MatMulSupports(GgmlType::kIQ4_NL));
  EXPECT_TRUE(MatMulSupports(GgmlType::kIQ4_XS));
  EXPECT_TRUE(MatMulSupports(GgmlType::kMXFP4));
  EXPECT_TRUE(MatMulSupports(GgmlType::kBF16));
  EXPECT_TRUE(MatMulSupports(GgmlType::kQ2_K));
  EXPECT_TRUE(MatMulSupports(GgmlType::kQ3_K));
  EXPECT_FALSE(MatMulSupports(GgmlType::kQ8_1));
  EXPECT_FALSE(MatMulSupports(GgmlType::kI32));
  float y[4] = {1, 2, 3, 4};
  const float x[4] = {0, 0, 0, 0};
  MatMulArgs a;
  a.w_type = GgmlType::kF32;
  a.w = x;
  a.x = x;
  a.y = y;
  a.m = 0;
  a.n = 4;
  a.k = 1;
  MatMul(a);  // nothing to do
  EXPECT_EQ(y[0], 1.0f);
  a.m = 1;
  a.k = 0;
  MatMul(a);  // empty dot products are zero
  EXPECT_EQ(y[3], 0.0f);
}

TEST(MatMulDeathTest, RejectsBadShapes) {
  float buf[64] = {};
  MatMulArgs a;
  a.w_type = GgmlType::kQ4_0;
  a.w = buf;
  a.x = buf;
  a.y = buf;
  a.m = 1;
  a.n = 1;
  a.k = 33;
  EXPECT_DEATH(MatMul(a), "multiple");
  a.w_type = GgmlType::kQ8_1;
  a.k = 256;
  EXPECT_DEATH(MatMul(a), "does not support");
}

}  // namespace
}  // namespace weft::kernels
