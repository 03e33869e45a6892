#include "tensor/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/blocks.h"
#include "tensor/types.h"

namespace weft {
namespace {

const GgmlType kAllRefTypes[] = {
    GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0,
    GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
    GgmlType::kQ8_1, GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K,
    GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ8_K, GgmlType::kIQ4_NL,
    GgmlType::kIQ4_XS,
};

TEST(BlocksTest, SizesMatchTypeTable) {
  EXPECT_EQ(TypeTraits(GgmlType::kQ4_0).type_size, sizeof(BlockQ4_0));
  EXPECT_EQ(TypeTraits(GgmlType::kQ4_1).type_size, sizeof(BlockQ4_1));
  EXPECT_EQ(TypeTraits(GgmlType::kQ5_0).type_size, sizeof(BlockQ5_0));
  EXPECT_EQ(TypeTraits(GgmlType::kQ5_1).type_size, sizeof(BlockQ5_1));
  EXPECT_EQ(TypeTraits(GgmlType::kQ8_0).type_size, sizeof(BlockQ8_0));
  EXPECT_EQ(TypeTraits(GgmlType::kQ8_1).type_size, sizeof(BlockQ8_1));
  EXPECT_EQ(TypeTraits(GgmlType::kQ2_K).type_size, sizeof(BlockQ2_K));
  EXPECT_EQ(TypeTraits(GgmlType::kQ3_K).type_size, sizeof(BlockQ3_K));
  EXPECT_EQ(TypeTraits(GgmlType::kQ4_K).type_size, sizeof(BlockQ4_K));
  EXPECT_EQ(TypeTraits(GgmlType::kQ5_K).type_size, sizeof(BlockQ5_K));
  EXPECT_EQ(TypeTraits(GgmlType::kQ6_K).type_size, sizeof(BlockQ6_K));
  EXPECT_EQ(TypeTraits(GgmlType::kQ8_K).type_size, sizeof(BlockQ8_K));
  EXPECT_EQ(TypeTraits(GgmlType::kQ4_K).block_size, kQK_K);
  EXPECT_EQ(TypeTraits(GgmlType::kQ4_0).block_size, kQK4_0);
}

TEST(QuantTest, SupportedTypes) {
  for (GgmlType t : kAllRefTypes) {
    EXPECT_TRUE(CanQuantize(t)) << TypeName(t);
    EXPECT_TRUE(CanDequantize(t)) << TypeName(t);
  }
  EXPECT_FALSE(CanDequantize(GgmlType::kIQ2_XXS));
  EXPECT_FALSE(CanQuantize(GgmlType::kI32));
}

TEST(QuantTest, BadArgumentsAreErrors) {
  std::vector<float> x(512, 1.0f);
  std::vector<uint8_t> buf(4096);
  EXPECT_FALSE(QuantizeRow(GgmlType::kQ4_0, x.data(), buf.data(), 33).ok());
  EXPECT_FALSE(QuantizeRow(GgmlType::kQ4_K, x.data(), buf.data(), 128).ok());
  EXPECT_FALSE(QuantizeRow(GgmlType::kQ8_0, x.data(), buf.data(), -32).ok());
  EXPECT_FALSE(DequantizeRow(GgmlType::kQ6_K, buf.data(), x.data(), 255).ok());
  const Status s = DequantizeRow(GgmlType::kIQ3_S, buf.data(), x.data(), 256);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_FALSE(QuantizeRows(GgmlType::kQ4_0, x.data(), buf.data(), 2, 48).ok());
  EXPECT_TRUE(QuantizeRow(GgmlType::kQ4_0, x.data(), buf.data(), 0).ok());
}

struct Bound {
  GgmlType type;
  double max_rel_rmse;  // rmse(dequant - x) / rms(x) on N(0, 1) data
};

// ggml's formats carry 2.6-8.5 bits per weight; each bound is ~1.3x the
// error measured on this data (f16 2.1e-4, bf16 1.7e-3, q4_0 0.086, q4_1
// 0.078, q5_0 0.043, q5_1 0.038, q8_0/q8_1 0.0054, q2_K 0.30, q3_K 0.15,
// q4_K 0.071, q5_K 0.036, q6_K 0.018, q8_K 0.0068).
const Bound kBounds[] = {
    {GgmlType::kF32, 0.0},     {GgmlType::kF16, 3e-4},
    {GgmlType::kBF16, 2.2e-3}, {GgmlType::kQ4_0, 0.11},
    {GgmlType::kQ4_1, 0.10},   {GgmlType::kQ5_0, 0.056},
    {GgmlType::kQ5_1, 0.05},   {GgmlType::kQ8_0, 0.007},
    {GgmlType::kQ8_1, 0.007},  {GgmlType::kQ2_K, 0.38},
    {GgmlType::kQ3_K, 0.20},   {GgmlType::kQ4_K, 0.093},
    {GgmlType::kQ5_K, 0.047},  {GgmlType::kQ6_K, 0.023},
    {GgmlType::kQ8_K, 0.009},
};

class RoundTripTest : public ::testing::TestWithParam<Bound> {};

TEST_P(RoundTripTest, ErrorWithinBound) {
  const GgmlType t = GetParam().type;
  constexpr int64_t kRows = 16, kCols = 1024;
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(kRows * kCols);
  for (float& v : x) v = normal(rng);
  const uint64_t row_bytes = RowBytes(t, kCols).value();
  std::vector<uint8_t> q(kRows * row_bytes);
  ASSERT_TRUE(QuantizeRows(t, x.data(), q.data(), kRows, kCols, 3).ok());
  std::vector<float> y(kCols);
  double err2 = 0, sig2 = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_TRUE(
        DequantizeRow(t, q.data() + r * row_bytes, y.data(), kCols).ok());
    for (int64_t j = 0; j < kCols; ++j) {
      const double d = static_cast<double>(y[j]) - x[r * kCols + j];
      err2 += d * d;
      sig2 += static_cast<double>(x[r * kCols + j]) * x[r * kCols + j];
    }
  }
  const double rel = std::sqrt(err2 / sig2);
  EXPECT_LE(rel, GetParam().max_rel_rmse) << TypeName(t);
  RecordProperty("rel_rmse", std::to_string(rel));
}

TEST_P(RoundTripTest, ZerosStayZeroAndScaleInvariance) {
  const GgmlType t = GetParam().type;
  const int64_t n = 512;
  std::vector<float> zeros(n, 0.0f), y(n, 1.0f);
  std::vector<uint8_t> q(RowBytes(t, n).value());
  ASSERT_TRUE(QuantizeRow(t, zeros.data(), q.data(), n).ok());
  ASSERT_TRUE(DequantizeRow(t, q.data(), y.data(), n).ok());
  for (float v : y) ASSERT_EQ(v, 0.0f);
}

TEST_P(RoundTripTest, NonFiniteInputDoesNotCrash) {
  const GgmlType t = GetParam().type;
  const int64_t n = 512;
  std::vector<float> x(n, 0.5f);
  x[3] = std::numeric_limits<float>::infinity();
  x[100] = std::numeric_limits<float>::quiet_NaN();
  x[300] = -std::numeric_limits<float>::infinity();
  x[400] = 1e30f;
  std::vector<uint8_t> q(RowBytes(t, n).value());
  std::vector<float> y(n);
  EXPECT_TRUE(QuantizeRow(t, x.data(), q.data(), n).ok());
  EXPECT_TRUE(DequantizeRow(t, q.data(), y.data(), n).ok());
}

TEST_P(RoundTripTest, ThreadCountDoesNotChangeBytes) {
  const GgmlType t = GetParam().type;
  constexpr int64_t kRows = 7, kCols = 768;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> x(kRows * kCols);
  for (float& v : x) v = normal(rng);
  const uint64_t row_bytes = RowBytes(t, kCols).value();
  std::vector<uint8_t> a(kRows * row_bytes), b(a.size()), c(a.size());
  ASSERT_TRUE(QuantizeRows(t, x.data(), a.data(), kRows, kCols, 1).ok());
  ASSERT_TRUE(QuantizeRows(t, x.data(), b.data(), kRows, kCols, 4).ok());
  for (int64_t r = 0; r < kRows; ++r) {
    ASSERT_TRUE(
        QuantizeRow(t, x.data() + r * kCols, c.data() + r * row_bytes, kCols)
            .ok());
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
}

TEST_P(RoundTripTest, UnalignedBuffers) {
  const GgmlType t = GetParam().type;
  const int64_t n = 256;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = std::sin(0.1f * i);
  const uint64_t nbytes = RowBytes(t, n).value();
  std::vector<uint8_t> aligned(nbytes), shifted(nbytes + 1);
  ASSERT_TRUE(QuantizeRow(t, x.data(), aligned.data(), n).ok());
  ASSERT_TRUE(QuantizeRow(t, x.data(), shifted.data() + 1, n).ok());
  EXPECT_EQ(0, std::memcmp(aligned.data(), shifted.data() + 1, nbytes));
  std::vector<float> y1(n), y2(n);
  ASSERT_TRUE(DequantizeRow(t, aligned.data(), y1.data(), n).ok());
  ASSERT_TRUE(DequantizeRow(t, shifted.data() + 1, y2.data(), n).ok());
  EXPECT_EQ(y1, y2);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, RoundTripTest, ::testing::ValuesIn(kBounds),
                         [](const auto& info) {
                           return std::string(TypeName(info.param.type));
                         });

TEST(QuantTest, Q8KBlockSums) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 37) - 18.0f;
  BlockQ8_K b;
  ASSERT_TRUE(QuantizeRow(GgmlType::kQ8_K, x.data(), &b, 256).ok());
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += b.qs[g * 16 + i];
    EXPECT_EQ(b.bsums[g], sum);
  }
}

TEST(QuantTest, Q8_0ExactOnRepresentableValues) {
  // Integers in [-127, 127] with amax 127 give d = 1 and exact codes.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i)
    x[i] = static_cast<float>(i * 8 - 127 + (i == 0));
  x[5] = 127;
  BlockQ8_0 b;
  ASSERT_TRUE(QuantizeRow(GgmlType::kQ8_0, x.data(), &b, 32).ok());
  std::vector<float> y(32);
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ8_0, &b, y.data(), 32).ok());
  EXPECT_EQ(x, y);
}

}  // namespace
}  // namespace weft
