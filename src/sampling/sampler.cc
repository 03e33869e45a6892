#include "sampling/sampler.h"

#include "util/check.h"

namespace weft::sampling {

StatusOr<Sampler> Sampler::Create(const SamplingParams& params,
                                  int32_t vocab_size) {
  RETURN_IF_ERROR(params.Validate(vocab_size));
  return Sampler(params, vocab_size);
}

Sampler::Sampler(const SamplingParams& params, int32_t vocab_size)
    : params_(params),
      vocab_size_(vocab_size),
      seed_(params.seed.has_value() ? *params.seed : RandomSeed()),
      rng_(seed_),
      history_(params.repetition_penalty != 1.0f,
               params.repetition_penalty_window),
      needs_processing_(!params.logit_bias.empty() ||
                        params.repetition_penalty != 1.0f ||
                        params.presence_penalty != 0.0f ||
                        params.frequency_penalty != 0.0f) {
  const Status status = params_.Validate(vocab_size);
  CHECK(status.ok()) << status.ToString();
}

void Sampler::AcceptPrompt(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) {
    CHECK(t >= 0 && t < vocab_size_) << "prompt token " << t;
    history_.AddPrompt(t);
  }
}

void Sampler::Accept(int32_t token) {
  CHECK(token >= 0 && token < vocab_size_) << "token " << token;
  history_.AddOutput(token);
}

SampleResult Sampler::Sample(std::span<const float> logits) {
  CHECK_EQ(logits.size(), static_cast<size_t>(vocab_size_));
  std::span<const float> processed = logits;
  if (needs_processing_) {
    scratch_.assign(logits.begin(), logits.end());
    ApplyLogitBias(params_.logit_bias, scratch_);
    ApplyRepetitionPenalty(params_.repetition_penalty,
                           history_.repetition_counts(), scratch_);
    ApplyPresenceFrequencyPenalty(params_.presence_penalty,
                                  params_.frequency_penalty,
                                  history_.output_counts(), scratch_);
    processed = scratch_;
  }

  SampleResult result;
  if (params_.greedy()) {
    result.token = Argmax(processed);
  } else {
    // Always one draw per sampled token, so the RNG stream does not depend
    // on how many candidates survive.
    const double u = rng_.UniformDouble();
    // min_p and top_k both keep a prefix of the ranking, so they commute:
    // a small top_k goes first and skips exp over the whole vocabulary.
    if (params_.top_k > 0 && params_.top_k <= kSmallTopK &&
        params_.top_k < vocab_size_) {
      BuildTopKCandidates(processed, params_.temperature, params_.top_k,
                          &cands_);
      ApplyMinP(params_.min_p, &cands_);
    } else {
      BuildCandidates(processed, params_.temperature, &cands_);
      ApplyMinP(params_.min_p, &cands_);
      ApplyTopK(params_.top_k, &cands_);
    }
    ApplyTopP(params_.top_p, &cands_);
    result.token = SampleCandidates(cands_, u);
  }
  if (result.token < 0) result.token = Argmax(logits);  // all banned
  if (result.token < 0) result.token = 0;               // all NaN/-inf

  if (params_.logprobs.has_value()) {
    LogprobSummary summary = ComputeLogprobs(
        params_.logprobs_mode == LogprobsMode::kRaw ? logits : processed,
        result.token, *params_.logprobs);
    result.has_logprobs = true;
    result.logprob = summary.chosen_logprob;
    result.rank = summary.chosen_rank;
    result.top_logprobs = std::move(summary.top);
  }
  return result;
}

}  // namespace weft::sampling
