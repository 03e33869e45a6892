// The real model the engine-with-ModelExecutor tests run on: stories260K,
// or Gemma 3 270M when the binary is compiled with WEFT_ENGINE_TEST_GEMMA
// (model_executor_test.cc and constrained_executor_test.cc share it).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/engine/model_harness.h"

namespace weft::engine::testing {

#ifdef WEFT_ENGINE_TEST_GEMMA
inline constexpr bool kGemma = true;
#else
inline constexpr bool kGemma = false;
#endif

// Token ids prompts are drawn from (plain vocabulary pieces).
inline constexpr TokenId kLo = kGemma ? 300 : 3;
inline constexpr TokenId kHi = kGemma ? 60000 : 500;

inline std::string ModelPath() {
  return kGemma ? std::string(WEFT_GEMMA_MODEL)
                : std::string(WEFT_SHARED_MODELS_DIR) + "/stories260K.gguf";
}

// The model, loaded once per process; null when the file is missing (the
// tests skip), a test failure when it does not load.
inline const model::Model* LoadedModel() {
  static const model::Model* m = []() -> const model::Model* {
    if (!FileExists(ModelPath())) return nullptr;
    auto r = model::Model::Load(ModelPath());
    if (!r.ok()) {
      ADD_FAILURE() << r.status().ToString();
      return nullptr;
    }
    return r->release();
  }();
  return m;
}

// A prompt the model tends to continue by copying: a random passage of
// `n` tokens, then its first half again.
inline std::vector<TokenId> EchoPrompt(uint64_t seed, int n) {
  std::vector<TokenId> p = RandomPrompt(seed, n, kLo, kHi);
  for (int i = 0; i < n / 2; ++i) p.push_back(p[static_cast<size_t>(i)]);
  return p;
}

// The speculation tests' greedy requests (ids 50..57): echo prompts, every
// fourth a random one, up to max_tokens - (i % 3) tokens each.
inline std::vector<Job> SpecGreedyJobs(int max_tokens) {
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) {
    std::vector<TokenId> p = i % 4 == 3 ? RandomPrompt(400 + i, 9 + i, kLo, kHi)
                                        : EchoPrompt(300 + i, 12 + 5 * i);
    jobs.push_back(GreedyJob(50 + i, std::move(p), max_tokens - (i % 3)));
  }
  return jobs;
}

}  // namespace weft::engine::testing
