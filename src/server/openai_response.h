// Plain structs -> OpenAI response JSON and SSE frames.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/backend.h"
#include "server/tool_calls.h"

namespace weft::server {

// Identity of one response, shared by all its chunks.
struct ResponseMeta {
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  bool chat = false;    // chat.completion vs text_completion
  int64_t created = 0;  // unix seconds
  std::string model;    // served model id
  std::string system_fingerprint;  // empty: omitted
};

// Everything generated for one choice (non-streamed response).
struct ChoiceResult {
  std::string text;                       // full text (with echo prefix)
  std::vector<PositionLogprobs> logprobs; // per generated token, if asked
  // Completions' text_offset of the first entry of `logprobs` (code
  // points): the echoed prompt's length, or 0 when the prompt's own tokens
  // lead the logprobs.
  size_t logprob_text_start = 0;
  size_t logprob_text_next = 0;  // streaming: text_offset of the next token
  std::optional<FinishReason> finish;     // set when done
  std::string stop_string;                // the stop string that ended it
  // Chat, when the output was parsed (tool_calls.h): `text` is the
  // content; reasoning_content and tool_calls (finish "stop" reads
  // "tool_calls" when there are calls).
  std::string reasoning;
  std::vector<ParsedToolCall> tool_calls;
};

// "data: <json>\n\n".
std::string SseData(const std::string& json);
inline constexpr char kSseDone[] = "data: [DONE]\n\n";

// Non-streamed bodies. `want_logprobs`: include the logprobs object.
std::string CompletionResponseJson(const ResponseMeta& meta,
                                   const std::vector<ChoiceResult>& choices,
                                   bool want_logprobs, const Usage& usage);
std::string ChatResponseJson(const ResponseMeta& meta,
                             const std::vector<ChoiceResult>& choices,
                             bool want_logprobs, const Usage& usage);

// One streamed chunk for one choice (JSON, not yet SSE-framed).
// `text_offset`: offset of this chunk's first token text within the choice
// (completions logprobs). `role`: chat's first chunk. `usage_null`: emit
// "usage": null (when stream_options.include_usage is set).
struct ChunkPiece {
  int32_t index = 0;                     // choice index
  std::string text;                      // new text
  std::vector<PositionLogprobs> logprobs;  // for the tokens in this chunk
  bool want_logprobs = false;            // emit a logprobs object (or null)
  size_t text_offset = 0;                // completions text_offset of the
                                         // first token (code points)
  bool role = false;                     // chat: delta.role = "assistant"
  std::optional<FinishReason> finish;    // final chunk of the choice
  bool usage_null = false;               // add "usage": null
  std::string reasoning;                 // chat: delta.reasoning_content
  // Chat: one delta.tool_calls entry: the call's start (id, type, name,
  // arguments "") when `tool_call_start`, else an arguments fragment.
  std::optional<ParsedToolCall> tool_call;
  int32_t tool_call_index = 0;
  bool tool_call_start = false;
  bool tool_calls_finish = false;        // finish "stop" reads "tool_calls"
  std::string stop_string;               // with finish: the matched stop string
};
std::string ChunkJson(const ResponseMeta& meta, const ChunkPiece& piece);
// The usage-only chunk: "choices": [] and "usage": {...}.
std::string UsageChunkJson(const ResponseMeta& meta, const Usage& usage);

// "stop", "length", "abort", "error" (the OpenAI/vLLM strings).
std::string FinishReasonString(FinishReason r);

}  // namespace weft::server
