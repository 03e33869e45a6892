// ApiFormat: how one generation's result is written for an API other than
// chat completions (Anthropic Messages, OpenAI Responses). The request was
// already translated to a chat-completions request; GenerationCall runs it
// as usual and hands this object the chat output (ChunkPiece when
// streaming, ChoiceResult when not), which it turns into its API's SSE
// events or body.
//
// Thread safety: one instance per call, used on the call's strand only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/openai_response.h"

namespace weft::server {

class ApiFormat {
 public:
  virtual ~ApiFormat() = default;
  // The response id's prefix ("msg", "resp").
  virtual const char* IdPrefix() const = 0;
  // Streaming: the events that open the stream (`prompt_tokens`: known
  // input length).
  virtual std::string StreamStart(const ResponseMeta& meta,
                                  int64_t prompt_tokens) = 0;
  // Streaming: the events for one piece of output (text, reasoning, a tool
  // call's start or argument fragment) or the end of the choice (finish).
  virtual std::string StreamPiece(const ChunkPiece& p) = 0;
  // Streaming: the closing events, after the last piece.
  virtual std::string StreamEnd(const Usage& usage) = 0;
  // Streaming: a failure after the stream began.
  virtual std::string StreamError(const ApiError& e) = 0;
  // Not streaming: the body, or an error (e.g. the request timed out).
  virtual ApiResult<std::string> Body(const ResponseMeta& meta,
                                      const ChoiceResult& c,
                                      const Usage& usage) = 0;
};

// "event: <name>\ndata: <json>\n\n".
std::string SseEvent(const std::string& name, const std::string& json);

}  // namespace weft::server
