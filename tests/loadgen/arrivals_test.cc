#include "loadgen/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace weft::loadgen {
namespace {

// Mean and coefficient of variation of the gaps.
void GapStats(const std::vector<double>& t, double* mean, double* cv) {
  std::vector<double> gaps;
  double prev = 0;
  for (double x : t) {
    gaps.push_back(x - prev);
    prev = x;
  }
  *mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / gaps.size();
  double var = 0;
  for (double g : gaps) var += (g - *mean) * (g - *mean);
  var /= gaps.size();
  *cv = std::sqrt(var) / *mean;
}

TEST(ArrivalsTest, SeededAndMonotonic) {
  ArrivalConfig c{2.0, 1.0, 42};
  std::vector<double> a = ArrivalTimes(c, 100), b = ArrivalTimes(c, 100);
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 100u);
  EXPECT_GT(a[0], 0);
  for (size_t i = 1; i < a.size(); ++i) EXPECT_GE(a[i], a[i - 1]);
  c.seed = 43;
  EXPECT_NE(ArrivalTimes(c, 100), a);
  EXPECT_TRUE(ArrivalTimes(c, 0).empty());
}

TEST(ArrivalsTest, PoissonMeanRateAndSpread) {
  double mean, cv;
  GapStats(ArrivalTimes({4.0, 1.0, 7}, 20000), &mean, &cv);
  EXPECT_NEAR(mean, 0.25, 0.25 * 0.03);  // 1/rate
  EXPECT_NEAR(cv, 1.0, 0.05);            // exponential gaps: CV 1
}

TEST(ArrivalsTest, GammaKeepsTheRateAndChangesTheSpread) {
  double mean, cv;
  GapStats(ArrivalTimes({4.0, 0.25, 7}, 20000), &mean, &cv);
  EXPECT_NEAR(mean, 0.25, 0.25 * 0.06);
  EXPECT_NEAR(cv, 2.0, 0.15);  // CV = 1/sqrt(shape)
  GapStats(ArrivalTimes({4.0, 4.0, 7}, 20000), &mean, &cv);
  EXPECT_NEAR(mean, 0.25, 0.25 * 0.03);
  EXPECT_NEAR(cv, 0.5, 0.03);
}

}  // namespace
}  // namespace weft::loadgen
