// libFuzzer target: request body bytes -> JSON parse -> OpenAI request
// validation (src/server/openai_request.h), for every body-taking route.
//
// Input layout: byte 0 is a selector, the rest is the HTTP body.
//   bits 0-1  route: 0 /v1/completions, 1 /v1/chat/completions,
//             2 /tokenize, 3 /detokenize
//   bits 2-3  vocabulary size in ParseLimits: unknown, 1, 32000, 262144
//   bits 4-5  ParseLimits::max_n: 1, 4, 16, 128
//
// Checked properties (a failed CHECK aborts = a finding):
//   * parsing never crashes, throws, or overflows the stack;
//   * a rejection is a 400 with a non-empty one-line message, a non-empty
//     `param` when one is set, and ToJson() is valid JSON of the OpenAI
//     error shape;
//   * an accepted request satisfies every documented range (n, sampling
//     knobs, token ids below the vocabulary, stop strings, logprobs, ...),
//     so nothing downstream sees an out-of-range value;
//   * parsing is deterministic (a second parse gives the same verdict).
//
// The same entry point (weft::fuzz::ServerFuzzOne) is replayed over the
// committed corpus by tests/reliability/fuzz_replay_test.cc.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "util/check.h"

namespace weft::fuzz {

namespace {

using server::ApiError;
using server::ChatTemplateRequest;
using server::OpenAiRequest;
using server::ParseLimits;
using server::kMaxLogitBiasEntries;
using server::kMaxMessages;
using server::kMaxPrompts;
using server::kMaxStopChars;
using server::kMaxStopStrings;

constexpr int64_t kVocabSizes[4] = {-1, 1, 32000, 262144};
constexpr int kMaxN[4] = {1, 4, 16, 128};

void CheckError(const ApiError& e) {
  CHECK_EQ(e.http_status, 400);
  CHECK(!e.message.empty());
  CHECK(e.message.find('\n') == std::string::npos) << e.message;
  CHECK(e.type == "invalid_request_error") << e.type;
  if (e.param) CHECK(!e.param->empty());
  nlohmann::json j = nlohmann::json::parse(e.ToJson(), nullptr, false);
  CHECK(!j.is_discarded()) << e.ToJson();
  CHECK(j.is_object() && j.contains("error") && j["error"].is_object());
  CHECK(j["error"]["message"].is_string());
}

void CheckIds(const std::vector<int32_t>& ids, const ParseLimits& limits) {
  for (int32_t id : ids) {
    CHECK_GE(id, 0);
    if (limits.vocab_size) CHECK_LT(id, *limits.vocab_size);
  }
}

bool InRange(float x, double lo, double hi) {
  return std::isfinite(x) && x >= static_cast<float>(lo) &&
         x <= static_cast<float>(hi);
}

void CheckChat(const ChatTemplateRequest& c) {
  static const char* kRoles[] = {"system", "user",      "assistant",
                                 "tool",   "developer", "function"};
  CHECK(!c.messages.empty());
  CHECK_LE(c.messages.size(), static_cast<size_t>(kMaxMessages));
  for (const auto& m : c.messages) {
    bool known = false;
    for (const char* r : kRoles) known |= m.role == r;
    CHECK(known) << m.role;
    CHECK(m.content || !m.tool_calls.empty() || m.role == "assistant");
    for (const auto& t : m.tool_calls) CHECK(!t.type.empty());
  }
  if (!c.tools_json.empty()) {
    auto t = nlohmann::json::parse(c.tools_json, nullptr, false);
    CHECK(!t.is_discarded() && t.is_array());
  }
  for (const auto& [k, v] : c.kwargs_json) {
    CHECK(!nlohmann::json::parse(v, nullptr, false).is_discarded()) << k;
  }
}

void CheckRequest(const OpenAiRequest& r, const ParseLimits& limits) {
  CHECK(r.n >= 1 && r.n <= limits.max_n) << r.n;
  if (r.max_tokens) CHECK_GE(*r.max_tokens, 1);
  const auto& s = r.sampling;
  CHECK(InRange(s.temperature, 0, 2)) << s.temperature;
  CHECK(InRange(s.top_p, 0, 1) && s.top_p > 0) << s.top_p;
  CHECK_GE(s.top_k, -1);
  CHECK(InRange(s.min_p, 0, 1)) << s.min_p;
  CHECK(InRange(s.presence_penalty, -2, 2));
  CHECK(InRange(s.frequency_penalty, -2, 2));
  CHECK(InRange(s.repetition_penalty, 0, 10) && s.repetition_penalty > 0);
  CHECK(s.logprobs >= -1 && s.logprobs <= 20) << s.logprobs;
  CHECK_LE(s.logit_bias.size(), static_cast<size_t>(kMaxLogitBiasEntries));
  for (const auto& [id, bias] : s.logit_bias) {
    CHECK_GE(id, 0);
    if (limits.vocab_size) CHECK_LT(id, *limits.vocab_size);
    CHECK(InRange(bias, -100, 100)) << bias;
  }
  CHECK_LE(r.stop.size(), static_cast<size_t>(kMaxStopStrings));
  for (const auto& st : r.stop) {
    CHECK(!st.empty());
    CHECK_LE(st.size(), 4u * kMaxStopChars);  // UTF-8: <= 4 bytes a char
  }
  const size_t prompts = r.chat ? 1 : r.prompts.size();
  CHECK_LE(prompts * r.n, static_cast<size_t>(limits.max_sequences));
  CheckIds(r.stop_token_ids, limits);
  if (r.include_usage) CHECK(r.stream);
  CHECK(r.priority >= -1000000 && r.priority <= 1000000);
  if (r.chat) {
    CHECK(r.prompts.empty());
    CHECK(!r.echo);
    CheckChat(r.chat_request);
    if (!r.chat_logprobs) CHECK_EQ(s.logprobs, -1);
  } else {
    CHECK(!r.prompts.empty() && r.prompts.size() <= kMaxPrompts) << r.prompts.size();
    for (const auto& p : r.prompts) {
      if (p.text) {
        CHECK(p.ids.empty());
      } else {
        CHECK(!p.ids.empty());
        CheckIds(p.ids, limits);
      }
    }
  }
}

// The verdict of one parse, for the determinism check.
template <typename T>
std::string Verdict(const server::ApiResult<T>& r) {
  return r.ok() ? std::string("ok") : r.error().ToJson();
}

}  // namespace

int ServerFuzzOne(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  ParseLimits limits;
  limits.max_n = kMaxN[(sel >> 4) & 3];
  if (int64_t v = kVocabSizes[(sel >> 2) & 3]; v > 0) limits.vocab_size = v;

  switch (sel & 3) {
    case 0:
    case 1: {
      const bool chat = (sel & 3) == 1;
      auto r = chat ? server::ParseChatRequest(body, limits)
                    : server::ParseCompletionRequest(body, limits);
      if (r.ok()) {
        CHECK_EQ(r.value().chat, chat);
        CheckRequest(r.value(), limits);
      } else {
        CheckError(r.error());
      }
      auto again = chat ? server::ParseChatRequest(body, limits)
                        : server::ParseCompletionRequest(body, limits);
      CHECK(Verdict(r) == Verdict(again));
      break;
    }
    case 2: {
      auto r = server::ParseTokenizeRequest(body);
      if (r.ok()) {
        CHECK(r.value().text.has_value() != r.value().chat.has_value());
        if (r.value().chat) CheckChat(*r.value().chat);
      } else {
        CheckError(r.error());
      }
      break;
    }
    case 3: {
      auto r = server::ParseDetokenizeRequest(body, limits);
      if (r.ok()) {
        CheckIds(r.value(), limits);
      } else {
        CheckError(r.error());
      }
      break;
    }
  }
  return 0;
}

}  // namespace weft::fuzz

#ifndef WEFT_FUZZ_REPLAY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return weft::fuzz::ServerFuzzOne(data, size);
}
#endif
