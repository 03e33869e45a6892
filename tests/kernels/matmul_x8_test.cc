// MatMul over weights in the x8 layout (packed_x8.h) on every ISA: against
// the scalar row-major MatMul (same int8 activations, so only the float
// summation may differ), independent of M, N, the tile shape and the thread
// count bit for bit, and sharing one activation conversion in MatMulMany.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "kernels/packed_x8.h"
#include "tensor/blocks.h"
#include "matmul_testing.h"
#include "util/strings.h"

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace weft::kernels {
namespace {

using testing::BlockTolerance;
using testing::ExpectClose;
using testing::MakeProblem;
using testing::Problem;
using testing::RunMatMul;
using testing::TablesUnderTest;

constexpr GgmlType kTypes[] = {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0,
                               GgmlType::kQ4_1, GgmlType::kQ5_1,
                               GgmlType::kIQ4_NL, GgmlType::kQ2_K, GgmlType::kQ3_K,
                               GgmlType::kQ4_K,
                               GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_XS,
                               GgmlType::kMXFP4};

std::string Name(GgmlType t, int64_t m, int64_t n, int64_t k) {
  return StrFormat("%s x8 M=%lld N=%lld K=%lld",
                   std::string(TypeName(t)).c_str(), static_cast<long long>(m),
                   static_cast<long long>(n), static_cast<long long>(k));
}

// K values: odd block counts, more than one block.
std::vector<int64_t> Ks(GgmlType t) {
  if (TypeTraits(t).block_size == 256) return {256, 768, 2304};
  return {32, 96, 608, 2144};
}

TEST(MatMulX8Test, Layout) {
  EXPECT_TRUE(CanPackX8(GgmlType::kQ4_0));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ5_0));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ8_0));
  EXPECT_TRUE(CanPackX8(GgmlType::kIQ4_NL));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ4_1));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ5_1));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ4_K));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ2_K));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ3_K));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ5_K));
  EXPECT_TRUE(CanPackX8(GgmlType::kQ6_K));
  EXPECT_TRUE(CanPackX8(GgmlType::kIQ4_XS));
  EXPECT_TRUE(CanPackX8(GgmlType::kMXFP4));
  EXPECT_FALSE(CanPackX8(GgmlType::kQ8_1));
  EXPECT_FALSE(CanPackX8(GgmlType::kF16));
  // Rows rounded up to whole groups of 8.
  EXPECT_EQ(PackedX8Bytes(GgmlType::kQ4_0, 9, 64), size_t{16} * 36);
  EXPECT_EQ(PackedX8Bytes(GgmlType::kQ8_0, 8, 32), size_t{8} * 34);
  EXPECT_EQ(PackedX8Bytes(GgmlType::kQ4_K, 3, 512), size_t{8} * 2 * 148);
  EXPECT_EQ(X8RowBytes(GgmlType::kQ4_0, 64), size_t{36});
  EXPECT_EQ(X8RowBytes(GgmlType::kQ4_K, 512), size_t{296});
  EXPECT_EQ(X8RowBytes(GgmlType::kQ5_K, 512), size_t{360});
  EXPECT_EQ(X8RowBytes(GgmlType::kQ3_K, 512), size_t{228});
  EXPECT_EQ(X8RowBytes(GgmlType::kQ2_K, 512), size_t{168});  // the file's size
  EXPECT_EQ(X8RowBytes(GgmlType::kQ6_K, 512), size_t{420});  // the file's size
  EXPECT_EQ(X8RowBytes(GgmlType::kMXFP4, 64), size_t{34});   // the file's size
  for (const KernelTable* table : TablesUnderTest()) {
    for (GgmlType t : kTypes) {
      const MatMulKernel& k =
          table->matmul_x8[static_cast<int>(ToWeightFormat(t))];
      EXPECT_NE(k.tile, nullptr) << table->name;
      EXPECT_EQ(k.tile_rows, kX8Rows);
      EXPECT_GE(k.tile_cols, 1);
      EXPECT_LE(k.tile_cols, kMaxTileCols);
    }
  }
}

// Every ISA's x8 kernels (the scalar twin included) against the scalar
// row-major kernels, on odd shapes: N not a multiple of 8 (a padded last
// group), M not a multiple of the tile, K with an odd block count.
TEST(MatMulX8Test, MatchesRowMajorScalar) {
  const KernelTable& scalar = GetKernels(Isa::kScalar);
  ThreadPool pool(ThreadPoolOptions{.num_threads = 3});
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    SCOPED_TRACE(t.name);
    uint32_t seed = 2000;
    for (GgmlType type : kTypes) {
      for (int64_t k : Ks(type)) {
        for (int64_t m : {1, 3, 17, 255}) {
          for (int64_t n : {1, 5, 67}) {
            if (m == 255 && n != 67) continue;
            Problem p = MakeProblem(type, m, n, k, seed++);
            const std::vector<float> want_f = RunMatMul(scalar, p, nullptr);
            const std::vector<float> got =
                RunMatMul(t, p, nullptr, /*x8=*/true);
            const std::vector<double> want(want_f.begin(), want_f.end());
            ExpectClose(got, want, BlockTolerance(p), n, Name(type, m, n, k));
            EXPECT_EQ(RunMatMul(t, p, &pool, /*x8=*/true), got)
                << "threaded, " << Name(type, m, n, k);
          }
        }
      }
    }
  }
}

// MXFP4's scalar x8 tile is the reference its SIMD twins give bit for bit
// (exact integer block dots, the same fused float steps): every table's
// tile against the scalar one on odd shapes, with random E8M0 scales that
// include the denormal ones (e = 0, 1) and the largest used.
TEST(MatMulX8Test, MXFP4TilesGiveTheScalarTwinsBits) {
  const KernelTable& scalar = GetKernels(Isa::kScalar);
  uint32_t seed = 6100;
  for (bool wild_scales : {false, true}) {
    for (int64_t k : {32, 96, 608, 2144}) {
      for (int64_t m : {1, 3, 17}) {
        for (int64_t n : {1, 5, 19, 67}) {
          Problem p = MakeProblem(GgmlType::kMXFP4, m, n, k, seed++);
          if (wild_scales) {
            std::mt19937 rng(seed);
            for (size_t b = 0; b < p.w.size() / sizeof(BlockMXFP4); ++b) {
              p.w[b * sizeof(BlockMXFP4)] = static_cast<uint8_t>(b % 5 == 0 ? b % 2 : rng() % 150);
            }
          }
          const std::vector<float> want = RunMatMul(scalar, p, nullptr, /*x8=*/true);
          for (const KernelTable* table : TablesUnderTest()) {
            EXPECT_EQ(RunMatMul(*table, p, nullptr, /*x8=*/true), want)
                << table->name << ", " << Name(p.type, m, n, k) << (wild_scales ? ", wild" : "");
          }
        }
      }
    }
  }
}

#if defined(__aarch64__)
// The NEON table exists in two forms, SMULL + SADALP tiles (any AArch64)
// and SDOT tiles; the CPU picks one and the tests above check that one.
// Here the SMULL form against the scalar reference on every CPU, and both
// forms giving the same bits where the CPU has SDOT (the integer dots are
// exact, the float operations the same).
TEST(MatMulX8Test, NeonSmullAndSdotTiles) {
  const KernelTable& scalar = GetKernels(Isa::kScalar);
  const KernelTable& smull = *NeonKernelTable(false);
  const bool has_sdot = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  uint32_t seed = 5000;
  for (GgmlType type : kTypes) {
    for (int64_t k : Ks(type)) {
      for (int64_t m : {1, 3, 17}) {
        const int64_t n = 67;
        Problem p = MakeProblem(type, m, n, k, seed++);
        const std::vector<float> want_f = RunMatMul(scalar, p, nullptr);
        const std::vector<float> got = RunMatMul(smull, p, &pool, /*x8=*/true);
        const std::vector<double> want(want_f.begin(), want_f.end());
        ExpectClose(got, want, BlockTolerance(p), n, Name(type, m, n, k));
        if (has_sdot) {
          EXPECT_EQ(RunMatMul(*NeonKernelTable(true), p, nullptr, /*x8=*/true), got)
              << "SDOT vs SMULL, " << Name(type, m, n, k);
        }
      }
    }
  }
  if (!has_sdot) GTEST_LOG_(INFO) << "no SDOT on this CPU: only the SMULL tiles checked";
}
#endif

// The AMX table's panel path (amx_panels.cc, amx_kquants.cc, amx_q45k.cc,
// amx_q6k.cc) gives bitwise the AVX-512
// table's results (its x8 tiles and VNNI panels) for every format it
// takes: odd M around the panel's 16 rows and its lower bound, N with a
// lone last group, a partial one and an odd group count (the pair calls),
// odd block counts; threaded too.
TEST(MatMulX8Test, AmxPanelsGiveTheVnniTilesBits) {
  if (!IsaSupported(Isa::kAmx)) GTEST_SKIP() << "no AMX-INT8 on this CPU (or not granted)";
  const KernelTable& amx = GetKernels(Isa::kAmx);
  const KernelTable& avx512 = GetKernels(Isa::kAvx512);
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  uint32_t seed = 7100;
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_1,
                        GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kQ4_K,
                        GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ3_K}) {
    const bool super = TypeTraits(type).block_size == 256;
    const std::vector<int64_t> ks =
        super ? std::vector<int64_t>{256, 768} : std::vector<int64_t>{32, 64, 96, 608};
    for (int64_t k : ks) {
      for (int64_t m : {5, 9, 16, 33}) {
        for (int64_t n : {5, 16, 29, 67}) {
          Problem p = MakeProblem(type, m, n, k, seed++);
          const std::vector<float> want = RunMatMul(avx512, p, nullptr, /*x8=*/true);
          EXPECT_EQ(RunMatMul(amx, p, nullptr, /*x8=*/true), want) << Name(type, m, n, k);
          EXPECT_EQ(RunMatMul(amx, p, &pool, /*x8=*/true), want)
              << "threaded, " << Name(type, m, n, k);
        }
      }
    }
  }
}

// A row's output does not depend on the other activation rows (M, the tile
// columns) nor on N (the rows sharing its group): bit for bit.
TEST(MatMulX8Test, RowsAreIndependentOfTheBatch) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    SCOPED_TRACE(t.name);
    uint32_t seed = 3000;
    for (GgmlType type : kTypes) {
      // M = 7, 12 and 17 take the AVX-512 table's panel path for
      // Q4_0/Q5_0/Q8_0 (one half panel; two, the second partial; a full
      // panel and a partial half), M = 1 its x8 tile.
      const std::vector<int64_t>& ks = Ks(type);
      for (auto [k, m] : {std::pair{ks[1], int64_t{7}}, std::pair{ks[0], int64_t{12}},
                          std::pair{ks[3 % ks.size()], int64_t{17}}}) {
        const int64_t n = 29;
        Problem p = MakeProblem(type, m, n, k, seed++);
        const std::vector<float> all = RunMatMul(t, p, &pool, true);
        for (int64_t r = 0; r < m; ++r) {
          Problem one = p;
          one.m = 1;
          one.x.assign(p.x.begin() + r * k, p.x.begin() + (r + 1) * k);
          const std::vector<float> y =
              RunMatMul(t, one, r % 2 == 0 ? &pool : nullptr, true);
          const std::vector<float> want(all.begin() + r * n,
                                        all.begin() + (r + 1) * n);
          ASSERT_EQ(y, want) << "row " << r << ", " << Name(type, m, n, k);
          Problem head = one;
          head.n = 11;  // a group of 8 and a padded one of 3
          head.w.resize(11 * p.row_bytes);
          ASSERT_EQ(RunMatMul(t, head, nullptr, true),
                    std::vector<float>(want.begin(), want.begin() + 11))
              << "first 11 outputs of row " << r << ", " << Name(type, m, n, k);
        }
      }
    }
  }
}

// x8 and row-major products in one MatMulMany (one shared Q8x32 conversion
// of X) give exactly the separate calls.
TEST(MatMulX8Test, ManyMixesLayouts) {
  ThreadPool pool(ThreadPoolOptions{.num_threads = 2});
  for (const KernelTable* table : TablesUnderTest()) {
    const KernelTable& t = *table;
    SCOPED_TRACE(t.name);
    const int64_t m = 5, k = 256;
    Problem a = MakeProblem(GgmlType::kQ8_0, m, 21, k, 41);
    Problem b = MakeProblem(GgmlType::kQ4_0, m, 13, k, 42);
    Problem c = MakeProblem(GgmlType::kQ8_0, m, 9, k, 43);
    b.x = c.x = a.x;
    std::vector<uint8_t> pa(PackedX8Bytes(a.type, a.n, k)),
        pb(PackedX8Bytes(b.type, b.n, k));
    PackX8(a.type, a.w.data(), 0, a.n, k, pa.data());
    PackX8(b.type, b.w.data(), 0, b.n, k, pb.data());
    std::vector<float> ya(m * a.n), yb(m * b.n), yc(m * c.n);
    MatMulArgs args[3];
    const Problem* ps[3] = {&a, &b, &c};
    const void* ws[3] = {pa.data(), pb.data(), c.w.data()};
    float* ys[3] = {ya.data(), yb.data(), yc.data()};
    for (int i = 0; i < 3; ++i) {
      args[i].w_type = ps[i]->type;
      args[i].w = ws[i];
      args[i].w_x8 = i < 2;
      args[i].x = a.x.data();
      args[i].y = ys[i];
      args[i].m = m;
      args[i].n = ps[i]->n;
      args[i].k = k;
      args[i].pool = &pool;
    }
    MatMulMany(t, args, 3);
    EXPECT_EQ(ya, RunMatMul(t, a, nullptr, true));
    EXPECT_EQ(yb, RunMatMul(t, b, nullptr, true));
    EXPECT_EQ(yc, RunMatMul(t, c, nullptr, false));
  }
}

}  // namespace
}  // namespace weft::kernels
