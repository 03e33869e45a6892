// The multi-row attention kernels (kernel_table.h: scores_*, scores_f16t,
// wsum_*, exp_sum): on every supported ISA, each result bitwise independent of the
// call's shape (the batch-invariance contract; wsum is the single-row axpy
// sequence), and within float tolerance of a double-precision reference;
// odd sizes throughout; and the Q8_0 entries against the float ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "tests/kernels/tables_under_test.h"
#include "kernels/kernel_table.h"
#include "tensor/blocks.h"
#include "tensor/half.h"

namespace weft::kernels {
namespace {

using testing::TablesUnderTest;

std::vector<float> RandomVec(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

const int64_t kDims[] = {1, 7, 8, 15, 16, 17, 64, 72, 255, 256};
const int kRows[] = {1, 2, 3, 4, 5, 7, 9, 16};

// Every score of a call is bitwise the score of its (query row, key row)
// computed alone, whatever the numbers of rows and positions (blocks of 8
// with a short last block, float tiles for several rows) and whether the
// call prefetches `ahead` rows (the batched calls do, the lone ones not),
// and within float tolerance of a double-precision dot.
TEST(AttentionKernelsTest, ScoresDependOnlyOnRowAndPosition) {
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    for (int64_t n : kDims) {
      for (int nr : kRows) {
        for (int64_t np : {1, 3, 8, 9, 16, 21}) {
          const int64_t qs = n + 3;  // a row stride other than n
          const std::vector<float> q = RandomVec(nr * qs, 1),
                                   k = RandomVec(np * n, 2);
          std::vector<uint16_t> kh(np * n);
          for (int64_t i = 0; i < np * n; ++i) kh[i] = Fp32ToFp16(k[i]);
          std::vector<const void*> rows(np), rowsh(np);
          for (int64_t p = 0; p < np; ++p) {
            rows[p] = k.data() + p * n;
            rowsh[p] = kh.data() + p * n;
          }
          const std::vector<const void*> ahead(rows.rbegin(), rows.rend()),
              aheadh(rowsh.rbegin(), rowsh.rend());
          const float scale = 0.125f;
          const int64_t os = np + 2;
          std::vector<float> out(nr * os, -1.0f), outh(nr * os, -1.0f);
          t.scores_f32(q.data(), qs, nr, rows.data(), ahead.data(), np, n, scale, out.data(),
                       os);
          t.scores_f16(q.data(), qs, nr, rowsh.data(), aheadh.data(), np, n, scale,
                       outh.data(), os);
          for (int r = 0; r < nr; ++r) {
            for (int64_t p = 0; p < np; ++p) {
              const std::string what =
                  std::string(t.name) + " n=" + std::to_string(n) +
                  " nr=" + std::to_string(nr) + " np=" + std::to_string(np) +
                  " r=" + std::to_string(r) + " p=" + std::to_string(p);
              float one = 0, oneh = 0;
              t.scores_f32(q.data() + r * qs, 0, 1, &rows[p], nullptr, 1, n, scale, &one,
                           0);
              t.scores_f16(q.data() + r * qs, 0, 1, &rowsh[p], nullptr, 1, n, scale,
                           &oneh, 0);
              ASSERT_TRUE(SameBits(out[r * os + p], one)) << what;
              ASSERT_TRUE(SameBits(outh[r * os + p], oneh)) << what;
              double want = 0, wanth = 0;
              for (int64_t i = 0; i < n; ++i) {
                want += double{q[r * qs + i]} * k[p * n + i];
                wanth += double{q[r * qs + i]} * Fp16ToFp32(kh[p * n + i]);
              }
              const double tol =
                  1e-5 * (std::sqrt(static_cast<double>(n)) + 1) * 4;
              EXPECT_NEAR(out[r * os + p], want * scale, tol) << what;
              EXPECT_NEAR(outh[r * os + p], wanth * scale, tol) << what;
            }
            EXPECT_EQ(out[r * os + np], -1.0f) << "wrote past its slots";
          }
        }
      }
    }
  }
}

// Scores over a key tile (scores_f16t): every table's are bitwise the
// scalar table's (the score of a query row and key alone, whatever the rows,
// keys, tile width and the key's lane), within float tolerance of a
// double-precision dot, and nothing past the np keys is written. The tile
// buffer ends at the last key read, so a read past it shows in the
// sanitizer builds.
TEST(AttentionKernelsTest, TileScoresAreTheScalarOnes) {
  const KernelTable& scalar = GetKernels(Isa::kScalar);
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    for (int64_t n : kDims) {
      for (int64_t w : {1, 2, 4, 8, 16}) {
        for (int64_t first : {int64_t{0}, w / 2, w - 1}) {
          for (int64_t np : {int64_t{1}, (w - first + 1) / 2, w - first}) {
            for (int nr : kRows) {
              const int64_t qs = n + 3;
              const std::vector<float> q = RandomVec(nr * qs, 3), k = RandomVec(n * w, 4);
              std::vector<uint16_t> kt(n * w), ahead(n * w, 0);
              for (int64_t i = 0; i < n * w; ++i) kt[i] = Fp32ToFp16(k[i]);
              kt.resize((n - 1) * w + first + np);  // ends at the last key read
              const int64_t os = 19;
              std::vector<float> out(nr * os, -1.0f), want(nr * os, -1.0f);
              t.scores_f16t(q.data(), qs, nr, kt.data() + first, w, np, n, 0.125f, out.data(),
                            os, ahead.data());
              scalar.scores_f16t(q.data(), qs, nr, kt.data() + first, w, np, n, 0.125f,
                                 want.data(), os, nullptr);
              for (int r = 0; r < nr; ++r) {
                for (int64_t p = 0; p < os; ++p) {
                  const std::string what = std::string(t.name) + " n=" + std::to_string(n) +
                                           " w=" + std::to_string(w) +
                                           " first=" + std::to_string(first) +
                                           " np=" + std::to_string(np) +
                                           " nr=" + std::to_string(nr) +
                                           " r=" + std::to_string(r) + " p=" + std::to_string(p);
                  const float got = out[r * os + p];
                  if (p >= np) {
                    ASSERT_EQ(got, -1.0f) << what << ": wrote past its keys";
                    continue;
                  }
                  ASSERT_TRUE(SameBits(got, want[r * os + p])) << what;
                  double dot = 0;
                  for (int64_t e = 0; e < n; ++e) {
                    dot += double{q[r * qs + e]} * Fp16ToFp32(kt[e * w + first + p]);
                  }
                  const double tol = 1e-5 * (std::sqrt(static_cast<double>(n)) + 1) * 4;
                  EXPECT_NEAR(got, dot * 0.125, tol) << what;
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(AttentionKernelsTest, ExpSumMatchesReference) {
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    for (int64_t n : {1, 7, 8, 9, 33, 256}) {
      std::vector<float> x = RandomVec(n, 7);
      float m = x[0];
      for (float v : x) m = std::max(m, v);
      const std::vector<float> x0 = x;
      float got_m = 0;
      const float sum = t.exp_sum(x.data(), n, &got_m);
      EXPECT_EQ(got_m, m) << t.name << " n=" << n;
      double want = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double e = std::exp(double{x0[i]} - m);
        want += e;
        EXPECT_NEAR(x[i], e, 2e-6 * e + 1e-7)
            << t.name << " n=" << n << " i=" << i;
      }
      EXPECT_NEAR(sum, want, 2e-6 * want) << t.name << " n=" << n;
    }
  }
}

// The AVX-512 exp_sum (16-lane exps) gives the AVX2 one's bits: values
// and sum, so a model's outputs do not depend on which of the two runs.
TEST(AttentionKernelsTest, ExpSumIsTheAvx2OneOnEveryX86Table) {
  if (!IsaSupported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const KernelTable& avx2 = GetKernels(Isa::kAvx2);
  for (const KernelTable* table : TablesUnderTest()) {
    if (table == &avx2 || std::string(table->name).rfind("avx", 0) != 0) continue;
    for (int64_t n : {1, 7, 8, 9, 16, 17, 24, 33, 255, 256}) {
      std::vector<float> x = RandomVec(n, 11), y = x;
      float mx = 0, my = 0;
      const float sx = table->exp_sum(x.data(), n, &mx);
      const float sy = avx2.exp_sum(y.data(), n, &my);
      EXPECT_TRUE(SameBits(sx, sy) && SameBits(mx, my)) << table->name << " n=" << n;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(SameBits(x[i], y[i])) << table->name << " n=" << n << " i=" << i;
      }
    }
  }
}

TEST(AttentionKernelsTest, WsumMatchesAxpySequence) {
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    for (int64_t n : kDims) {
      for (int nr : kRows) {
        for (int64_t np : {1, 5, 16, 17, 40}) {
          const std::vector<float> x = RandomVec(np * n, 3), alpha0 = RandomVec(nr * (np + 2), 4);
          std::vector<uint16_t> xh(np * n);
          for (int64_t i = 0; i < np * n; ++i) xh[i] = Fp32ToFp16(x[i]);
          std::vector<const void*> rows(np), rowsh(np);
          for (int64_t p = 0; p < np; ++p) {
            rows[p] = x.data() + p * n;
            rowsh[p] = xh.data() + p * n;
          }
          // Prefetched rows: they must not change a bit.
          const std::vector<const void*> ahead(rows.rbegin(), rows.rend()),
              aheadh(rowsh.rbegin(), rowsh.rend());
          const int64_t as = np + 2, ys = n + 1;
          const std::vector<float> y0 = RandomVec(nr * ys, 5);
          std::vector<float> y = y0, yh = y0, want = y0, wanth = y0;
          t.wsum_f32(rows.data(), ahead.data(), np, alpha0.data(), as, nr, n, y.data(), ys);
          t.wsum_f16(rowsh.data(), aheadh.data(), np, alpha0.data(), as, nr, n, yh.data(), ys);
          for (int r = 0; r < nr; ++r) {
            for (int64_t p = 0; p < np; ++p) {
              t.axpy_f32(alpha0[r * as + p], x.data() + p * n, want.data() + r * ys, n);
              t.axpy_f16(alpha0[r * as + p], xh.data() + p * n, wanth.data() + r * ys, n);
            }
          }
          const std::string what = std::string(t.name) + " n=" + std::to_string(n) +
                                   " nr=" + std::to_string(nr) + " np=" + std::to_string(np);
          for (size_t i = 0; i < y.size(); ++i) {
            ASSERT_TRUE(SameBits(y[i], want[i])) << what << " [" << i << "]";
            ASSERT_TRUE(SameBits(yh[i], wanth[i])) << what << " f16 [" << i << "]";
          }
          // The reference, in double: the padding column of each row stays.
          for (int r = 0; r < nr; ++r) {
            for (int64_t i = 0; i < n; ++i) {
              double s = y0[r * ys + i];
              for (int64_t p = 0; p < np; ++p) s += double{alpha0[r * as + p]} * x[p * n + i];
              EXPECT_NEAR(y[r * ys + i], s, 1e-4 * (np + 1)) << what;
            }
            EXPECT_EQ(y[r * ys + n], y0[r * ys + n]) << what << ": wrote past the row";
          }
        }
      }
    }
  }
}

// Q8_0 KV rows to floats: bitwise d * qs on every ISA.
TEST(AttentionKernelsTest, Q8_0ToF32MatchesReference) {
  std::mt19937 rng(9);
  for (int64_t blocks : {1, 2, 7}) {
    std::vector<BlockQ8_0> b(blocks);
    for (BlockQ8_0& x : b) {
      x.d = Fp32ToFp16(std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng));
      for (int8_t& q : x.qs) q = static_cast<int8_t>(rng() % 256 - 128);
    }
    for (const KernelTable* table : TablesUnderTest()) {
      const KernelTable& t = *table;
      std::vector<float> y(blocks * kQK8_0, -1.0f);
      t.q8_0_to_f32(b.data(), blocks * kQK8_0, y.data());
      for (int64_t i = 0; i < blocks * kQK8_0; ++i) {
        const float want = Fp16ToFp32(b[i / kQK8_0].d) * static_cast<float>(b[i / kQK8_0].qs[i % kQK8_0]);
        ASSERT_TRUE(SameBits(y[i], want)) << t.name << " i=" << i;
      }
    }
  }
}

// The KV cache's f16 store: bitwise Fp32ToFp16 on normal, subnormal,
// overflowing, halfway (ties to even), signed-zero, infinite and NaN inputs.
TEST(AttentionKernelsTest, F32ToF16MatchesScalarConversion) {
  std::vector<float> x = RandomVec(1000, 6);
  for (float& v : x) v *= 100.0f;
  const float specials[] = {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, -70000.0f,
                            6.1e-5f, 5.96e-8f, 2.98e-8f, 1e-10f, -3e-6f,
                            1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, INFINITY, -INFINITY,
                            NAN, -NAN};
  x.insert(x.begin() + 5, std::begin(specials), std::end(specials));
  uint32_t payload_nan = 0x7fa00001;  // a signalling NaN with a payload
  float pn;
  std::memcpy(&pn, &payload_nan, 4);
  x.push_back(pn);
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{17}, static_cast<int64_t>(x.size())}) {
      for (int64_t off : {int64_t{0}, static_cast<int64_t>(x.size()) - n}) {
        std::vector<uint16_t> y(n, 0xdead);
        t.f32_to_f16(x.data() + off, y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(y[i], Fp32ToFp16(x[off + i]))
              << t.name << " n=" << n << " x=" << x[off + i];
        }
      }
    }
  }
}

// The Q8_0 entries (scores_q8_0, wsum_q8_0), on every table that has them:
// bitwise the same table's float kernels over the rows as q8_0_to_f32
// dequantizes them (the model mixes both paths), whatever the call's shape.
// np cached rows of n elements (n a multiple of 32), each padded by a
// block so that a kernel reading past a row's end would read other data.
struct Q8Rows {
  std::vector<std::vector<BlockQ8_0>> blocks;
  std::vector<const void*> q8;      // rows as Q8_0 blocks
  std::vector<std::vector<float>> f;  // dequantized (the reference)
  std::vector<const void*> f32;

  Q8Rows(int64_t np, int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
    blocks.resize(np);
    f.resize(np);
    for (int64_t p = 0; p < np; ++p) {
      blocks[p].resize(n / kQK8_0 + 1);
      for (BlockQ8_0& b : blocks[p]) {
        b.d = Fp32ToFp16(scale(rng));
        for (int8_t& q : b.qs) q = static_cast<int8_t>(rng() % 256 - 128);
      }
      f[p].resize(n);
      GetKernels(Isa::kScalar).q8_0_to_f32(blocks[p].data(), n, f[p].data());
      q8.push_back(blocks[p].data());
      f32.push_back(f[p].data());
    }
  }
};

const int64_t kQ8Dims[] = {32, 64, 96, 128, 256};
const int kQ8Rows[] = {1, 2, 3, 4, 5, 7, 16};
const int64_t kQ8Positions[] = {1, 3, 4, 5, 16, 17, 33};

TEST(AttentionKernelsTest, Q8_0ScoresAreTheFloatScoresOfTheDequantizedRows) {
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    if (t.scores_q8_0 == nullptr) continue;
    for (int64_t n : kQ8Dims) {
      for (int64_t np : kQ8Positions) {
        const Q8Rows rows(np, n, static_cast<uint32_t>(n * 100 + np));
        for (int nr : kQ8Rows) {
          const std::vector<float> q = RandomVec(nr * n, static_cast<uint32_t>(nr));
          std::vector<float> got(nr * np, -1.0f), want(nr * np, -2.0f);
          t.scores_q8_0(q.data(), n, nr, rows.q8.data(), np, n, 0.125f, got.data(), np);
          t.scores_f32(q.data(), n, nr, rows.f32.data(), nullptr, np, n, 0.125f, want.data(),
                        np);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << t.name << " n=" << n << " np=" << np << " nr=" << nr;
          // Each score alone (one row, one position) is the same.
          for (int r = 0; r < nr; r += 3) {
            for (int64_t p = 0; p < np; p += 2) {
              float one = -3.0f;
              t.scores_q8_0(q.data() + r * n, n, 1, &rows.q8[p], 1, n, 0.125f, &one, 1);
              ASSERT_EQ(0, std::memcmp(&one, &got[r * np + p], sizeof one))
                  << t.name << " n=" << n << " r=" << r << " p=" << p;
            }
          }
        }
      }
    }
  }
}

TEST(AttentionKernelsTest, Q8_0WsumIsTheFloatWsumOfTheDequantizedRows) {
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    if (t.wsum_q8_0 == nullptr) continue;
    for (int64_t n : kQ8Dims) {
      for (int64_t np : kQ8Positions) {
        const Q8Rows rows(np, n, static_cast<uint32_t>(n * 7 + np));
        for (int nr : kQ8Rows) {
          const std::vector<float> alpha = RandomVec(nr * np, static_cast<uint32_t>(nr + 50));
          // Rows of y one element longer than n: the last must stay untouched.
          const int64_t ys = n + 1;
          std::vector<float> got = RandomVec(nr * ys, 3), want = got;
          t.wsum_q8_0(rows.q8.data(), np, alpha.data(), np, nr, n, got.data(), ys);
          t.wsum_f32(rows.f32.data(), nullptr, np, alpha.data(), np, nr, n, want.data(), ys);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << t.name << " n=" << n << " np=" << np << " nr=" << nr;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::kernels
