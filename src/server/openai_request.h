// OpenAI request JSON -> plain structs, with validation. Every rejected
// field yields a 400 ApiError whose `param` names it.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/backend.h"
#include "server/tool_request.h"

namespace weft::server {

// Fixed request limits (docs/reliability.md; docs/openapi.yaml states the
// same numbers and tests/python/test_openapi.py compares them).
inline constexpr int kMaxStopStrings = 16;          // `stop` list length
inline constexpr int kMaxStopChars = 1024;          // code points in one stop string
inline constexpr int kMaxLogitBiasEntries = 1024;   // keys in `logit_bias`
inline constexpr int kMaxMessages = 4096;           // chat `messages`
inline constexpr int kMaxPrompts = 256;             // completions prompts

// Bounds that depend on the server or model.
struct ParseLimits {
  int max_n = 16;                    // largest `n`
  int max_sequences = 256;           // prompts x n per request
  std::optional<int64_t> vocab_size; // token ids must be < this, if known
};

// One completions prompt: text, or token ids.
struct PromptInput {
  std::optional<std::string> text;  // set for text prompts
  std::vector<int32_t> ids;         // set for token prompts
};

// A parsed /v1/completions or /v1/chat/completions body.
struct OpenAiRequest {
  bool chat = false;                   // which endpoint
  std::string model;                   // as sent (may be empty)
  std::vector<PromptInput> prompts;    // completions: >= 1 prompt
  ChatTemplateRequest chat_request;    // chat: messages, tools, kwargs
  ToolRequest tools;                   // chat: tools, tool_choice
  std::optional<int32_t> max_tokens;   // unset: endpoint default
  SamplingFields sampling;             // sampling knobs (logprobs inside)
  int32_t n = 1;                       // choices per prompt
  std::vector<std::string> stop;       // stop strings
  std::vector<int32_t> stop_token_ids; // extension (vLLM)
  bool stream = false;                 // SSE
  bool include_usage = false;          // stream_options.include_usage
  bool echo = false;                   // completions: prepend prompt
  bool ignore_eos = false;             // extension (vLLM)
  bool chat_logprobs = false;          // chat: `logprobs` flag
  std::string user;                    // opaque
  int32_t priority = 0;                // extension (vLLM)
  // Extension: false opts out of the server's speculative decoding, true
  // asks for it (when the server has a proposer); unset = the server's.
  std::optional<bool> speculative;
};

ApiResult<OpenAiRequest> ParseCompletionRequest(std::string_view body,
                                                const ParseLimits& limits);
ApiResult<OpenAiRequest> ParseChatRequest(std::string_view body,
                                          const ParseLimits& limits);

// POST /tokenize: {"prompt"|"content": str, "add_special"|
// "add_special_tokens": bool} or {"messages": [...],
// "add_generation_prompt": bool}.
struct TokenizeRequest {
  std::optional<std::string> text;            // text to tokenize
  std::optional<ChatTemplateRequest> chat;    // or messages to template
  bool add_special = true;                    // add BOS etc. (text only)
};
ApiResult<TokenizeRequest> ParseTokenizeRequest(std::string_view body);

// POST /detokenize: {"tokens": [ids]}.
ApiResult<std::vector<int32_t>> ParseDetokenizeRequest(
    std::string_view body, const ParseLimits& limits);

}  // namespace weft::server
