// Log probabilities for the OpenAI/vLLM `logprobs` outputs: log_softmax of a
// logit vector at the chosen token, its rank, and the top-N alternatives,
// in a few vectorizable O(V) passes (max, sum of exp, rank) plus a cheap
// top-N scan (TopLogits).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace weft::sampling {

struct TokenLogprob {
  int32_t token = 0;      // token id
  float logprob = 0.0f;   // natural-log probability; may be -inf
};

struct LogprobSummary {
  float chosen_logprob = 0.0f;  // log_softmax(logits)[chosen]
  int32_t chosen_rank = 0;      // 1 = most likely; ties rank lower ids first
  std::vector<TokenLogprob> top;  // n entries (fewer if the vocab is
                                  // smaller), logprob descending, ties by id
};

// log_softmax over `logits` (NaN entries count as absent). The sum runs in
// double. REQUIRES: 0 <= chosen < logits.size(), n >= 0.
LogprobSummary ComputeLogprobs(std::span<const float> logits, int32_t chosen,
                               int32_t n);

}  // namespace weft::sampling
