// Sampler: picks the next token of one sequence from the model's logits.
//
//   auto sampler = Sampler::Create(params, vocab_size);   // validates
//   sampler->AcceptPrompt(prompt_tokens);                 // repetition penalty
//   loop: SampleResult r = sampler->Sample(logits);       // [vocab_size]
//         sampler->Accept(r.token);                       // caller decides
//
// Pipeline (vLLM's order): copy the logits only if a logit bias or penalty
// is active -> logit_bias -> repetition penalty (prompt + output, optional
// window) -> presence/frequency penalties (output) -> if greedy: argmax
// (ties to the lowest id; no copy, no RNG draw) -> else temperature ->
// min_p -> top_k -> top_p -> one uniform draw (53 bits) -> token.
//
// Log probabilities (when params.logprobs is set) follow vLLM's default
// "raw" semantics: log_softmax of the model's raw logits, untouched by bias,
// penalties, temperature or truncation, so they describe the model rather
// than the request. LogprobsMode::kProcessed instead reports the
// distribution after bias and penalties but before temperature/truncation.
// Values can be -inf (e.g. processed mode with a banned token); the server
// must map -inf to a finite number (OpenAI uses -9999.0) for JSON.
//
// Determinism: same seed + same params + same logits sequence + same
// Accept() calls -> same tokens, on any platform with IEEE floats (the RNG
// and the draw are written here; candidate order never depends on the
// standard library's sort).
//
// JSON mode (params.json_object): after bias and penalties, tokens the
// JsonConstraint refuses get -inf before temperature and truncation, as
// vLLM applies a grammar's bitmask; a greedy step first checks only the
// argmax, which is the masked argmax whenever it is allowed (not when
// processed logprobs, which see the mask, are asked for).
//
// Structured output (params.structured) works the same with a
// GrammarConstraint, except that it fails closed: when the grammar can no
// longer continue (and is not complete), or no allowed token is left, the
// result is `exhausted` with no token, and the request ends as "length";
// unconstrained output is never returned.
//
// Degenerate input never crashes: if bias/penalties leave no token above
// -inf, the argmax of the raw logits is returned (token 0 if the raw logits
// are all NaN/-inf).
//
// Thread safety: none; one Sampler per sequence, used by one thread at a
// time. Different Samplers are independent.
// Invariants: params_ passed Validate(vocab_size_); scratch buffers are only
// meaningful within one Sample() call.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sampling/history.h"
#include "sampling/grammar_constraint.h"
#include "sampling/json_constraint.h"
#include "sampling/logprobs.h"
#include "sampling/params.h"
#include "sampling/rng.h"
#include "sampling/transforms.h"
#include "util/status.h"

namespace weft::sampling {

struct SampleResult {
  int32_t token = -1;  // the chosen token id, in [0, vocab_size); -1 if exhausted
  // Structured output only: no token may come next (the grammar cannot
  // continue); token is -1 and the caller ends the request ("length").
  bool exhausted = false;
  // Filled only when params.logprobs is set:
  bool has_logprobs = false;
  float logprob = 0.0f;  // log probability of `token` (see LogprobsMode)
  int32_t rank = 0;      // 1-based rank of `token` in that distribution
  std::vector<TokenLogprob> top_logprobs;  // params.logprobs entries,
                                           // descending, ties by lower id
};

class Sampler {
 public:
  // Validates params against the vocabulary; picks a random seed if none.
  // vocab (the tokens' bytes, vocab_size of them) is needed for
  // params.json_object and params.structured: InvalidArgument without it.
  static StatusOr<Sampler> Create(
      const SamplingParams& params, int32_t vocab_size,
      std::shared_ptr<const VocabBytes> vocab = nullptr);

  // REQUIRES: params.Validate(vocab_size).ok() (CHECKed); vocab as Create.
  Sampler(const SamplingParams& params, int32_t vocab_size,
          std::shared_ptr<const VocabBytes> vocab = nullptr);

  // Records prompt tokens (they count for the repetition penalty only).
  // REQUIRES: every token in [0, vocab_size).
  void AcceptPrompt(std::span<const int32_t> tokens);
  // Records a generated token (repetition, presence and frequency
  // penalties; JSON mode's state). REQUIRES: token in [0, vocab_size).
  void Accept(int32_t token);

  // Chooses the next token. Does not record it: call Accept() with it
  // (unless the result is exhausted: then there is none).
  // REQUIRES: logits.size() == vocab_size.
  SampleResult Sample(std::span<const float> logits);

  // The seed in use: params.seed, or the random one picked at creation.
  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }
  const TokenHistory& history() const { return history_; }
  int32_t vocab_size() const { return vocab_size_; }
  // Structured output's constraint, else null (benchmarks compare its masks).
  GrammarConstraint* grammar() { return grammar_.get(); }

 private:
  SamplingParams params_;
  int32_t vocab_size_;
  uint64_t seed_;
  Rng rng_;
  TokenHistory history_;
  // JSON mode's or structured output's verdict on token t / its mask.
  bool ConstraintAllows(int32_t t) const;
  std::span<const uint64_t> ConstraintMask();
  // Masks `processed` (copying into scratch_ first if needed) unless a
  // greedy step's argmax is allowed anyway.
  void ApplyConstraint(std::span<const float> logits,
                       std::span<const float>* processed);

  bool needs_processing_;  // any logit bias or penalty is active
  std::vector<float> scratch_;      // [vocab_size] processed logits
  std::vector<Candidate> cands_;    // [<= vocab_size] sampling candidates
  std::unique_ptr<JsonConstraint> json_;  // JSON mode, else null
  std::unique_ptr<GrammarConstraint> grammar_;  // structured output, else null
};

}  // namespace weft::sampling
