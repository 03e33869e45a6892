#include "sampling/params.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace weft::sampling {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int32_t kVocab = 100;

// Expects Validate to fail with InvalidArgument naming `field`.
void ExpectInvalid(const SamplingParams& p, const std::string& field) {
  const Status s = p.Validate(kVocab);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << field;
  EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
}

TEST(SamplingParamsTest, DefaultsAreValid) {
  SamplingParams p;
  EXPECT_TRUE(p.Validate(kVocab).ok());
  EXPECT_FALSE(p.greedy());
  EXPECT_FALSE(p.seed.has_value());
  EXPECT_FALSE(p.logprobs.has_value());
}

TEST(SamplingParamsTest, BoundaryValuesAreValid) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.top_k = -1;
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.repetition_penalty = 1e-3f;
  p.repetition_penalty_window = 0;
  p.presence_penalty = -2.0f;
  p.frequency_penalty = 2.0f;
  p.logprobs = 20;
  p.logit_bias = {{0, -100.0f}, {kVocab - 1, 100.0f}};
  EXPECT_TRUE(p.Validate(kVocab).ok()) << p.Validate(kVocab).ToString();
  EXPECT_TRUE(p.greedy());
  p.logprobs = 0;
  p.min_p = 0.0f;
  p.top_k = 1000;  // more than the vocabulary: off, not an error
  EXPECT_TRUE(p.Validate(kVocab).ok());
}

TEST(SamplingParamsTest, TinyTemperatureIsGreedy) {
  SamplingParams p;
  p.temperature = 1e-6f;
  EXPECT_TRUE(p.greedy());
  p.temperature = 0.01f;
  EXPECT_FALSE(p.greedy());
}

TEST(SamplingParamsTest, RejectsTemperature) {
  for (float t : {-0.1f, kNaN, kInf, -kInf}) {
    SamplingParams p;
    p.temperature = t;
    ExpectInvalid(p, "temperature");
  }
}

TEST(SamplingParamsTest, RejectsTopP) {
  for (float v : {0.0f, -0.5f, 1.0001f, kNaN, kInf}) {
    SamplingParams p;
    p.top_p = v;
    ExpectInvalid(p, "top_p");
  }
}

TEST(SamplingParamsTest, RejectsMinP) {
  for (float v : {-0.01f, 1.01f, kNaN}) {
    SamplingParams p;
    p.min_p = v;
    ExpectInvalid(p, "min_p");
  }
}

TEST(SamplingParamsTest, RejectsTopK) {
  SamplingParams p;
  p.top_k = -2;
  ExpectInvalid(p, "top_k");
}

TEST(SamplingParamsTest, RejectsRepetitionPenalty) {
  for (float v : {0.0f, -1.0f, kNaN, kInf}) {
    SamplingParams p;
    p.repetition_penalty = v;
    ExpectInvalid(p, "repetition_penalty");
  }
  SamplingParams p;
  p.repetition_penalty_window = -1;
  ExpectInvalid(p, "repetition_penalty_window");
}

TEST(SamplingParamsTest, RejectsPresenceAndFrequency) {
  for (float v : {2.01f, -2.01f, kNaN, kInf}) {
    SamplingParams p;
    p.presence_penalty = v;
    ExpectInvalid(p, "presence_penalty");
    SamplingParams q;
    q.frequency_penalty = v;
    ExpectInvalid(q, "frequency_penalty");
  }
}

TEST(SamplingParamsTest, RejectsLogprobs) {
  for (int v : {-1, 21, 1000}) {
    SamplingParams p;
    p.logprobs = v;
    ExpectInvalid(p, "logprobs");
  }
}

TEST(SamplingParamsTest, RejectsLogitBias) {
  for (int32_t id : {-1, kVocab, kVocab + 5}) {
    SamplingParams p;
    p.logit_bias[id] = 1.0f;
    ExpectInvalid(p, "logit_bias");
  }
  for (float v : {100.5f, -101.0f, kNaN, kInf}) {
    SamplingParams p;
    p.logit_bias[3] = v;
    ExpectInvalid(p, "logit_bias");
  }
}

TEST(SamplingParamsTest, RejectsEmptyVocab) {
  SamplingParams p;
  EXPECT_FALSE(p.Validate(0).ok());
}

TEST(SamplingParamsTest, DebugStringNamesFields) {
  SamplingParams p;
  p.seed = 7;
  p.logprobs = 3;
  const std::string s = p.DebugString();
  EXPECT_NE(s.find("temperature=1"), std::string::npos) << s;
  EXPECT_NE(s.find("seed=7"), std::string::npos) << s;
  EXPECT_NE(s.find("logprobs=3"), std::string::npos) << s;
}

}  // namespace
}  // namespace weft::sampling
