// The AVX-512 table with AVX-512 emulated (avx512_emulated.h). kernels_test
// runs it through every matmul check the native tables get (against the
// scalar twin on odd shapes, bitwise independence of M, N, tiles and
// threads: TablesUnderTest in matmul_testing.h) and the golden tests run
// the models on it. Here: that it really holds the AVX-512 kernels, the
// emulated BF16 conversion on its edge cases, that its VNNI Q4_0 / Q5_0 x8
// tiles give the AVX2 tiles' bits and its pair tiles the x8 tiles' bits,
// and, on a CPU with AVX-512, that the native table gives the emulated
// bits.
#include "tests/kernels/avx512_emulated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/matmul.h"
#include "matmul_testing.h"
#include "tensor/half.h"
#include "util/strings.h"

namespace weft::kernels {
namespace {

using testing::EmulatedAvx512Table;
using testing::MakeProblem;
using testing::Problem;
using testing::RunMatMul;

constexpr WeightFormat kAvx512Formats[] = {
    WeightFormat::kQ4_0, WeightFormat::kQ5_0, WeightFormat::kQ8_0,
    WeightFormat::kF32,  WeightFormat::kF16,  WeightFormat::kBF16};

TEST(Avx512EmulatedTest, HoldsTheAvx512Kernels) {
  if (!IsaSupported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const KernelTable& emu = EmulatedAvx512Table();
  const KernelTable& avx2 = GetKernels(Isa::kAvx2);
  EXPECT_STREQ(emu.name, "avx512-emulated");
  for (WeightFormat f : kAvx512Formats) {
    const int i = static_cast<int>(f);
    EXPECT_NE(emu.matmul[i].dot, nullptr) << i;
    EXPECT_NE(emu.matmul[i].dot, avx2.matmul[i].dot) << "format " << i;
  }
  EXPECT_EQ(emu.matmul[static_cast<int>(WeightFormat::kBF16)].act,
            ActFormat::kBF16);
  for (WeightFormat f :
       {WeightFormat::kQ4_0, WeightFormat::kQ5_0, WeightFormat::kQ8_0}) {
    const int i = static_cast<int>(f);
    EXPECT_NE(emu.matmul_x8[i].tile, avx2.matmul_x8[i].tile) << "x8 " << i;
    EXPECT_NE(emu.matmul_x8[i].pair_tile, nullptr) << "x8 " << i;
  }
  EXPECT_NE(emu.read_bytes, avx2.read_bytes);
  EXPECT_NE(emu.scores_f16, avx2.scores_f16);
  EXPECT_NE(emu.wsum_f16, avx2.wsum_f16);
}

uint16_t Bf16Bits(float f) {
  const KernelTable& emu = EmulatedAvx512Table();
  const MatMulKernel& k = emu.matmul[static_cast<int>(WeightFormat::kBF16)];
  std::vector<uint16_t> out(32, 0xdead);
  const float x[1] = {f};
  k.quantize(x, out.data(), 1);
  for (int i = 1; i < 32; ++i) EXPECT_EQ(out[i], 0) << "padding " << i;
  return out[0];
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// vcvtneps2bf16: round to nearest, ties to even; NaN stays NaN (quiet);
// denormals become zero; infinities and the largest values round as the
// bits say.
TEST(Avx512EmulatedTest, Bf16ConversionEdgeCases) {
  if (!IsaSupported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  EXPECT_EQ(Bf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(Bf16Bits(-2.0f), 0xc000);
  EXPECT_EQ(Bf16Bits(FromBits(0x3f808000u)), 0x3f80);  // tie, even below
  EXPECT_EQ(Bf16Bits(FromBits(0x3f818000u)), 0x3f82);  // tie, even above
  EXPECT_EQ(Bf16Bits(FromBits(0x3f808001u)), 0x3f81);  // above the tie
  EXPECT_EQ(Bf16Bits(FromBits(0x3f807fffu)), 0x3f80);  // below the tie
  EXPECT_EQ(Bf16Bits(FromBits(0x00000001u)), 0x0000);  // denormal
  EXPECT_EQ(Bf16Bits(FromBits(0x80400000u)), 0x8000);  // negative denormal
  EXPECT_EQ(Bf16Bits(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(Bf16Bits(FromBits(0x7f7fffffu)), 0x7f80);  // max float rounds up
  EXPECT_EQ(Bf16Bits(FromBits(0x7f800001u)),
            0x7fc0);  // signalling NaN, quieted
  EXPECT_EQ(Bf16Bits(FromBits(0xffc12345u)), 0xffc1);
}

std::string Name(GgmlType t, int64_t m, int64_t k, bool x8) {
  return StrFormat("%s%s M=%lld K=%lld", std::string(TypeName(t)).c_str(),
                   x8 ? " x8" : "", static_cast<long long>(m),
                   static_cast<long long>(k));
}

// The VNNI Q4_0 / Q5_0 / Q2_K .. Q6_K / IQ4_XS / MXFP4 x8 tiles compute the AVX2 tiles'
// exact integer block sums and then the same float operations
// (x8_vnni_impl.h): the AVX2 table's bits, for every M (the AVX2 Q5_0 and
// Q6_K tiles switch to their wide forms above 4 and 3 rows; the AVX2 Q4_K
// tile takes 3 rows a call, the VNNI ones 4).
TEST(Avx512EmulatedTest, VnniTilesGiveTheAvx2Bits) {
  if (!IsaSupported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const KernelTable& avx2 = GetKernels(Isa::kAvx2);
  const KernelTable& emu = EmulatedAvx512Table();
  uint32_t seed = 7300;
  for (GgmlType type :
       {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
        GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kIQ4_XS, GgmlType::kMXFP4}) {
    const std::vector<int64_t> ks = TypeTraits(type).block_size == 256
                                        ? std::vector<int64_t>{256, 768, 2304}
                                        : std::vector<int64_t>{32, 608, 2144};
    for (int64_t k : ks) {
      for (int64_t m : {1, 3, 4, 5, 7, 17}) {
        // N = 67: 16-row pair tiles and a 3-row x8 tile; 77: a 13-row pair.
        for (int64_t n : {67, 77}) {
          Problem p = MakeProblem(type, m, n, k, seed++);
          EXPECT_EQ(RunMatMul(emu, p, nullptr, true),
                    RunMatMul(avx2, p, nullptr, true))
              << Name(type, m, k, true) << " N=" << n;
        }
      }
    }
  }
}

// The pair tiles (two x8 groups a call, avx512_pair_tiles.cc and, for the
// K-quants and IQ4_XS, avx512_pair_kquants.cc) give the x8 tiles' bits, on
// every row count a pair can hold (N = 9 .. 16 past whole pairs), and write
// no output past their rows (the rows after them belong to the next call,
// or lie past y). The emulated table here, the native one too on a CPU with
// AVX-512.
TEST(Avx512EmulatedTest, PairTilesGiveTheX8TileBits) {
  if (!IsaSupported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  std::vector<const KernelTable*> tables = {&EmulatedAvx512Table()};
  if (IsaSupported(Isa::kAvx512)) tables.push_back(&GetKernels(Isa::kAvx512));
  uint32_t seed = 7400;
  for (const KernelTable* table : tables) {
    // Pair tiles at every M (the table takes them from pair_min_m on).
    KernelTable paired = *table, unpaired = *table;
    int n_pairs = 0;
    for (int f = 0; f < kNumWeightFormats; ++f) {
      n_pairs += table->matmul_x8[f].pair_tile != nullptr;
      paired.matmul_x8[f].pair_min_m = 1;
      unpaired.matmul_x8[f].pair_tile = nullptr;
    }
    EXPECT_EQ(n_pairs, 9) << table->name;
    for (GgmlType type :
         {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_K,
          GgmlType::kQ6_K, GgmlType::kQ3_K, GgmlType::kIQ4_XS, GgmlType::kMXFP4}) {
      const std::vector<int64_t> ks = TypeTraits(type).block_size == 256
                                          ? std::vector<int64_t>{256, 2304}
                                          : std::vector<int64_t>{32, 608, 2144};
      for (int64_t k : ks) {
        for (int64_t m : {1, 2, 3, 4}) {
          for (int64_t n : {9, 13, 16, 32, 41, 48 + 15}) {
            Problem p = MakeProblem(type, m, n, k, seed++);
            EXPECT_EQ(RunMatMul(paired, p, nullptr, true),
                      RunMatMul(unpaired, p, nullptr, true))
                << table->name << " " << Name(type, m, k, true) << " N=" << n;
          }
        }
      }
    }
  }
}

// On a CPU with AVX-512 (VNNI), the native table gives the emulated bits:
// the emulation stands for the real kernels. Not BF16: its emulation
// follows the SDM's order of a lane's two products, which a CPU need not.
TEST(Avx512EmulatedTest, NativeTableMatchesEmulation) {
  if (!IsaSupported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  const KernelTable& native = GetKernels(Isa::kAvx512);
  const KernelTable& emu = EmulatedAvx512Table();
  uint32_t seed = 7200;
  const GgmlType types[] = {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0,
                            GgmlType::kF32,  GgmlType::kF16,  GgmlType::kQ4_K,
                            GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kIQ4_NL,
                            GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_1,
                            GgmlType::kQ5_1, GgmlType::kIQ4_XS, GgmlType::kMXFP4};
  for (GgmlType type : types) {
    const std::vector<int64_t> ks = TypeTraits(type).block_size == 256
                                        ? std::vector<int64_t>{256, 2304}
                                        : std::vector<int64_t>{32, 608, 2144};
    for (int64_t k : ks) {
      for (int64_t m : {1, 4, 17}) {
        Problem p = MakeProblem(type, m, 67, k, seed++);
        EXPECT_EQ(RunMatMul(native, p, nullptr), RunMatMul(emu, p, nullptr))
            << Name(type, m, k, false);
        if (type == GgmlType::kQ4_0 || type == GgmlType::kQ5_0 ||
            type == GgmlType::kQ8_0 || type == GgmlType::kQ4_K ||
            type == GgmlType::kQ5_K || type == GgmlType::kQ6_K || type == GgmlType::kIQ4_NL ||
            type == GgmlType::kQ2_K || type == GgmlType::kQ3_K || type == GgmlType::kQ4_1 ||
            type == GgmlType::kQ5_1 || type == GgmlType::kIQ4_XS || type == GgmlType::kMXFP4) {
          EXPECT_EQ(RunMatMul(native, p, nullptr, true),
                    RunMatMul(emu, p, nullptr, true))
              << Name(type, m, k, true);
        }
      }
    }
  }
}

// The attention kernels likewise: scores and weighted sums of several query
// rows over cached f16 / f32 rows, odd sizes.
TEST(Avx512EmulatedTest, NativeAttentionMatchesEmulation) {
  if (!IsaSupported(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  const KernelTable& native = GetKernels(Isa::kAvx512);
  const KernelTable& emu = EmulatedAvx512Table();
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = normal(rng);
    return v;
  };
  for (int64_t n : {13, 64, 72, 256}) {
    for (int nr : {1, 3, 4}) {
      const int64_t np = 37;
      const std::vector<float> q = random(nr * n), k = random(np * n), alpha = random(nr * np);
      std::vector<uint16_t> kh(k.size());
      for (size_t i = 0; i < k.size(); ++i) kh[i] = Fp32ToFp16(k[i]);
      std::vector<const void*> rows(np), rowsh(np);
      for (int64_t p = 0; p < np; ++p) {
        rows[p] = k.data() + p * n;
        rowsh[p] = kh.data() + p * n;
      }
      auto run = [&](const KernelTable& t) {
        std::vector<float> out(4 * nr * np + 2 * nr * n, 0.0f);
        // Each row prefetches itself as `ahead` (no result may change).
        t.scores_f32(q.data(), n, nr, rows.data(), rows.data(), np, n, 0.3f, out.data(), np);
        t.scores_f16(q.data(), n, nr, rowsh.data(), rowsh.data(), np, n, 0.3f,
                     out.data() + nr * np, np);
        float* y = out.data() + 2 * nr * np;
        t.wsum_f32(rows.data(), rows.data(), np, alpha.data(), np, nr, n, y, n);
        t.wsum_f16(rowsh.data(), rowsh.data(), np, alpha.data(), np, nr, n, y + nr * n, n);
        return out;
      };
      EXPECT_EQ(run(native), run(emu)) << "n=" << n << " nr=" << nr;
    }
  }
}

}  // namespace
}  // namespace weft::kernels
