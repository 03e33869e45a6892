#include "sampling/sampler.h"

#include <limits>

#include "util/check.h"

namespace weft::sampling {

// -inf for every token the mask refuses.
static void ApplyMask(std::span<const uint64_t> mask, std::span<float> logits) {
  for (size_t t = 0; t < logits.size(); ++t) {
    if (!MaskHas(mask, t)) logits[t] = -std::numeric_limits<float>::infinity();
  }
}

// The allowed token with the highest raw logit (NaN never wins), else the
// lowest allowed id, else -1.
static int32_t BestAllowed(std::span<const uint64_t> mask,
                           std::span<const float> logits) {
  int32_t best = -1;
  for (size_t t = 0; t < logits.size(); ++t) {
    if (!MaskHas(mask, t)) continue;
    if (best < 0 || logits[t] > logits[best]) best = static_cast<int32_t>(t);
  }
  return best;
}

StatusOr<Sampler> Sampler::Create(const SamplingParams& params,
                                  int32_t vocab_size,
                                  std::shared_ptr<const VocabBytes> vocab) {
  RETURN_IF_ERROR(params.Validate(vocab_size));
  if (params.constrained() && vocab == nullptr) {
    return InvalidArgumentError(
        "constrained output (JSON mode, structured output) is not available "
        "here (no vocabulary bytes)");
  }
  if (vocab != nullptr && vocab->size() != vocab_size) {
    return InvalidArgumentError("the vocabulary bytes do not match the model");
  }
  return Sampler(params, vocab_size, std::move(vocab));
}

Sampler::Sampler(const SamplingParams& params, int32_t vocab_size,
                 std::shared_ptr<const VocabBytes> vocab)
    : params_(params),
      vocab_size_(vocab_size),
      seed_(params.seed.has_value() ? *params.seed : RandomSeed()),
      rng_(seed_),
      history_(params.repetition_penalty != 1.0f,
               params.repetition_penalty_window),
      needs_processing_(
          !params.logit_bias.empty() || params.repetition_penalty != 1.0f ||
          params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f) {
  const Status status = params_.Validate(vocab_size);
  CHECK(status.ok()) << status.ToString();
  if (params_.json_object) {
    CHECK(vocab != nullptr && vocab->size() == vocab_size);
    json_ = std::make_unique<JsonConstraint>(std::move(vocab),
                                             params_.json_end_tokens);
  } else if (params_.structured.grammar != nullptr) {
    CHECK(vocab != nullptr && vocab->size() == vocab_size);
    grammar_ = std::make_unique<GrammarConstraint>(
        params_.structured.grammar, std::move(vocab), params_.json_end_tokens);
  }
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
  if (json_) json_->Accept(token);
  if (grammar_) grammar_->Accept(token);
}

bool Sampler::ConstraintAllows(int32_t t) const {
  return json_ ? json_->Allows(t) : grammar_->Allows(t);
}

std::span<const uint64_t> Sampler::ConstraintMask() {
  return json_ ? json_->AllowedMask() : grammar_->AllowedMask();
}

void Sampler::ApplyConstraint(std::span<const float> logits,
                              std::span<const float>* processed) {
  // The argmax shortcut only when nothing else reads the masked logits
  // (processed logprobs describe the masked distribution).
  const bool shortcut = params_.greedy() &&
                        !(params_.logprobs.has_value() &&
                          params_.logprobs_mode == LogprobsMode::kProcessed);
  const int32_t best = shortcut ? Argmax(*processed) : -1;
  if (best >= 0 && ConstraintAllows(best)) return;
  if (!needs_processing_) scratch_.assign(logits.begin(), logits.end());
  ApplyMask(ConstraintMask(), scratch_);
  *processed = scratch_;
}

SampleResult Sampler::Sample(std::span<const float> logits) {
  CHECK_EQ(logits.size(), static_cast<size_t>(vocab_size_));
  SampleResult result;
  if (grammar_ && grammar_->finished() && !grammar_->complete()) {
    result.exhausted = true;  // stuck (a cap, or a broken constraint)
    return result;
  }
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
  if (json_ || grammar_) ApplyConstraint(logits, &processed);

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
  if (result.token < 0 && (json_ || grammar_)) {
    result.token = BestAllowed(ConstraintMask(), logits);
  }
  if (result.token < 0 && grammar_) {
    result.exhausted = true;  // no allowed token: fail closed
    return result;
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
