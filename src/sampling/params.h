// SamplingParams: the per-request knobs of token selection (OpenAI / vLLM /
// llama.cpp names), plus Validate() that turns bad values into a clear error.
//
// Order in which the Sampler applies them (see sampler.h):
//   logit_bias -> repetition_penalty -> presence/frequency_penalty
//   -> [temperature == 0: argmax]
//   -> temperature -> min_p -> top_k -> top_p -> draw.
// This is vLLM's order. Log probabilities are reported for the model's raw
// logits by default (vLLM's "raw_logprobs"), see LogprobsMode.
//
// Thread safety: a plain value.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sampling/grammar_cache.h"
#include "util/status.h"

namespace weft::sampling {

// A structured-output constraint (OpenAI json_schema, vLLM/llama-server
// regex, choice and grammar), compiled once by whoever parses the request
// (CompileConstraint, grammar_cache.h): the engine never compiles.
struct StructuredOutput {
  // The form the request gave (for logs and errors).
  ConstraintKind kind = ConstraintKind::kJsonSchema;
  // The compiled grammar, immutable and shared by every request with the
  // same constraint. Null = no constraint.
  std::shared_ptr<const Grammar> grammar;
};

// Which distribution reported log probabilities come from.
enum class LogprobsMode {
  // log_softmax of the model's raw logits, before any transform (vLLM's
  // default "raw_logprobs"). Independent of every other sampling knob.
  kRaw,
  // log_softmax after logit_bias and the penalties, but before temperature
  // and top-k/top-p/min-p truncation. Banned tokens get -inf.
  kProcessed,
};

// Temperatures below this are treated as 0 (greedy), like vLLM; dividing by
// them would only overflow.
inline constexpr float kGreedyTemperature = 1e-5f;

// The most alternatives a request may ask for (OpenAI's top_logprobs limit).
inline constexpr int kMaxLogprobs = 20;

// A logit bias of exactly this value bans the token outright (logit = -inf),
// as the OpenAI API documents for -100.
inline constexpr float kBanBias = -100.0f;

struct SamplingParams {
  // Softmax temperature. 0 (or below kGreedyTemperature) = greedy argmax,
  // ties to the lowest token id. Must be finite and >= 0.
  float temperature = 1.0f;
  // Keep only the k most likely tokens. 0 or -1 = off; larger than the
  // vocabulary = off.
  int32_t top_k = 0;
  // Nucleus sampling: keep the smallest set of most likely tokens whose
  // probability sums to >= top_p. In (0, 1]; 1 = off.
  float top_p = 1.0f;
  // Drop tokens whose probability is below min_p * (probability of the most
  // likely token). In [0, 1]; 0 = off.
  float min_p = 0.0f;
  // HF / llama.cpp repetition penalty over the prompt and generated tokens:
  // positive logits are divided by it, negative ones multiplied. > 0; 1 = off.
  float repetition_penalty = 1.0f;
  // How many of the most recent (prompt + generated) tokens the repetition
  // penalty looks at. 0 = all of them. >= 0.
  int32_t repetition_penalty_window = 0;
  // OpenAI presence penalty: subtracted once from the logit of every token
  // that was generated at least once. In [-2, 2]; 0 = off.
  float presence_penalty = 0.0f;
  // OpenAI frequency penalty: subtracted from a token's logit once per time
  // it was generated. In [-2, 2]; 0 = off.
  float frequency_penalty = 0.0f;
  // token id -> value added to its logit before anything else. Values in
  // [-100, 100]; exactly -100 bans the token.
  std::map<int32_t, float> logit_bias;
  // RNG seed. Without one, the Sampler picks a random seed when it is
  // created (and reports it through Sampler::seed()).
  std::optional<uint64_t> seed;
  // Log probabilities: unset = none; N in [0, 20] = the chosen token's
  // logprob plus the N most likely alternatives (vLLM's `logprobs`).
  std::optional<int32_t> logprobs;
  // Distribution the log probabilities are taken from.
  LogprobsMode logprobs_mode = LogprobsMode::kRaw;
  // JSON mode (OpenAI's response_format json_object): only tokens that keep
  // the output a prefix of one JSON object may be sampled, and once it is
  // closed only one of json_end_tokens (json_constraint.h). Needs the
  // vocabulary's bytes where the Sampler is created.
  bool json_object = false;
  // With json_object or structured: the tokens that end generation (EOS,
  // end of turn), allowed only once the output is complete. Non-empty, each
  // in [0, vocab_size).
  std::vector<int32_t> json_end_tokens;
  // Structured output: only tokens that keep the output a prefix of a
  // sentence of structured.grammar may be sampled, end tokens only once it
  // is a whole sentence (grammar_constraint.h); when it can no longer
  // continue the request ends as "length" (SampleResult::exhausted). Not
  // with json_object. Needs the vocabulary's bytes, like JSON mode.
  StructuredOutput structured;

  // True when the request decodes greedily.
  bool greedy() const { return !(temperature >= kGreedyTemperature); }
  // True when the output is constrained (JSON mode or structured output).
  bool constrained() const { return json_object || structured.grammar != nullptr; }

  // InvalidArgument naming the field for any value out of its range, a
  // non-finite float, or a logit_bias token outside [0, vocab_size).
  Status Validate(int32_t vocab_size) const;

  // One line for logs: "temperature=0.7 top_k=40 ...".
  std::string DebugString() const;
};

}  // namespace weft::sampling
