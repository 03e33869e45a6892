// The AVX-512 table's VNNI Q8_0 x8 tile (kernels/x8_vnni_impl.h) on any
// AVX2 CPU: x8_vnni_emulated_tile.cc compiles the same header with vpdpbusd
// emulated by SIMDe (the rest of the tile is native AVX2), and this test
// runs it through MatMul in a copy of the AVX2 table. It checks the tile
// against the scalar row-major MatMul on odd shapes, bit for bit independent of
// M, N, the tile columns and the threads; and, where the CPU has AVX-512 VNNI,
// bit for bit equal to the native AVX-512 table (so the emulation stands for
// the real tile).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/packed_x8.h"
#include "matmul_testing.h"
#include "tests/kernels/x8_vnni_emulated_tile.h"
#include "util/strings.h"

namespace weft::kernels {
namespace {

using testing::BlockTolerance;
using testing::ExpectClose;
using testing::MakeProblem;
using testing::Problem;
using testing::RunMatMul;

const KernelTable& EmulatedTable() { return testing::EmulatedVnniTable(); }

std::string Name(int64_t m, int64_t n, int64_t k) {
  return StrFormat("q8_0 x8 vnni M=%lld N=%lld K=%lld",
                   static_cast<long long>(m), static_cast<long long>(n),
                   static_cast<long long>(k));
}

bool HaveAvx2() { return IsaSupported(Isa::kAvx2); }

TEST(X8VnniEmulatedTest, MatchesRowMajorScalar) {
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  const KernelTable& scalar = GetKernels(Isa::kScalar);
  const KernelTable& t = EmulatedTable();
  ThreadPool pool(ThreadPoolOptions{.num_threads = 3});
  uint32_t seed = 7000;
  for (int64_t k : {32, 96, 608, 2144}) {
    for (int64_t m : {1, 3, 4, 5, 17, 255}) {
      for (int64_t n : {1, 5, 67}) {
        if (m == 255 && n != 67) continue;
        Problem p = MakeProblem(GgmlType::kQ8_0, m, n, k, seed++);
        const std::vector<float> want_f = RunMatMul(scalar, p, nullptr);
        const std::vector<float> got = RunMatMul(t, p, nullptr, /*x8=*/true);
        const std::vector<double> want(want_f.begin(), want_f.end());
        ExpectClose(got, want, BlockTolerance(p), n, Name(m, n, k));
        EXPECT_EQ(RunMatMul(t, p, &pool, /*x8=*/true), got)
            << "threaded, " << Name(m, n, k);
      }
    }
  }
}

// A row's outputs do not depend on the other rows of X (M, the tile's
// columns) nor on N.
TEST(X8VnniEmulatedTest, RowsAreIndependentOfTheBatch) {
  if (!HaveAvx2()) GTEST_SKIP() << "no AVX2";
  const KernelTable& t = EmulatedTable();
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  uint32_t seed = 7100;
  for (int64_t k : {96, 2144}) {
    const int64_t m = 7, n = 29;
    Problem p = MakeProblem(GgmlType::kQ8_0, m, n, k, seed++);
    const std::vector<float> all = RunMatMul(t, p, &pool, true);
    for (int64_t r = 0; r < m; ++r) {
      Problem one = p;
      one.m = 1;
      one.x.assign(p.x.begin() + r * k, p.x.begin() + (r + 1) * k);
      const std::vector<float> want(all.begin() + r * n,
                                    all.begin() + (r + 1) * n);
      ASSERT_EQ(RunMatMul(t, one, nullptr, true), want)
          << "row " << r << ", " << Name(m, n, k);
      Problem head = one;
      head.n = 11;  // a group of 8 and a padded one of 3
      head.w.resize(11 * p.row_bytes);
      ASSERT_EQ(RunMatMul(t, head, nullptr, true),
                std::vector<float>(want.begin(), want.begin() + 11))
          << "first 11 outputs of row " << r << ", " << Name(m, n, k);
    }
  }
}

// On a CPU with AVX-512 VNNI, the table's native tile gives the emulated
// one's bits.
TEST(X8VnniEmulatedTest, NativeTileMatchesEmulation) {
  if (!IsaSupported(Isa::kAvx512))
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  const KernelTable& native = GetKernels(Isa::kAvx512);
  const int q8 = static_cast<int>(WeightFormat::kQ8_0);
  ASSERT_NE(native.matmul_x8[q8].tile,
            GetKernels(Isa::kAvx2).matmul_x8[q8].tile)
      << "the AVX-512 table lost its VNNI Q8_0 tile";
  uint32_t seed = 7200;
  for (int64_t k : {32, 608}) {
    for (int64_t m : {1, 4, 17}) {
      Problem p = MakeProblem(GgmlType::kQ8_0, m, 67, k, seed++);
      EXPECT_EQ(RunMatMul(native, p, nullptr, true),
                RunMatMul(EmulatedTable(), p, nullptr, true))
          << Name(m, 67, k);
    }
  }
}

}  // namespace
}  // namespace weft::kernels
