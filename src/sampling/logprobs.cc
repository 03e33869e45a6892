#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sampling/fast_exp.h"
#include "sampling/transforms.h"
#include "util/check.h"

namespace weft::sampling {

LogprobSummary ComputeLogprobs(std::span<const float> logits, int32_t chosen,
                               int32_t n) {
  CHECK(chosen >= 0 && static_cast<size_t>(chosen) < logits.size()) << chosen;
  CHECK_GE(n, 0);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

  // Pass 1: the maximum (NaN skipped).
  const int32_t top_id = Argmax(logits);
  const float max = top_id >= 0 ? logits[top_id] : kNegInf;

  // Pass 2: sum of exp in blocks (the exp loop vectorizes; four double
  // accumulators in a fixed pattern keep the sum deterministic).
  double sum = 0.0;
  if (std::isfinite(max)) {
    constexpr size_t kBlock = 1024;
    float w[kBlock];
    double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
    for (size_t start = 0; start < logits.size(); start += kBlock) {
      const size_t len = std::min(kBlock, logits.size() - start);
      const float* l = logits.data() + start;
      for (size_t i = 0; i < len; ++i) w[i] = ExpApprox(l[i] - max);  // NaN->0
      for (size_t i = len; i < (len + 3) / 4 * 4; ++i) w[i] = 0.0f;
      for (size_t i = 0; i < len; i += 4) {
        a0 += w[i];
        a1 += w[i + 1];
        a2 += w[i + 2];
        a3 += w[i + 3];
      }
    }
    sum = (a0 + a1) + (a2 + a3);
  }

  // Pass 3: rank of the chosen token: larger logits, then equal ones with
  // lower ids (two counting loops that vectorize).
  const float chosen_value = logits[chosen];
  int64_t better = 0;
  for (float l : logits) better += l > chosen_value;
  for (int32_t i = 0; i < chosen; ++i) better += logits[i] == chosen_value;
  int64_t num_max = 0;  // how many entries equal max, for max = +inf
  if (std::isinf(max) && max > 0.0f) {
    for (float l : logits) num_max += l == max;
  }

  // Pass 4: the top n.
  const std::vector<TokenLogit> top_logits = TopLogits(logits, n);

  // log-sum-exp. Degenerate inputs: with +inf logits those share the mass;
  // with nothing above -inf every logprob is -inf (never NaN).
  const double lse = std::isfinite(max) ? max + std::log(sum) : 0.0;
  auto log_prob = [&](float l) -> float {
    if (std::isnan(l)) return kNegInf;  // a NaN logit has no mass
    if (std::isfinite(max)) return static_cast<float>(l - lse);
    if (max > 0.0f && l == max) {
      return static_cast<float>(-std::log(static_cast<double>(num_max)));
    }
    return kNegInf;
  };
  LogprobSummary out;
  out.chosen_logprob = log_prob(chosen_value);
  out.chosen_rank = static_cast<int32_t>(better + 1);
  out.top.reserve(top_logits.size());
  for (const TokenLogit& t : top_logits) {
    out.top.push_back({t.id, log_prob(t.logit)});
  }
  return out;
}

}  // namespace weft::sampling
