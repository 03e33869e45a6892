#include "sampling/logprobs.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

namespace weft::sampling {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(LogprobsTest, MatchesLogSoftmax) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, 0.5f};
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l));
  const double lse = std::log(sum);
  const LogprobSummary s = ComputeLogprobs(logits, 1, 3);
  EXPECT_NEAR(s.chosen_logprob, 2.0 - lse, 1e-6);
  EXPECT_EQ(s.chosen_rank, 2);
  ASSERT_EQ(s.top.size(), 3u);
  EXPECT_EQ(s.top[0].token, 2);
  EXPECT_EQ(s.top[1].token, 1);
  EXPECT_EQ(s.top[2].token, 0);
  EXPECT_NEAR(s.top[0].logprob, 3.0 - lse, 1e-6);
  EXPECT_NEAR(s.top[2].logprob, 1.0 - lse, 1e-6);
}

TEST(LogprobsTest, FullTopSumsToOneAndIsOrdered) {
  const std::vector<float> logits = {0.3f, -1.0f, 2.5f, 2.5f, 0.0f, -7.0f};
  const LogprobSummary s = ComputeLogprobs(logits, 5, 20);
  ASSERT_EQ(s.top.size(), logits.size());  // capped at the vocabulary
  double mass = 0.0;
  for (size_t i = 0; i < s.top.size(); ++i) {
    mass += std::exp(s.top[i].logprob);
    if (i > 0) {
      EXPECT_GE(s.top[i - 1].logprob, s.top[i].logprob);
    }
  }
  EXPECT_NEAR(mass, 1.0, 1e-6);
  EXPECT_EQ(s.top[0].token, 2);  // tie with 3: lower id first
  EXPECT_EQ(s.top[1].token, 3);
  EXPECT_EQ(s.chosen_rank, 6);
}

TEST(LogprobsTest, TiesRankLowerIdsFirst) {
  const std::vector<float> logits(4, 0.0f);
  const LogprobSummary s = ComputeLogprobs(logits, 2, 2);
  EXPECT_EQ(s.chosen_rank, 3);
  EXPECT_NEAR(s.chosen_logprob, -std::log(4.0), 1e-6);
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[0].token, 0);
  EXPECT_EQ(s.top[1].token, 1);
}

TEST(LogprobsTest, ZeroAlternatives) {
  const LogprobSummary s = ComputeLogprobs(std::vector<float>{0.0f, 0.0f}, 0, 0);
  EXPECT_TRUE(s.top.empty());
  EXPECT_NEAR(s.chosen_logprob, -std::log(2.0), 1e-6);
  EXPECT_EQ(s.chosen_rank, 1);
}

TEST(LogprobsTest, DescendingInputWorstCaseForInsertion) {
  std::vector<float> logits;
  for (int i = 0; i < 1000; ++i) logits.push_back(static_cast<float>(i) * 0.01f);
  const LogprobSummary s = ComputeLogprobs(logits, 0, 5);
  ASSERT_EQ(s.top.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.top[i].token, 999 - i);
  EXPECT_EQ(s.chosen_rank, 1000);
}

TEST(LogprobsTest, DegenerateInputsGiveNoNaN) {
  // Banned (-inf) tokens: -inf logprob, the rest still normalise.
  LogprobSummary s = ComputeLogprobs(std::vector<float>{-kInf, 0.0f}, 0, 2);
  EXPECT_EQ(s.chosen_logprob, -kInf);
  EXPECT_EQ(s.top[0].token, 1);
  EXPECT_EQ(s.top[0].logprob, 0.0f);

  s = ComputeLogprobs(std::vector<float>{-kInf, -kInf}, 1, 2);
  EXPECT_EQ(s.chosen_logprob, -kInf);
  for (const TokenLogprob& t : s.top) EXPECT_EQ(t.logprob, -kInf);

  s = ComputeLogprobs(std::vector<float>{kInf, 0.0f, kInf}, 0, 3);
  EXPECT_NEAR(s.chosen_logprob, -std::log(2.0), 1e-6);
  ASSERT_EQ(s.top.size(), 3u);
  EXPECT_EQ(s.top[2].logprob, -kInf);

  s = ComputeLogprobs(std::vector<float>{kNaN, 1.0f, 1.0f}, 0, 3);
  EXPECT_EQ(s.chosen_logprob, -kInf);
  ASSERT_EQ(s.top.size(), 2u);  // NaN is not an alternative
  EXPECT_NEAR(s.top[0].logprob, -std::log(2.0), 1e-6);
}

}  // namespace
}  // namespace weft::sampling
