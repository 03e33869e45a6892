#include "sampling/sampler.h"

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/rng.h"

namespace weft::sampling {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> LogProbs(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

// Pseudo-random logits in [-scale, scale) from our own portable RNG.
std::vector<float> RandomLogits(Rng& rng, int32_t n, float scale) {
  std::vector<float> logits(n);
  for (float& l : logits) l = (rng.UniformFloat() * 2.0f - 1.0f) * scale;
  return logits;
}

Sampler MakeSampler(const SamplingParams& p, int32_t vocab) {
  StatusOr<Sampler> s = Sampler::Create(p, vocab);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

// Counts of each token over `draws` samples (without Accept).
std::map<int32_t, int> Histogram(Sampler& sampler,
                                 const std::vector<float>& logits, int draws) {
  std::map<int32_t, int> counts;
  for (int i = 0; i < draws; ++i) ++counts[sampler.Sample(logits).token];
  return counts;
}

TEST(RngTest, MatchesReferenceXoshiro256StarStar) {
  // Values from an independent Python implementation (splitmix64 seeding).
  Rng zero(0);
  EXPECT_EQ(zero.Next(), 0x99ec5f36cb75f2b4ULL);
  EXPECT_EQ(zero.Next(), 0xbf6e1f784956452aULL);
  EXPECT_EQ(zero.Next(), 0x1a5f849d4933e6e0ULL);
  EXPECT_EQ(zero.Next(), 0x6aa594f1262d2d2cULL);
  Rng a(42);
  EXPECT_EQ(a.Next(), 0x15780b2e0c2ec716ULL);
  EXPECT_EQ(a.Next(), 0x6104d9866d113a7eULL);
  Rng b(42);
  EXPECT_DOUBLE_EQ(b.UniformDouble(), 0.08386297105988216);
}

TEST(RngTest, UniformInUnitInterval) {
  Rng rng(7);
  double sum = 0.0;
  for (int i = 0; i < 100000; ++i) {
    const double d = rng.UniformDouble();
    const float f = rng.UniformFloat();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    sum += d;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(SamplerTest, CreateRejectsBadParams) {
  SamplingParams p;
  p.top_p = 0.0f;
  StatusOr<Sampler> s = Sampler::Create(p, 10);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  p = SamplingParams();
  p.logit_bias[10] = 1.0f;
  EXPECT_FALSE(Sampler::Create(p, 10).ok());
}

TEST(SamplerTest, GreedyPicksArgmaxWithLowestIdTie) {
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s = MakeSampler(p, 5);
  EXPECT_EQ(s.Sample(std::vector<float>{0.0f, 2.0f, 1.0f, 2.0f, -1.0f}).token,
            1);
  EXPECT_FALSE(s.Sample(std::vector<float>{0, 0, 0, 0, 1}).has_logprobs);
}

TEST(SamplerTest, GreedyHonoursBiasAndPenalties) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.logit_bias[1] = -100.0f;  // ban the argmax
  Sampler banned = MakeSampler(p, 3);
  EXPECT_EQ(banned.Sample(std::vector<float>{1.0f, 5.0f, 2.0f}).token, 2);

  SamplingParams r;
  r.temperature = 0.0f;
  r.repetition_penalty = 2.0f;
  Sampler rep = MakeSampler(r, 2);
  const std::vector<float> logits = {2.0f, 1.5f};
  EXPECT_EQ(rep.Sample(logits).token, 0);
  const std::vector<int32_t> prompt = {0};
  rep.AcceptPrompt(prompt);  // 2.0 / 2 = 1.0 < 1.5
  EXPECT_EQ(rep.Sample(logits).token, 1);

  SamplingParams f;
  f.temperature = 0.0f;
  f.frequency_penalty = 0.2f;
  Sampler freq = MakeSampler(f, 2);
  freq.AcceptPrompt(prompt);  // the prompt does not count for frequency
  const std::vector<float> close = {1.0f, 0.9f};
  EXPECT_EQ(freq.Sample(close).token, 0);
  freq.Accept(0);  // 1.0 - 0.2 = 0.8 < 0.9
  EXPECT_EQ(freq.Sample(close).token, 1);
}

TEST(SamplerTest, RepetitionWindowForgetsOldTokens) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;
  p.repetition_penalty_window = 2;
  Sampler s = MakeSampler(p, 3);
  const std::vector<int32_t> prompt = {0, 1, 2};  // window keeps {1, 2}
  s.AcceptPrompt(prompt);
  EXPECT_EQ(s.Sample(std::vector<float>{2.0f, 1.9f, 1.8f}).token, 0);
  EXPECT_EQ(s.history().repetition_counts().count(0), 0u);
  s.Accept(1);  // window {2, 1}
  s.Accept(0);  // window {1, 0}: 0 is penalised again, 2 is not
  EXPECT_EQ(s.Sample(std::vector<float>{2.0f, 1.9f, 1.8f}).token, 2);
}

TEST(SamplerTest, AllBannedFallsBackToRawArgmax) {
  SamplingParams p;
  p.logit_bias = {{0, -100.0f}, {1, -100.0f}, {2, -100.0f}};
  p.logprobs = 1;
  p.seed = 1;
  Sampler s = MakeSampler(p, 3);
  const SampleResult r = s.Sample(std::vector<float>{0.0f, 3.0f, 1.0f});
  EXPECT_EQ(r.token, 1);
  EXPECT_TRUE(std::isfinite(r.logprob));

  SamplingParams g;
  g.temperature = 0.0f;
  Sampler nan = MakeSampler(g, 2);
  const float q = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(nan.Sample(std::vector<float>{q, q}).token, 0);
}

TEST(SamplerTest, TopKTwoOnlyYieldsTwoTokensInRatio) {
  SamplingParams p;
  p.top_k = 2;
  p.seed = 1234;
  Sampler s = MakeSampler(p, 4);
  const int kDraws = 20000;
  auto counts = Histogram(s, LogProbs({0.5, 0.3, 0.15, 0.05}), kDraws);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0] + counts[1], kDraws);
  // Expected 0.5 / 0.8 = 0.625; binomial sd ~0.0034, bound ~7 sd.
  EXPECT_NEAR(counts[0] / static_cast<double>(kDraws), 0.625, 0.025);
}

TEST(SamplerTest, TemperatureReshapesDistribution) {
  const std::vector<double> probs = {0.6, 0.3, 0.1};
  for (float t : {0.5f, 1.0f, 2.0f}) {
    SamplingParams p;
    p.temperature = t;
    p.seed = 99;
    Sampler s = MakeSampler(p, 3);
    const int kDraws = 20000;
    auto counts = Histogram(s, LogProbs(probs), kDraws);
    double z = 0.0;
    for (double q : probs) z += std::pow(q, 1.0 / t);
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(counts[i] / static_cast<double>(kDraws),
                  std::pow(probs[i], 1.0 / t) / z, 0.025)
          << "t=" << t << " token " << i;
    }
  }
}

TEST(SamplerTest, TopPAndMinPTruncate) {
  const std::vector<float> logits = LogProbs({0.5, 0.3, 0.15, 0.05});
  SamplingParams p;
  p.top_p = 0.7f;  // nucleus {0, 1}
  p.seed = 5;
  Sampler top_p = MakeSampler(p, 4);
  auto counts = Histogram(top_p, logits, 20000);
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_NEAR(counts[0] / 20000.0, 0.625, 0.025);

  SamplingParams m;
  m.min_p = 0.2f;  // drops 0.05 (< 0.1)
  m.seed = 6;
  Sampler min_p = MakeSampler(m, 4);
  counts = Histogram(min_p, logits, 20000);
  EXPECT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts.count(3), 0u);
  EXPECT_NEAR(counts[2] / 20000.0, 0.15 / 0.95, 0.025);
}

TEST(SamplerTest, BannedTokenIsNeverSampled) {
  SamplingParams p;
  p.temperature = 5.0f;
  p.logit_bias[0] = -100.0f;
  p.seed = 3;
  Sampler s = MakeSampler(p, 3);
  auto counts = Histogram(s, std::vector<float>{10.0f, 0.0f, 0.0f}, 5000);
  EXPECT_EQ(counts.count(0), 0u);
}

TEST(SamplerTest, SameSeedSameTokensDifferentSeedDiffers) {
  auto run = [](uint64_t seed) {
    SamplingParams p;
    p.temperature = 0.9f;
    p.top_k = 50;
    p.top_p = 0.95f;
    p.presence_penalty = 0.5f;
    p.repetition_penalty = 1.1f;
    p.seed = seed;
    Sampler s = MakeSampler(p, 1000);
    Rng logits_rng(2024);  // same logits sequence for every run
    std::vector<int32_t> tokens;
    for (int step = 0; step < 200; ++step) {
      const int32_t t = s.Sample(RandomLogits(logits_rng, 1000, 4.0f)).token;
      s.Accept(t);
      tokens.push_back(t);
    }
    return tokens;
  };
  EXPECT_EQ(run(11), run(11));
  EXPECT_NE(run(11), run(12));
}

// Pins the exact tokens of fixed seeds, so a change in the RNG, the weight
// computation or the draw (or a platform that computes them differently)
// shows up here. Update only for an intended change of sampling results.
std::vector<int32_t> GoldenRun(int32_t top_k) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = top_k;
  p.top_p = 0.95f;
  p.min_p = 0.02f;
  p.seed = 11;
  Sampler s = MakeSampler(p, 1000);
  Rng logits_rng(2024);
  std::vector<int32_t> tokens;
  for (int step = 0; step < 12; ++step) {
    tokens.push_back(s.Sample(RandomLogits(logits_rng, 1000, 4.0f)).token);
  }
  return tokens;
}

TEST(SamplerTest, GoldenTokensForFixedSeed) {
  EXPECT_EQ(GoldenRun(0), (std::vector<int32_t>{236, 72, 258, 461, 112, 327,
                                                542, 997, 616, 218, 44, 334}));
  EXPECT_EQ(GoldenRun(50), (std::vector<int32_t>{261, 83, 276, 478, 169, 268,
                                                 545, 996, 616, 212, 19, 311}));
}

TEST(SamplerTest, RandomSeedIsReportedAndReproducible) {
  SamplingParams p;
  Sampler first = MakeSampler(p, 100);
  p.seed = first.seed();
  Sampler second = MakeSampler(p, 100);
  EXPECT_EQ(second.seed(), first.seed());
  Rng logits_rng(1);
  for (int i = 0; i < 50; ++i) {
    const std::vector<float> logits = RandomLogits(logits_rng, 100, 3.0f);
    EXPECT_EQ(first.Sample(logits).token, second.Sample(logits).token);
  }
}

TEST(SamplerTest, RawLogprobsIgnoreTransforms) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, 0.0f};
  double z = 0.0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  SamplingParams p;
  p.temperature = 0.0f;
  p.logit_bias[2] = -100.0f;  // greedy now picks 1
  p.logprobs = 2;
  Sampler s = MakeSampler(p, 4);
  const SampleResult r = s.Sample(logits);
  EXPECT_EQ(r.token, 1);
  ASSERT_TRUE(r.has_logprobs);
  EXPECT_NEAR(r.logprob, 2.0 - std::log(z), 1e-6);
  EXPECT_EQ(r.rank, 2);
  ASSERT_EQ(r.top_logprobs.size(), 2u);
  EXPECT_EQ(r.top_logprobs[0].token, 2);  // the banned token, raw logprob
  EXPECT_NEAR(r.top_logprobs[0].logprob, 3.0 - std::log(z), 1e-6);
}

TEST(SamplerTest, ProcessedLogprobsIncludeBiasNotTemperature) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, 0.0f};
  SamplingParams p;
  p.temperature = 0.3f;
  p.top_k = 1;
  p.seed = 8;
  p.logit_bias = {{2, -100.0f}, {3, 2.0f}};  // processed: {1, 2, -inf, 2}
  p.logprobs = 4;
  p.logprobs_mode = LogprobsMode::kProcessed;
  Sampler s = MakeSampler(p, 4);
  const SampleResult r = s.Sample(logits);
  EXPECT_EQ(r.token, 1);  // top_k = 1 with a tie: lower id
  const double z = std::exp(1.0) + 2.0 * std::exp(2.0);
  EXPECT_NEAR(r.logprob, 2.0 - std::log(z), 1e-6);
  ASSERT_EQ(r.top_logprobs.size(), 4u);
  EXPECT_EQ(r.top_logprobs[0].token, 1);
  EXPECT_EQ(r.top_logprobs[1].token, 3);
  EXPECT_EQ(r.top_logprobs[2].token, 0);
  EXPECT_EQ(r.top_logprobs[3].token, 2);
  EXPECT_EQ(r.top_logprobs[3].logprob, -kInf);
  double mass = 0.0;
  for (const TokenLogprob& t : r.top_logprobs) mass += std::exp(t.logprob);
  EXPECT_NEAR(mass, 1.0, 1e-6);
}

TEST(SamplerTest, ChosenLogprobMatchesTopEntry) {
  SamplingParams p;
  p.seed = 77;
  p.logprobs = 20;
  Sampler s = MakeSampler(p, 500);
  Rng logits_rng(3);
  for (int i = 0; i < 100; ++i) {
    const SampleResult r = s.Sample(RandomLogits(logits_rng, 500, 5.0f));
    ASSERT_EQ(r.top_logprobs.size(), 20u);
    for (size_t k = 1; k < r.top_logprobs.size(); ++k) {
      EXPECT_GE(r.top_logprobs[k - 1].logprob, r.top_logprobs[k].logprob);
    }
    if (r.rank <= 20) {
      EXPECT_EQ(r.top_logprobs[r.rank - 1].token, r.token);
      EXPECT_EQ(r.top_logprobs[r.rank - 1].logprob, r.logprob);
    } else {
      EXPECT_LE(r.logprob, r.top_logprobs.back().logprob);
    }
  }
}

TEST(SamplerTest, LargeVocabSmoke) {
  constexpr int32_t kVocab = 262144;
  Rng logits_rng(262144);
  std::vector<float> logits = RandomLogits(logits_rng, kVocab, 8.0f);
  logits[123456] = 20.0f;  // a clear winner

  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.logprobs = 5;
  Sampler g = MakeSampler(greedy, kVocab);
  const SampleResult gr = g.Sample(logits);
  EXPECT_EQ(gr.token, 123456);
  EXPECT_EQ(gr.rank, 1);
  EXPECT_EQ(gr.top_logprobs[0].token, 123456);

  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.01f;
  p.repetition_penalty = 1.1f;
  p.logprobs = 20;
  p.logprobs_mode = LogprobsMode::kProcessed;
  p.seed = 1;
  Sampler s = MakeSampler(p, kVocab);
  logits[123456] = 7.0f;  // no clear winner: truncation matters
  for (int step = 0; step < 30; ++step) {
    const SampleResult r = s.Sample(logits);
    ASSERT_GE(r.token, 0);
    ASSERT_LT(r.token, kVocab);
    EXPECT_LE(r.rank, 40);  // inside top_k of the processed logits
    s.Accept(r.token);
  }

  SamplingParams plain;  // temperature 1, no truncation: whole vocabulary
  plain.seed = 2;
  Sampler u = MakeSampler(plain, kVocab);
  const std::vector<float> flat(kVocab, 0.0f);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 200; ++i) ++seen[u.Sample(flat).token];
  EXPECT_GT(seen.size(), 190u);  // ~uniform over 262144: few repeats
}

}  // namespace
}  // namespace weft::sampling
