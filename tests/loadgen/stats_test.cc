#include "loadgen/stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace weft::loadgen {
namespace {

TEST(PercentileTest, LinearInterpolationLikeNumpy) {
  // numpy.percentile([1, 2, 3, 4], q) = 1 + 3 * q / 100.
  std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4.0);
  // numpy.percentile([10, 20, 30, 40, 50, 60, 70, 80, 90, 100], 99) = 99.1
  std::vector<double> w = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_NEAR(Percentile(w, 99), 99.1, 1e-12);
  EXPECT_NEAR(Percentile(w, 25), 32.5, 1e-12);
}

TEST(PercentileTest, EdgeCases) {
  EXPECT_EQ(Percentile(std::vector<double>{}, 50), 0.0);
  EXPECT_EQ(Percentile(std::vector<double>{7}, 99), 7.0);
  std::vector<double> v = {1, 2};
  EXPECT_EQ(Percentile(v, -5), 1.0);  // clamped
  EXPECT_EQ(Percentile(v, 500), 2.0);
}

TEST(SummarizeTest, AllFields) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  Distribution d = Summarize(v);
  EXPECT_EQ(d.count, 5);
  EXPECT_DOUBLE_EQ(d.mean, 3.0);
  EXPECT_DOUBLE_EQ(d.min, 1.0);
  EXPECT_DOUBLE_EQ(d.max, 5.0);
  EXPECT_DOUBLE_EQ(d.p50, 3.0);
  EXPECT_DOUBLE_EQ(d.p90, 4.6);
  EXPECT_DOUBLE_EQ(d.p99, 4.96);
  Distribution empty = Summarize(std::vector<double>{});
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.max, 0.0);
}

TEST(TpotTest, Definition) {
  // (E2E - TTFT) / (out - 1)
  ASSERT_TRUE(Tpot(1.3, 0.3, 11).has_value());
  EXPECT_DOUBLE_EQ(*Tpot(1.3, 0.3, 11), 0.1);
  EXPECT_FALSE(Tpot(1.0, 0.5, 1).has_value());
  EXPECT_FALSE(Tpot(1.0, 0.5, 0).has_value());
}

TEST(SloTest, EveryBoundMustHold) {
  Slo none;
  EXPECT_FALSE(none.any());
  EXPECT_TRUE(MeetsSlo(none, 100, 100, 100));
  Slo slo;
  slo.ttft_ms = 3000;
  slo.tpot_ms = 100;
  EXPECT_TRUE(slo.any());
  EXPECT_TRUE(MeetsSlo(slo, 2.9, 0.099, 50));
  EXPECT_TRUE(MeetsSlo(slo, 3.0, 0.1, 50));  // bounds inclusive
  EXPECT_FALSE(MeetsSlo(slo, 3.1, 0.05, 50));
  EXPECT_FALSE(MeetsSlo(slo, 1.0, 0.101, 50));
  EXPECT_TRUE(MeetsSlo(slo, 1.0, std::nullopt, 50));  // single-token output
  slo.e2e_ms = 1000;
  EXPECT_FALSE(MeetsSlo(slo, 0.1, 0.01, 1.5));
}

}  // namespace
}  // namespace weft::loadgen
