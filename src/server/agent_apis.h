// The APIs agents speak, as thin translations onto chat completions:
// Anthropic Messages (POST /v1/messages, /v1/messages/count_tokens) and
// OpenAI Responses (POST /v1/responses). A request body is translated into
// a chat completions body (then parsed by ParseChatRequest like any other,
// so sampling, templates, tools, structured output and aborts share one
// path); the chat output is written back by an ApiFormat.
//
// Thread safety: pure functions; each ApiFormat is used by one call.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/api_format.h"

namespace weft::server {

// A translated request: the chat completions body and what the output
// side needs to know.
struct TranslatedRequest {
  std::string chat_json;                    // chat completions body
  bool stream = false;                      // the client asked for SSE
  std::vector<std::string> stop_sequences;  // the client's own stop strings
};

// Anthropic Messages body -> chat body. `count_tokens`: the
// /v1/messages/count_tokens body (no max_tokens).
ApiResult<TranslatedRequest> TranslateAnthropicRequest(std::string_view body,
                                                       bool count_tokens);
// Writes Anthropic's message / named SSE events.
std::unique_ptr<ApiFormat> MakeAnthropicFormat(
    std::vector<std::string> stop_sequences);

// OpenAI Responses body -> chat body (stateless: store and
// previous_response_id are refused).
ApiResult<TranslatedRequest> TranslateResponsesRequest(std::string_view body);
// Writes a Responses object / the Responses event stream.
std::unique_ptr<ApiFormat> MakeResponsesFormat();

}  // namespace weft::server
