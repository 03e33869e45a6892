#include "sampling/params.h"

#include <cmath>

#include "util/strings.h"

namespace weft::sampling {
namespace {

Status RangeError(const char* field, double value, const char* range) {
  return InvalidArgumentError(
      StrFormat("%s must be %s, got %g", field, range, value));
}

}  // namespace

Status SamplingParams::Validate(int32_t vocab_size) const {
  if (vocab_size <= 0) {
    return InvalidArgumentError(
        StrFormat("vocab_size must be positive, got %d", vocab_size));
  }
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    return RangeError("temperature", temperature, "finite and >= 0");
  }
  if (top_k < -1) {
    return RangeError("top_k", top_k, ">= -1 (0 or -1 disables it)");
  }
  if (!std::isfinite(top_p) || top_p <= 0.0f || top_p > 1.0f) {
    return RangeError("top_p", top_p, "in (0, 1]");
  }
  if (!std::isfinite(min_p) || min_p < 0.0f || min_p > 1.0f) {
    return RangeError("min_p", min_p, "in [0, 1]");
  }
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0.0f) {
    return RangeError("repetition_penalty", repetition_penalty,
                      "finite and > 0");
  }
  if (repetition_penalty_window < 0) {
    return RangeError("repetition_penalty_window", repetition_penalty_window,
                      ">= 0 (0 = whole history)");
  }
  if (!std::isfinite(presence_penalty) || presence_penalty < -2.0f ||
      presence_penalty > 2.0f) {
    return RangeError("presence_penalty", presence_penalty, "in [-2, 2]");
  }
  if (!std::isfinite(frequency_penalty) || frequency_penalty < -2.0f ||
      frequency_penalty > 2.0f) {
    return RangeError("frequency_penalty", frequency_penalty, "in [-2, 2]");
  }
  if (logprobs.has_value() && (*logprobs < 0 || *logprobs > kMaxLogprobs)) {
    return RangeError("logprobs", *logprobs, "in [0, 20]");
  }
  if (json_object && json_end_tokens.empty()) {
    return InvalidArgumentError(
        "JSON mode needs an end-of-generation token (not with ignore_eos)");
  }
  if (structured.grammar != nullptr && json_object) {
    return InvalidArgumentError(
        "JSON mode and a structured-output constraint cannot be combined");
  }
  if (structured.grammar != nullptr && json_end_tokens.empty()) {
    return InvalidArgumentError(
        "structured output needs an end-of-generation token (not with "
        "ignore_eos)");
  }
  for (int32_t token : json_end_tokens) {
    if (token < 0 || token >= vocab_size) {
      return InvalidArgumentError(
          StrFormat("JSON end token id %d is outside the vocabulary [0, %d)",
                    token, vocab_size));
    }
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= vocab_size) {
      return InvalidArgumentError(
          StrFormat("logit_bias token id %d is outside the vocabulary [0, %d)",
                    token, vocab_size));
    }
    if (!std::isfinite(bias) || bias < -100.0f || bias > 100.0f) {
      return InvalidArgumentError(StrFormat(
          "logit_bias value for token %d must be in [-100, 100], got %g",
          token, bias));
    }
  }
  return OkStatus();
}

std::string SamplingParams::DebugString() const {
  std::string s = StrFormat(
      "temperature=%g top_k=%d top_p=%g min_p=%g repetition_penalty=%g "
      "repetition_penalty_window=%d presence_penalty=%g frequency_penalty=%g "
      "logit_bias=%zu",
      temperature, top_k, top_p, min_p, repetition_penalty,
      repetition_penalty_window, presence_penalty, frequency_penalty,
      logit_bias.size());
  s += seed.has_value()
           ? StrFormat(" seed=%llu", static_cast<unsigned long long>(*seed))
           : std::string(" seed=random");
  s += logprobs.has_value() ? StrFormat(" logprobs=%d", *logprobs)
                            : std::string(" logprobs=none");
  s += logprobs_mode == LogprobsMode::kRaw ? " logprobs_mode=raw"
                                           : " logprobs_mode=processed";
  if (json_object) s += " json_object";
  if (structured.grammar != nullptr) {
    s += StrFormat(" structured=%s", ConstraintKindName(structured.kind));
  }
  return s;
}

}  // namespace weft::sampling
