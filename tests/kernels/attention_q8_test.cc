// The attention kernels over Q8_0 KV rows (kernel_table.h scores_q8_0,
// wsum_q8_0): on every table that has them, bitwise the float kernels of
// the table they follow (AVX2's on x86, the scalar one's elsewhere) over
// the rows as q8_0_to_f32 dequantizes them, whatever the call's shape.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#include "tensor/blocks.h"
#include "tensor/half.h"
#include "tests/kernels/tables_under_test.h"

namespace weft::kernels {
namespace {

using testing::TablesUnderTest;

// The table whose scores_f32 / wsum_f32 a table's Q8_0 entries reproduce.
const KernelTable& FloatTableOf(const KernelTable& t) {
  const std::string name = t.name;
  if (name.rfind("avx512", 0) == 0 || name.rfind("amx", 0) == 0) return GetKernels(Isa::kAvx2);
  if (name == "neon") return GetKernels(Isa::kScalar);
  return t;
}

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

std::vector<float> RandomVec(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

const int64_t kDims[] = {32, 64, 96, 128, 256};
const int kRows[] = {1, 2, 3, 4, 5, 7, 16};
const int64_t kPositions[] = {1, 3, 4, 5, 16, 17, 33};

TEST(AttentionQ8Test, ScoresAreTheFloatScoresOfTheDequantizedRows) {
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    if (t.scores_q8_0 == nullptr) continue;
    const KernelTable& ft = FloatTableOf(t);
    for (int64_t n : kDims) {
      for (int64_t np : kPositions) {
        const Q8Rows rows(np, n, static_cast<uint32_t>(n * 100 + np));
        for (int nr : kRows) {
          const std::vector<float> q = RandomVec(nr * n, static_cast<uint32_t>(nr));
          std::vector<float> got(nr * np, -1.0f), want(nr * np, -2.0f);
          t.scores_q8_0(q.data(), n, nr, rows.q8.data(), np, n, 0.125f, got.data(), np);
          ft.scores_f32(q.data(), n, nr, rows.f32.data(), nullptr, np, n, 0.125f, want.data(),
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

TEST(AttentionQ8Test, WsumIsTheFloatWsumOfTheDequantizedRows) {
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    if (t.wsum_q8_0 == nullptr) continue;
    const KernelTable& ft = FloatTableOf(t);
    for (int64_t n : kDims) {
      for (int64_t np : kPositions) {
        const Q8Rows rows(np, n, static_cast<uint32_t>(n * 7 + np));
        for (int nr : kRows) {
          const std::vector<float> alpha = RandomVec(nr * np, static_cast<uint32_t>(nr + 50));
          // Rows of y one element longer than n: the last must stay untouched.
          const int64_t ys = n + 1;
          std::vector<float> got = RandomVec(nr * ys, 3), want = got;
          t.wsum_q8_0(rows.q8.data(), np, alpha.data(), np, nr, n, got.data(), ys);
          ft.wsum_f32(rows.f32.data(), nullptr, np, alpha.data(), np, nr, n, want.data(), ys);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
              << t.name << " n=" << n << " np=" << np << " nr=" << nr;
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::kernels
