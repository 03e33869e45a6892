// POST /v1/messages, /v1/messages/count_tokens and /v1/responses: each
// body is translated into a chat completions body and run through the one
// generation path (routes_generate.cc); an ApiFormat writes the result.
#include "server/agent_apis.h"
#include "server/chat_output.h"
#include "server/openai_request.h"
#include "server/server_state.h"
#include "server/translate_json.h"

namespace weft::server {

void HandleMessages(ServerState& s, const std::shared_ptr<Exchange>& ex) {
  ApiResult<TranslatedRequest> t =
      TranslateAnthropicRequest(ex->request().body, false);
  if (!t.ok()) return SendError(s, *ex, t.error());
  RunGeneration(s, ex, /*chat=*/true, t.value().chat_json,
                MakeAnthropicFormat(std::move(t.value().stop_sequences)));
}

// The prompt the same request would run with, templated and tokenized:
// {"input_tokens": n}.
void HandleCountTokens(ServerState& s, Exchange& ex) {
  ApiResult<TranslatedRequest> t =
      TranslateAnthropicRequest(ex.request().body, true);
  if (!t.ok()) return SendError(s, ex, t.error());
  ParseLimits limits;
  ApiResult<OpenAiRequest> req = ParseChatRequest(t.value().chat_json, limits);
  if (!req.ok()) return SendError(s, ex, req.error());
  Backend& b = *s.backend;
  const ModelInfo info = b.model_info();
  ChatOutputPlan plan;
  ApiResult<std::string> text = RenderChatPrompt(b, info, &req.value(), &plan);
  if (!text.ok()) return SendError(s, ex, text.error());
  if (auto e = CheckPromptBytes(info, text.value().size(), "messages"))
    return SendError(s, ex, *e);
  StatusOr<std::vector<int32_t>> ids = TokenizeChatPrompt(b, text.value());
  if (!ids.ok()) return SendError(s, ex, FromStatus(ids.status(), "messages"));
  SendJson(s, ex, 200, DumpJson({{"input_tokens", ids->size()}}));
}

void HandleResponses(ServerState& s, const std::shared_ptr<Exchange>& ex) {
  ApiResult<TranslatedRequest> t =
      TranslateResponsesRequest(ex->request().body);
  if (!t.ok()) return SendError(s, *ex, t.error());
  RunGeneration(s, ex, /*chat=*/true, t.value().chat_json,
                MakeResponsesFormat());
}

}  // namespace weft::server
