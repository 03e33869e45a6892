#include "sampling/transforms.h"

#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/fast_exp.h"

namespace weft::sampling {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<int32_t> Ids(const std::vector<Candidate>& cands) {
  std::vector<int32_t> ids;
  for (const Candidate& c : cands) ids.push_back(c.id);
  return ids;
}

// Candidates with weight = prob, ids 0..n-1.
std::vector<Candidate> FromProbs(const std::vector<double>& probs) {
  std::vector<Candidate> cands;
  for (size_t i = 0; i < probs.size(); ++i) {
    cands.push_back({static_cast<float>(probs[i]), static_cast<int32_t>(i)});
  }
  return cands;
}

TEST(TransformsTest, LogitBiasAddsAndBans) {
  std::vector<float> logits = {1.0f, 2.0f, 3.0f, 4.0f};
  ApplyLogitBias({{0, 1.5f}, {2, -100.0f}, {3, -99.0f}}, logits);
  EXPECT_EQ(logits, (std::vector<float>{2.5f, 2.0f, -kInf, -95.0f}));
}

TEST(TransformsTest, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  std::vector<float> logits = {2.0f, -2.0f, 0.0f, 3.0f};
  ApplyRepetitionPenalty(2.0f, {{0, 1}, {1, 3}, {2, 1}}, logits);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 0.0f, 3.0f}));

  std::vector<float> boost = {2.0f, -2.0f, 0.0f, 3.0f};
  ApplyRepetitionPenalty(0.5f, {{0, 1}, {1, 1}}, boost);
  EXPECT_EQ(boost, (std::vector<float>{4.0f, -1.0f, 0.0f, 3.0f}));

  std::vector<float> off = {2.0f, -2.0f};
  ApplyRepetitionPenalty(1.0f, {{0, 1}, {1, 1}}, off);
  EXPECT_EQ(off, (std::vector<float>{2.0f, -2.0f}));
}

TEST(TransformsTest, PresenceAndFrequencyPenalties) {
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  ApplyPresenceFrequencyPenalty(0.5f, 0.25f, {{1, 1}, {2, 3}}, logits);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 0.25f, -0.25f, 1.0f}));

  std::vector<float> negative = {0.0f, 0.0f};
  ApplyPresenceFrequencyPenalty(-1.0f, -0.5f, {{0, 2}}, negative);
  EXPECT_EQ(negative, (std::vector<float>{2.0f, 0.0f}));
}

TEST(TransformsTest, ArgmaxTiesToLowestIdAndSkipsNaN) {
  EXPECT_EQ(Argmax(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{5.0f, 5.0f}), 0);
  std::vector<float> long_tie(1001, 0.0f);  // past the 8-lane loop
  long_tie[999] = long_tie[1000] = 1.0f;
  EXPECT_EQ(Argmax(long_tie), 999);
  long_tie[3] = 1.0f;
  EXPECT_EQ(Argmax(long_tie), 3);
  EXPECT_EQ(Argmax(std::vector<float>{kNaN, 1.0f, kNaN}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{-kInf, -5.0f}), 1);
  EXPECT_EQ(Argmax(std::vector<float>{-kInf, -kInf}), -1);
  EXPECT_EQ(Argmax(std::vector<float>{kNaN}), -1);
  EXPECT_EQ(Argmax(std::vector<float>{}), -1);
}

TEST(TransformsTest, ExpApproxIsAccurate) {
  EXPECT_EQ(ExpApprox(0.0f), 1.0f);
  for (float x = -86.0f; x <= 80.0f; x += 0.37f) {
    const double want = std::exp(static_cast<double>(x));
    EXPECT_NEAR(ExpApprox(x) / want, 1.0, 3e-7) << x;
  }
  EXPECT_EQ(ExpApprox(-100.0f), 0.0f);
  EXPECT_EQ(ExpApprox(-kInf), 0.0f);
  EXPECT_EQ(ExpApprox(kNaN), 0.0f);
}

TEST(TransformsTest, BuildCandidatesWeighsAndDropsBanned) {
  std::vector<Candidate> cands;
  BuildCandidates(std::vector<float>{1.0f, -kInf, 3.0f, kNaN, 2.0f, -500.0f},
                  2.0f, &cands);
  ASSERT_EQ(Ids(cands), (std::vector<int32_t>{0, 2, 4}));  // -500 underflows
  EXPECT_NEAR(cands[0].weight, std::exp(-1.0), 1e-7);
  EXPECT_EQ(cands[1].weight, 1.0f);
  EXPECT_NEAR(cands[2].weight, std::exp(-0.5), 1e-7);

  BuildCandidates(std::vector<float>{-kInf, kNaN}, 1.0f, &cands);
  EXPECT_TRUE(cands.empty());

  BuildCandidates(std::vector<float>{kInf, 1.0f, kInf}, 1.0f, &cands);
  EXPECT_EQ(Ids(cands), (std::vector<int32_t>{0, 2}));
}

TEST(TransformsTest, MinPDropsRelativeToMaxAndKeepsOrder) {
  // probs 0.05, 0.5, 0.15, 0.3: threshold 0.2 * 0.5 = 0.1.
  std::vector<Candidate> cands = FromProbs({0.05, 0.5, 0.15, 0.3});
  ApplyMinP(0.2f, &cands);
  EXPECT_EQ(Ids(cands), (std::vector<int32_t>{1, 2, 3}));
  ApplyMinP(0.0f, &cands);
  EXPECT_EQ(Ids(cands), (std::vector<int32_t>{1, 2, 3}));
  ApplyMinP(1.0f, &cands);
  EXPECT_EQ(Ids(cands), (std::vector<int32_t>{1}));
}

TEST(TransformsTest, TopKKeepsBestInIdOrderWithIdTies) {
  const std::vector<Candidate> base = FromProbs({0.1, 0.3, 0.3, 0.2, 0.05});
  std::vector<Candidate> cands = base;
  ApplyTopK(2, &cands);
  EXPECT_EQ(Ids(cands), (std::vector<int32_t>{1, 2}));
  cands = base;
  ApplyTopK(3, &cands);
  EXPECT_EQ(Ids(cands), (std::vector<int32_t>{1, 2, 3}));
  cands = base;
  ApplyTopK(4, &cands);
  EXPECT_EQ(Ids(cands), (std::vector<int32_t>{0, 1, 2, 3}));
  cands = base;
  ApplyTopK(1, &cands);
  EXPECT_EQ(Ids(cands), (std::vector<int32_t>{1}));
  for (int32_t off : {0, -1, 5, 100}) {
    cands = base;
    ApplyTopK(off, &cands);
    EXPECT_EQ(Ids(cands), (std::vector<int32_t>{0, 1, 2, 3, 4})) << off;
  }
}

TEST(TransformsTest, TopKOnLargeFlatAndSpreadWeights) {
  // Equal weights: all land in one histogram bin; ties go to lower ids.
  std::vector<Candidate> flat;
  for (int32_t i = 0; i < 10000; ++i) flat.push_back({1.0f, i});
  ApplyTopK(2500, &flat);
  ASSERT_EQ(flat.size(), 2500u);
  EXPECT_EQ(flat.front().id, 0);
  EXPECT_EQ(flat.back().id, 2499);

  // Weights spread over many bins and octaves: keeps exactly the k largest.
  std::vector<Candidate> spread;
  for (int32_t i = 0; i < 3000; ++i) {
    const int32_t rank = (i * 7919) % 3000;  // a permutation of 0..2999
    spread.push_back({std::exp(-0.01f * static_cast<float>(rank)), i});
  }
  ApplyTopK(100, &spread);
  ASSERT_EQ(spread.size(), 100u);
  for (size_t i = 1; i < spread.size(); ++i) {
    EXPECT_LT(spread[i - 1].id, spread[i].id);
  }
  for (const Candidate& c : spread) EXPECT_LT((c.id * 7919) % 3000, 100);
}

TEST(TransformsTest, TopPKeepsSmallestNucleus) {
  // Ranked: id1 0.4, id3 0.3, id2 0.2, id0 0.1.
  const std::vector<Candidate> base = FromProbs({0.1, 0.4, 0.2, 0.3});
  struct Case {
    float top_p;
    std::vector<int32_t> ids;
  };
  for (const Case& c : {Case{0.3f, {1}}, Case{0.5f, {1, 3}},
                        Case{0.75f, {1, 2, 3}}, Case{0.95f, {0, 1, 2, 3}},
                        Case{1.0f, {0, 1, 2, 3}}}) {
    std::vector<Candidate> cands = base;
    ApplyTopP(c.top_p, &cands);
    EXPECT_EQ(Ids(cands), c.ids) << c.top_p;
  }
}

TEST(TransformsTest, TopPOnLargeFlatAndSpreadWeights) {
  // 5000 equal weights (sums exact in double): top_p = 0.5 keeps exactly
  // the 2500 lowest ids.
  std::vector<Candidate> flat;
  for (int32_t i = 0; i < 5000; ++i) flat.push_back({1.0f, i});
  ApplyTopP(0.5f, &flat);
  ASSERT_EQ(flat.size(), 2500u);
  for (int32_t i = 0; i < 2500; ++i) EXPECT_EQ(flat[i].id, i);

  // Weights 2^-r over 40 octaves (r = rank): the mass ranked before r is
  // 2 - 2^(1-r) of a total just under 2, so top_p = 0.9 (~1.8) keeps ranks
  // 0..3 (1.75 before rank 3) and drops rank 4 (1.875 before it).
  std::vector<Candidate> halves;
  for (int32_t i = 0; i < 40; ++i) {
    halves.push_back({std::ldexp(1.0f, -((i * 17) % 40)), i});
  }
  ApplyTopP(0.9f, &halves);
  ASSERT_EQ(halves.size(), 4u);
  for (const Candidate& c : halves) EXPECT_LT((c.id * 17) % 40, 4);
}

TEST(TransformsTest, TopLogitsSortedWithIdTiesAndNoNaN) {
  const std::vector<TokenLogit> top =
      TopLogits(std::vector<float>{1.0f, kNaN, 3.0f, 3.0f, -kInf, 2.0f}, 4);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].id, 2);
  EXPECT_EQ(top[1].id, 3);
  EXPECT_EQ(top[2].id, 5);
  EXPECT_EQ(top[3].id, 0);
  EXPECT_EQ(top[3].logit, 1.0f);
  EXPECT_EQ(TopLogits(std::vector<float>{kNaN, 0.0f}, 5).size(), 1u);
  EXPECT_TRUE(TopLogits(std::vector<float>{1.0f}, 0).empty());
}

TEST(TransformsTest, TopKFastPathMatchesGeneralPath) {
  std::vector<float> logits;
  for (int32_t i = 0; i < 5000; ++i) {
    logits.push_back(static_cast<float>((i * 7919) % 5000) * 0.003f - 7.0f);
  }
  logits[17] = -kInf;
  logits[18] = kNaN;
  for (int32_t k : {1, 2, 40, 128}) {
    for (float t : {0.3f, 1.0f, 2.5f}) {
      std::vector<Candidate> general;
      BuildCandidates(logits, t, &general);
      ApplyTopK(k, &general);
      std::vector<Candidate> fast;
      BuildTopKCandidates(logits, t, k, &fast);
      ASSERT_EQ(Ids(fast), Ids(general)) << k << " " << t;
      for (size_t i = 0; i < fast.size(); ++i) {
        EXPECT_EQ(fast[i].weight, general[i].weight);
      }
    }
  }
}

TEST(TransformsTest, SampleCandidatesInverseCdfInIdOrder) {
  const std::vector<Candidate> cands = {
      {1.0f, 5}, {1.0f, 6}, {1.0f, 7}, {1.0f, 8}};
  EXPECT_EQ(SampleCandidates(cands, 0.0), 5);
  EXPECT_EQ(SampleCandidates(cands, 0.24), 5);
  EXPECT_EQ(SampleCandidates(cands, 0.25), 6);
  EXPECT_EQ(SampleCandidates(cands, 0.6), 7);
  EXPECT_EQ(SampleCandidates(cands, 0.999999), 8);
  EXPECT_EQ(SampleCandidates({}, 0.5), -1);
  const std::vector<Candidate> skewed = {{1.0f, 0}, {3.0f, 1}};
  EXPECT_EQ(SampleCandidates(skewed, 0.2), 0);
  EXPECT_EQ(SampleCandidates(skewed, 0.3), 1);
  // Many blocks: flat weights put u = (i + 0.5) / n on token i.
  std::vector<Candidate> many;
  for (int32_t i = 0; i < 1000; ++i) many.push_back({1.0f, i});
  for (int32_t i : {0, 255, 256, 511, 700, 999}) {
    EXPECT_EQ(SampleCandidates(many, (i + 0.5) / 1000.0), i);
  }
}

}  // namespace
}  // namespace weft::sampling
